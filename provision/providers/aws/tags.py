"""The tags every resource carries, so a crash never leaves something we cannot find and remove."""
from __future__ import annotations

CLUSTER = "gpu-provision:cluster"
RESOURCE = "gpu-provision:resource"  # the state key (vpc, subnet, placement-group:gpu, ...), for adoption
GROUP = "gpu-provision:node-group"
ROLE = "gpu-provision:role"
LAUNCH = "gpu-provision:launch"  # the RunInstances client token of one batch


def cluster_tags(cluster: str, resource: str, *, group: str | None = None, roles: tuple[str, ...] = (),
                 launch: str | None = None) -> dict[str, str]:
    """The tags of one resource: cluster, state key, Name, and node group/role/launch where they apply."""
    tags = {CLUSTER: cluster, RESOURCE: resource, "Name": f"{cluster}-{resource.replace(':', '-')}"}
    if group:
        tags[GROUP] = group
    if roles:
        tags[ROLE] = "+".join(roles)  # '+' because some services refuse ',' in tag values
    if launch:
        tags[LAUNCH] = launch
    return tags


def specifications(tags: dict[str, str], *resource_types: str) -> list[dict]:
    """EC2 TagSpecifications applying the tags at creation, for each resource type."""
    pairs = [{"Key": k, "Value": v} for k, v in tags.items()]
    return [{"ResourceType": kind, "Tags": pairs} for kind in resource_types]


def as_list(tags: dict[str, str]) -> list[dict]:
    """Tags in the [{Key, Value}] form FSx and the tagging API use."""
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def as_dict(tags: list[dict] | None) -> dict[str, str]:
    """[{Key, Value}] -> {key: value}."""
    return {t["Key"]: t["Value"] for t in tags or []}


def filters(cluster: str, **more: str) -> list[dict]:
    """EC2 describe filters selecting the cluster's resources (plus tag:KEY=value pairs, keys from this module)."""
    wanted = {CLUSTER: cluster, **{_KEYS[k]: v for k, v in more.items()}}
    return [{"Name": f"tag:{key}", "Values": [value]} for key, value in wanted.items()]


_KEYS = {"resource": RESOURCE, "group": GROUP, "launch": LAUNCH}
