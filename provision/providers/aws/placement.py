"""A cluster placement group per GPU group, so its nodes sit close together on the network."""
from __future__ import annotations

from provision.adaptors.aws import AlreadyExistsError, Aws, UnsupportedError
from provision.errors import CloudNotFoundError
from provision.providers.aws import tags
from provision.providers.aws.facts import Facts
from provision.providers.aws.ledger import Ledger
from provision.records import Progress
from provision.spec.model import ClusterSpec, NodeGroup


def wanted(group: NodeGroup, facts: Facts) -> bool:
    """GPU groups get one, except reservation groups (the reservation decides placement) and types without it."""
    itype = facts.types.get(group.instance_type or "")
    return bool(group.gpu) and group.capacity != "reservation" and itype is not None and itype.cluster_placement


def ensure(aws: Aws, ledger: Ledger, spec: ClusterSpec, facts: Facts, progress: Progress) -> dict[str, str]:
    """group name -> placement group name, for every group that gets one.

    An endpoint that does not implement placement groups (moto) gets a warning and no group: the
    state records it as unsupported and nothing pretends the group exists.
    """
    out = {}
    for group in spec.node_groups:
        if not wanted(group, facts):
            if group.gpu and group.capacity != "reservation":
                progress(f"note: {group.instance_type} does not support cluster placement groups; group "
                         f"{group.name} launches without one")
            continue
        key, name = f"placement-group:{group.name}", ledger.owner.name(group.name)
        record = ledger.record(key) or {}
        if record.get("status") == "unsupported":
            continue
        try:
            made_name, made = ledger.ensure(key, "placement-group", lambda: _create(aws, ledger.owner, group, name),
                                            lambda: _find(aws, name))
        except UnsupportedError as exc:
            ledger.resources[key] = {"kind": "placement-group", "status": "unsupported", "reason": exc.message}
            ledger.save()
            progress(f"warning: {exc.message}; group {group.name} launches without a cluster placement group")
            continue
        if made:
            progress(f"created cluster placement group {made_name}")
        out[group.name] = made_name
    return out


def _create(aws: Aws, owner: tags.Owner, group: NodeGroup, name: str) -> str:
    """Create the group (a name already taken is this cluster's: the name carries cluster, id and group)."""
    try:
        aws.ec2.create_placement_group(GroupName=name, Strategy="cluster", TagSpecifications=tags.specifications(
            owner.tags(f"placement-group:{group.name}", group=group.name), "placement-group"))
    except AlreadyExistsError:
        pass
    return name


def _find(aws: Aws, name: str) -> str | None:
    """The group's name if it exists."""
    try:
        groups = aws.ec2.describe_placement_groups(GroupNames=[name])["PlacementGroups"]
    except CloudNotFoundError:
        return None
    return name if groups else None
