"""`down`: remove what the state records in reverse dependency order, then audit by tag and sweep.

Idempotent: a resource already gone counts as removed; a second `down` finds nothing and says so.
"0 resources left" is reported only after the audit looked. Everything is selected by the cluster's
id (tags.Owner), so another cluster of the same name is never touched; only `--orphans` selects by
the name alone. The name's claim is released last.
"""
from __future__ import annotations

from collections.abc import Callable

from provision.adaptors.aws import Aws, DependencyError
from provision.errors import CloudAuthError, CloudError, CloudNotFoundError, UsageError
from provision.providers.aws import audit, claim, fsx, instances
from provision.providers.aws.audit import Leftover
from provision.providers.aws.ledger import Ledger
from provision.providers.aws.tags import Owner
from provision.providers.base import Teardown
from provision.records import Progress

# Reverse dependency order: what uses a thing goes before the thing.
ORDER = ("instance", "fsx", "placement-group", "network-interface", "volume", "security-group",
         "route-table-association", "route-table", "subnet", "internet-gateway", "vpc", "key-pair", "other")


def destroy(aws: Aws, ledger: Ledger, cluster: str, progress: Progress, *, orphans: bool = False) -> Teardown:
    """Remove the cluster's resources, audit by tag, sweep what the audit finds, audit again; release the claim.

    What is removed carries the id this state records, so another cluster of the same name (another state root)
    keeps all of its resources and its claim. Without a state document here (never made here, or torn down
    cleanly), nothing is this state's: resources tagged with the name are removed only with `orphans` (the user
    says they are this cluster's, its state lost), which selects by the name alone and releases the name's claim
    whoever holds it. A document left by an unfinished `up` or `down` keeps `down` working alone; the claim goes
    only once the audit found nothing, so an unfinished `down` keeps the name until it is finished."""
    if not orphans and not ledger.kept():
        _refuse_unrecorded(aws, cluster)
        progress(f"audit: 0 resources left carrying {Owner(cluster).label()}")
        return Teardown()
    owner = Owner(cluster) if orphans else ledger.owner
    removed: list[str] = []
    failures: dict[str, str] = {}
    _terminate(aws, ledger, owner, removed, progress)
    recorded = [(key, record) for kind in ORDER[1:] for key, record in list(ledger.resources.items())
                if record["kind"] == kind]
    for key, record in recorded:
        if record.get("status") == "created" and record.get("owned", True):
            leftover = Leftover(record["kind"], record["id"], {"vpcs": [record["vpc_id"]]} if "vpc_id" in record
                                else {})
            if not _delete(aws, leftover, removed, failures, progress):
                continue
        ledger.forget(key)  # deleted, kept (not ours), or never made (an intent: the audit finds it if it exists)
    ledger.clear_steps()
    notes: list[str] = []
    found = audit.find(aws, owner, notes)
    if found:
        progress(f"audit: {len(found)} resource(s) still carry {owner.label()}: "
                 f"{', '.join(f.label() for f in found)}; removing them")
        _sweep(aws, found, removed, failures, progress)
        found = audit.find(aws, owner, notes)
    for note in dict.fromkeys(notes):
        progress(f"note: {note}")
    if not found:
        claim.release(aws, cluster, ledger.cluster_id, progress, any_holder=orphans)
        ledger.remove()
    progress(f"audit: {len(found)} resources left carrying {owner.label()}")
    leftovers = [f"{f.label()} ({failures[f.label()]})" if f.label() in failures else f.label() for f in found]
    return Teardown(removed=removed, leftovers=leftovers)


def _refuse_unrecorded(aws: Aws, cluster: str) -> None:
    """UsageError when resources carry the cluster's name but this machine recorded none of them."""
    owner = Owner(cluster)
    found = audit.find(aws, owner, [])
    if found:
        raise UsageError(f"this machine records nothing for cluster '{cluster}', but {len(found)} resource(s) in "
                         f"the region carry {owner.label()} ({audit.summary(found)}); they may be another "
                         "machine's cluster of the same name, so nothing was removed",
                         hint="run `provision down` where the cluster was made; if they are this cluster's "
                              "and its state directory was lost, run `provision down SPEC --orphans`")


