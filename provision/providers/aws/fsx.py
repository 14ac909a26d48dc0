"""FSx for Lustre: created beside the nodes, waited for after they launch, deleted before the network."""
from __future__ import annotations

import uuid

from provision.adaptors.aws import Aws
from provision.errors import CloudError, CloudNotFoundError
from provision.providers.aws import tags
from provision.providers.aws.ledger import Ledger
from provision.records import Progress
from provision.spec.model import ClusterSpec

LUSTRE_VERSION = "2.15"  # the client version current Ubuntu and Amazon Linux kernels build


def ensure(aws: Aws, ledger: Ledger, spec: ClusterSpec, subnet: str, security_group: str,
           progress: Progress) -> str | None:
    """Start creating the file system (it takes minutes; `wait` comes after the instances)."""
    config = spec.provider.fsx_lustre
    if config is None:
        return None
    lustre: dict = {"DeploymentType": config.deployment_type}
    if config.deployment_type == "PERSISTENT_2":
        lustre["PerUnitStorageThroughput"] = config.per_unit_storage_throughput

    def create() -> str:
        return aws.fsx.create_file_system(
            ClientRequestToken=f"{spec.name}-{uuid.uuid4().hex[:16]}", FileSystemType="LUSTRE",
            FileSystemTypeVersion=LUSTRE_VERSION, StorageCapacity=config.storage_capacity_gib, StorageType="SSD",
            SubnetIds=[subnet], SecurityGroupIds=[security_group], LustreConfiguration=lustre,
            Tags=tags.as_list(ledger.owner.tags("fsx")))["FileSystem"]["FileSystemId"]

    fs_id, made = ledger.ensure("fsx", "fsx", create, lambda: _find(aws, ledger.owner))
    if made:
        progress(f"creating FSx for Lustre {fs_id} ({config.storage_capacity_gib} GiB {config.deployment_type})")
    return fs_id


def wait(aws: Aws, fs_id: str, progress: Progress) -> dict[str, str]:
    """Wait until the file system is AVAILABLE; return the mount facts (dns name, mount name)."""
    policy = aws.policy
    for attempt in range(policy.fsx_wait_attempts):
        systems = aws.fsx.describe_file_systems(FileSystemIds=[fs_id])["FileSystems"]
        if not systems:
            raise CloudNotFoundError(f"FSx file system {fs_id} is recorded but does not exist",
                                     hint="run `provision down`, then `provision up` to make a new one")
        system = systems[0]
        lifecycle = system.get("Lifecycle")
        if lifecycle == "AVAILABLE" or lifecycle is None:
            facts = {"fsx_dns_name": system.get("DNSName", "")}
            mount = (system.get("LustreConfiguration") or {}).get("MountName")
            if mount:
                facts["fsx_mount_name"] = mount
            if lifecycle is None:  # an emulator that does not model the lifecycle (moto)
                progress(f"warning: the endpoint reports no lifecycle for {fs_id}; its availability is unconfirmed")
            return facts
        if lifecycle in ("FAILED", "MISCONFIGURED", "DELETING"):
            reason = (system.get("FailureDetails") or {}).get("Message", "no reason given")
            raise CloudError(f"FSx file system {fs_id} is {lifecycle}: {reason}",
                             hint="run `provision down` to remove it, fix the cause, and run `provision up` again")
        if attempt == 0:
            progress(f"waiting for FSx {fs_id} to become available (usually 5-10 minutes)")
        aws.sleep(policy.fsx_wait_delay)
    raise CloudError(f"FSx file system {fs_id} was not available after "
                     f"{policy.fsx_wait_attempts * policy.fsx_wait_delay:.0f} s",
                     hint="it is recorded; run `provision up` again to keep waiting")


def delete(aws: Aws, fs_id: str) -> None:
    """Delete the file system and wait until it is gone (its interfaces block the subnet until then)."""
    try:
        aws.fsx.delete_file_system(FileSystemId=fs_id)
    except CloudNotFoundError:
        return
    policy = aws.policy
    for _ in range(policy.fsx_wait_attempts):
        try:
            if not aws.fsx.describe_file_systems(FileSystemIds=[fs_id])["FileSystems"]:
                return
        except CloudNotFoundError:
            return
        aws.sleep(policy.fsx_wait_delay)
    raise CloudError(f"FSx file system {fs_id} is still being deleted", hint="run `provision down` again later")


def tagged(aws: Aws, owner: tags.Owner) -> list[dict]:
    """Every FSx file system carrying the cluster's tags (FSx describes have no tag filter)."""
    return [fs for fs in aws.pages("fsx", "describe_file_systems", "FileSystems")
            if owner.owns(tags.as_dict(fs.get("Tags")))]


def _find(aws: Aws, owner: tags.Owner) -> str | None:
    """The cluster's file system, if the last run made it."""
    systems = [fs for fs in tagged(aws, owner) if fs.get("Lifecycle") != "DELETING"]
    return systems[0]["FileSystemId"] if systems else None
