"""The post-teardown audit: everything that still carries the cluster's tags, found with filtered describes.

EC2 describes by tag cover the kinds the provider makes (instances that are not terminated, placement
groups, interfaces, volumes, security groups, route tables, subnets, gateways, VPCs, key pairs), FSx
is listed and filtered on its tags, and the Resource Groups Tagging API catches any other kind. The
selection is an Owner: the cluster's name and id, or (`--orphans`) the name alone. The name's claim
is not a leftover: `down` releases it itself, last.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from provision.adaptors.aws import Aws, UnsupportedError
from provision.errors import CloudError
from provision.providers.aws import claim, fsx, instances, tags

# kind -> (describe operation, result key, id field); the order is the teardown order.
_EC2_KINDS = {
    "placement-group": ("describe_placement_groups", "PlacementGroups", "GroupName"),
    "network-interface": ("describe_network_interfaces", "NetworkInterfaces", "NetworkInterfaceId"),
    "volume": ("describe_volumes", "Volumes", "VolumeId"),
    "security-group": ("describe_security_groups", "SecurityGroups", "GroupId"),
    "route-table": ("describe_route_tables", "RouteTables", "RouteTableId"),
    "subnet": ("describe_subnets", "Subnets", "SubnetId"),
    "internet-gateway": ("describe_internet_gateways", "InternetGateways", "InternetGatewayId"),
    "vpc": ("describe_vpcs", "Vpcs", "VpcId"),
    "key-pair": ("describe_key_pairs", "KeyPairs", "KeyName"),
}
_UNPAGINATED = {"describe_placement_groups", "describe_key_pairs"}
# Resources on their way out are not leftovers (a terminated instance's root volume is deleted shortly after).
_STATE_FILTERS = {"volume": [{"Name": "status", "Values": ["creating", "available", "in-use", "error"]}],
                  "placement-group": [{"Name": "state", "Values": ["pending", "available"]}]}
# Tagging-API resource types the describes above already cover (their answers win: the tagging API lags).
_COVERED = {("ec2", kind) for kind in ("instance", *_EC2_KINDS)} | {("fsx", "file-system")}


@dataclass(frozen=True)
class Leftover:
    """One resource that still carries the cluster's tag."""

    kind: str
    id: str
    detail: dict = field(default_factory=dict, compare=False)

    def label(self) -> str:
        """How it is printed: kind and id."""
        return f"{self.kind} {self.id}"


def find(aws: Aws, owner: tags.Owner, notes: list[str]) -> list[Leftover]:
    """Everything in the region still tagged for the cluster, in teardown order; `notes` gets what was not checked."""
    found = [Leftover("instance", i) for i in sorted(instances.live(aws, owner))]
    found += [Leftover("fsx", fs["FileSystemId"]) for fs in fsx.tagged(aws, owner)]
    for kind, (operation, key, id_field) in _EC2_KINDS.items():
        filters = owner.filters() + _STATE_FILTERS.get(kind, [])
        try:
            if operation in _UNPAGINATED:
                items = aws.call("ec2", operation, Filters=filters)[key]
            else:
                items = aws.pages("ec2", operation, key, Filters=filters)
        except UnsupportedError as exc:
            notes.append(f"{kind}s not audited: {exc.message}")
            continue
        found += [Leftover(kind, item[id_field], _detail(kind, item)) for item in items]
    found += _untyped(aws, owner, notes)
    return found


def summary(found: list[Leftover], shown: int = 4) -> str:
    """The first few labels, and how many more, for a one-line message."""
    more = f" and {len(found) - shown} more" if len(found) > shown else ""
    return ", ".join(f.label() for f in found[:shown]) + more


def _detail(kind: str, item: dict) -> dict:
    """What deleting needs besides the id: a gateway's VPCs, a route table's subnet associations."""
    if kind == "internet-gateway":
        return {"vpcs": [a["VpcId"] for a in item.get("Attachments", [])]}
    if kind == "route-table":
        return {"associations": [a["RouteTableAssociationId"] for a in item.get("Associations", [])
                                 if not a.get("Main")]}
    return {}


def _untyped(aws: Aws, owner: tags.Owner, notes: list[str]) -> list[Leftover]:
    """Tagged resources of kinds the describes do not cover, from the Resource Groups Tagging API."""
    try:
        mappings = aws.pages("resourcegroupstaggingapi", "get_resources", "ResourceTagMappingList",
                             token="PaginationToken", TagFilters=owner.tag_filters(), ResourcesPerPage=100)
    except CloudError as exc:
        notes.append(f"other resource kinds not audited: {exc.message}")
        return []
    out = []
    for mapping in mappings:
        arn = mapping["ResourceARN"]
        parts = arn.split(":", 5)
        service, resource = (parts[2], parts[5]) if len(parts) == 6 else ("", arn)
        if (service, resource.split("/", 1)[0]) not in _COVERED and not claim.is_claim(service, resource):
            out.append(Leftover("other", arn))
    return out
