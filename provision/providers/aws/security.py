"""The security group (all traffic inside the group, as EFA needs; SSH from one CIDR) and the key pair."""
from __future__ import annotations

import hashlib
from pathlib import Path

from provision.adaptors.aws import AlreadyExistsError, Aws
from provision.errors import CloudError, CloudNotFoundError
from provision.providers.aws import tags
from provision.providers.aws.ledger import Ledger
from provision.providers.aws.lookup import one_by_tag
from provision.records import Progress
from provision.remote import sshkeys
from provision.spec.model import ClusterSpec
from provision.state import ClusterState


def group_name(owner: tags.Owner) -> str:
    """The security group's name (unique per VPC; the cluster's id is part of it)."""
    return owner.name()


def ensure_security_group(aws: Aws, ledger: Ledger, spec: ClusterSpec, vpc_id: str, progress: Progress) -> str:
    """The cluster's security group with its two ingress rules."""
    owner = ledger.owner
    name = group_name(owner)

    def find() -> str | None:
        return one_by_tag(aws, "describe_security_groups", "SecurityGroups", "GroupId", owner, "security-group")

    def create() -> str:
        try:
            return aws.ec2.create_security_group(
                GroupName=name, VpcId=vpc_id, Description=f"gpu-provision cluster {spec.name}",
                TagSpecifications=tags.specifications(owner.tags("security-group"), "security-group"))["GroupId"]
        except AlreadyExistsError:
            found = find()
            if found is None:
                raise CloudError(f"a security group named {name} already exists in {vpc_id} and is not this "
                                 "cluster's", hint="rename the cluster, or delete that group") from None
            return found

    group, made = ledger.ensure("security-group", "security-group", create, find)
    if made:
        progress(f"created security group {group}")
    if not ledger.step_done("security-group-rules"):
        rules = [
            {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group, "Description": "all traffic inside the "
                                                      "cluster (EFA needs it)"}]},
            {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22,
             "IpRanges": [{"CidrIp": str(spec.provider.ssh_ingress_cidr), "Description": "SSH"}]},
        ]
        try:
            aws.ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=rules)
        except AlreadyExistsError:
            pass
        ledger.mark_step("security-group-rules")
    return group


def ensure_key_pair(aws: Aws, ledger: Ledger, spec: ClusterSpec, state: ClusterState, progress: Progress) -> str:
    """The EC2 key pair nodes trust: the spec's, or the cluster public key imported under a name tied to it."""
    if spec.provider.key_pair_name:
        return spec.provider.key_pair_name
    private = spec.ssh.key_path.expanduser() if spec.ssh.key_path else _cluster_key(state, spec.name)
    material = sshkeys.public_key(private)
    digest = hashlib.sha256(material.split()[1].encode()).hexdigest()[:10]
    name = ledger.owner.name(digest)

    def create() -> str:
        try:
            aws.ec2.import_key_pair(KeyName=name, PublicKeyMaterial=material.encode(),
                                    TagSpecifications=tags.specifications(ledger.owner.tags("key-pair"), "key-pair"))
        except AlreadyExistsError:
            pass  # the name carries the cluster's id and the key's digest: the key pair holds this very key
        return name

    def find() -> str | None:
        try:
            aws.ec2.describe_key_pairs(KeyNames=[name])
            return name
        except CloudNotFoundError:
            return None

    recorded = ledger.id("key-pair")
    if recorded and not recorded.endswith(f"-{digest}"):  # the local key changed: the old pair is useless
        ledger.forget("key-pair")
    key, made = ledger.ensure("key-pair", "key-pair", create, find)
    if made:
        progress(f"imported the cluster's public key as key pair {key}")
    return key


def _cluster_key(state: ClusterState, cluster: str) -> Path:
    """The generated per-cluster key (made on first use)."""
    return sshkeys.ensure_key_pair(state.ssh_key_path, f"gpu-provision-{cluster}")
