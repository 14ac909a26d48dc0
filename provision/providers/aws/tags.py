"""The tags every resource carries, so a crash never leaves something we cannot find and remove.

Two clusters may carry one name at different times (and, with `--orphans` and a lost state, even at once), so
every resource also carries the cluster's id, drawn at its first `up` and kept in aws.json: `down` selects by it,
only `down --orphans` by the name alone.
"""
from __future__ import annotations

from dataclasses import dataclass

CLUSTER = "gpu-provision:cluster"
CLUSTER_ID = "gpu-provision:cluster-id"  # the id of one cluster of that name (claim.py draws it)
RESOURCE = "gpu-provision:resource"  # the state key (vpc, subnet, placement-group:gpu, ...), for adoption
GROUP = "gpu-provision:node-group"
ROLE = "gpu-provision:role"
LAUNCH = "gpu-provision:launch"  # the RunInstances client token of one batch


@dataclass(frozen=True)
class Owner:
    """Whose resources: a cluster's name and its id; without an id (`--orphans`, a cluster made before ids) the
    name alone selects."""

    cluster: str
    id: str | None = None

    def tags(self, resource: str, *, group: str | None = None, roles: tuple[str, ...] = (),
             launch: str | None = None) -> dict[str, str]:
        """The tags of one resource: cluster, id, state key, Name, and node group/role/launch where they apply."""
        tags = {CLUSTER: self.cluster, RESOURCE: resource, "Name": f"{self.cluster}-{resource.replace(':', '-')}"}
        if self.id:
            tags[CLUSTER_ID] = self.id
        if group:
            tags[GROUP] = group
        if roles:
            tags[ROLE] = "+".join(roles)  # '+' because some services refuse ',' in tag values
        if launch:
            tags[LAUNCH] = launch
        return tags

    def filters(self, **more: str) -> list[dict]:
        """EC2 describe filters selecting the cluster's resources (plus tag:KEY=value pairs, keys from this module)."""
        wanted = {**self._selector(), **{_KEYS[k]: v for k, v in more.items()}}
        return [{"Name": f"tag:{key}", "Values": [value]} for key, value in wanted.items()]

    def tag_filters(self) -> list[dict]:
        """The same selection as Resource Groups Tagging API TagFilters."""
        return [{"Key": key, "Values": [value]} for key, value in self._selector().items()]

    def owns(self, tags: dict[str, str]) -> bool:
        """Whether a resource with these tags is the cluster's."""
        return all(tags.get(key) == value for key, value in self._selector().items())

    def name(self, *parts: str) -> str:
        """A name unique to this cluster (key pair, placement group, security group): the id is part of it."""
        return "-".join(["gpu-provision", self.cluster, *([self.id] if self.id else []), *parts])

    def label(self) -> str:
        """The selecting tags, as printed: `gpu-provision:cluster=demo` and the id where there is one."""
        return ", ".join(f"{key}={value}" for key, value in self._selector().items())

    def _selector(self) -> dict[str, str]:
        return {CLUSTER: self.cluster, **({CLUSTER_ID: self.id} if self.id else {})}


def specifications(tags: dict[str, str], *resource_types: str) -> list[dict]:
    """EC2 TagSpecifications applying the tags at creation, for each resource type."""
    pairs = [{"Key": k, "Value": v} for k, v in tags.items()]
    return [{"ResourceType": kind, "Tags": pairs} for kind in resource_types]


def as_list(tags: dict[str, str]) -> list[dict]:
    """Tags in the [{Key, Value}] form FSx, SSM and the tagging API use."""
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def as_dict(tags: list[dict] | None) -> dict[str, str]:
    """[{Key, Value}] -> {key: value}."""
    return {t["Key"]: t["Value"] for t in tags or []}


_KEYS = {"resource": RESOURCE, "group": GROUP, "launch": LAUNCH}