def _terminate(aws: Aws, ledger: Ledger, owner: Owner, removed: list[str], progress: Progress) -> None:
    """Terminate every live instance carrying the cluster's tags (recorded or not) and forget the recorded ones."""
    names = {record["id"]: name for name, record in ledger.instances.items()}
    alive = sorted(instances.live(aws, owner))
    if alive:
        progress(f"terminating {len(alive)} instance(s)")
        instances.terminate(aws, alive)
        removed += [f"instance {i} ({names[i]})" if i in names else f"instance {i}" for i in alive]
    ledger.forget_instances(list(ledger.instances))
    for group in list(ledger.launches):
        ledger.launch_abandoned(group)


def _sweep(aws: Aws, found: list[Leftover], removed: list[str], failures: dict[str, str],
           progress: Progress) -> None:
    """Delete what the audit found, in teardown order."""
    doomed = sorted(found, key=lambda f: ORDER.index(f.kind))
    ids = [f.id for f in doomed if f.kind == "instance"]
    if ids:
        instances.terminate(aws, ids)
        removed += [f"instance {i}" for i in ids]
    for leftover in doomed:
        if leftover.kind != "instance":
            _delete(aws, leftover, removed, failures, progress)


def _delete(aws: Aws, leftover: Leftover, removed: list[str], failures: dict[str, str], progress: Progress) -> bool:
    """Delete one resource; gone already counts as done; a refusal is remembered, not raised (auth errors are)."""
    action = _DELETERS.get(leftover.kind)
    if action is None:
        failures[leftover.label()] = "the tool cannot delete this kind; remove it in the console"
        return False
    try:
        _patiently(aws, lambda: action(aws, leftover))
    except CloudNotFoundError:
        pass
    except CloudAuthError:
        raise
    except CloudError as exc:
        failures[leftover.label()] = exc.message
        progress(f"could not delete {leftover.label()}: {exc.message}")
        return False
    removed.append(leftover.label())
    return True


def _patiently(aws: Aws, action: Callable[[], None]) -> None:
    """Retry a delete refused because of a dependency that clears by itself (interfaces still detaching)."""
    policy = aws.policy
    for attempt in range(1, policy.dependency_attempts + 1):
        try:
            action()
            return
        except DependencyError:
            if attempt == policy.dependency_attempts:
                raise
            aws.sleep(policy.backoff(attempt, base=policy.base_delay * 5))


def _detach_gateway(aws: Aws, leftover: Leftover) -> None:
    """Detach an internet gateway from its VPCs, then delete it."""
    for vpc in leftover.detail.get("vpcs", []):
        try:
            aws.ec2.detach_internet_gateway(InternetGatewayId=leftover.id, VpcId=vpc)
        except CloudError as exc:
            if getattr(exc, "code", "") not in ("Gateway.NotAttached", "InvalidVpcID.NotFound"):
                raise
    aws.ec2.delete_internet_gateway(InternetGatewayId=leftover.id)


def _delete_route_table(aws: Aws, leftover: Leftover) -> None:
    """Drop a route table's subnet associations, then the table (its routes go with it)."""
    for association in leftover.detail.get("associations", []):
        aws.ec2.disassociate_route_table(AssociationId=association)
    aws.ec2.delete_route_table(RouteTableId=leftover.id)


_DELETERS: dict[str, Callable[[Aws, Leftover], object]] = {
    "fsx": lambda aws, f: fsx.delete(aws, f.id),
    "placement-group": lambda aws, f: aws.ec2.delete_placement_group(GroupName=f.id),
    "network-interface": lambda aws, f: aws.ec2.delete_network_interface(NetworkInterfaceId=f.id),
    "volume": lambda aws, f: aws.ec2.delete_volume(VolumeId=f.id),
    "security-group": lambda aws, f: aws.ec2.delete_security_group(GroupId=f.id),
    "route-table-association": lambda aws, f: aws.ec2.disassociate_route_table(AssociationId=f.id),
    "route-table": _delete_route_table,
    "subnet": lambda aws, f: aws.ec2.delete_subnet(SubnetId=f.id),
    "internet-gateway": _detach_gateway,
    "vpc": lambda aws, f: aws.ec2.delete_vpc(VpcId=f.id),
    "key-pair": lambda aws, f: aws.ec2.delete_key_pair(KeyName=f.id),
}
