"""Removing single nodes from a running cluster (a shrink): terminate exactly their instances, then forget them.

The lifecycle calls this after Slurm let the nodes go. Only an instance that still carries the cluster's tags (its
name and id) is terminated; the VPC, security group, placement groups, FSx and key pair stay, as do the other nodes. A name without
a recorded instance, or whose instance is gone already, is forgotten without an API call that changes anything, so
a second call does nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from provision.adaptors.aws import Aws
from provision.providers.aws import instances, tags
from provision.providers.aws.ledger import Ledger
from provision.records import Progress
from provision.state import write_private

_FILTER_BATCH = 200  # instance ids per describe filter


@dataclass
class Sorting:
    """The recorded instances of the nodes to remove, by what is to be done with each (node name -> instance id)."""

    ours: dict[str, str] = field(default_factory=dict)  # live and tagged as the cluster's: terminate
    gone: dict[str, str] = field(default_factory=dict)  # terminated or unknown to EC2: forget
    foreign: dict[str, str] = field(default_factory=dict)  # live without the cluster's tags: never terminated
    addresses: set[str] = field(default_factory=set)  # public and private addresses of ours and gone ones


def retire(aws: Aws, ledger: Ledger, names: list[str], known_hosts: Path, progress: Progress) -> list[str]:
    """Terminate the named nodes' instances and wait until they are gone, then drop them from the state and from
    known_hosts; returns one line per instance terminated. Names without a recorded instance are ignored."""
    wanted = list(dict.fromkeys(names))
    _settle_batches(aws, ledger, wanted, progress)
    recorded = {name: ledger.instances[name]["id"] for name in wanted if name in ledger.instances}
    if not recorded:
        return []
    sorting = sort(recorded, describe(aws, list(recorded.values())), ledger.owner)
    _report(sorting, ledger.owner, progress)
    if sorting.ours:
        progress(f"terminating {len(sorting.ours)} instance(s): {', '.join(sorting.ours)}")
        instances.terminate(aws, list(sorting.ours.values()))
    forget_hosts(known_hosts, set(recorded) | sorting.addresses)
    ledger.forget_instances(list(recorded))
    return [f"instance {instance_id} ({name})" for name, instance_id in sorting.ours.items()]


def _report(sorting: Sorting, owner: tags.Owner, progress: Progress) -> None:
    """Say which instances are not terminated, and why."""
    for name, instance_id in sorting.foreign.items():
        progress(f"{name}: instance {instance_id} does not carry {owner.label()}, so it is not terminated; "
                 "it is no longer recorded as this cluster's")
    for name, instance_id in sorting.gone.items():
        progress(f"{name}: instance {instance_id} is gone already")


def _settle_batches(aws: Aws, ledger: Ledger, names: list[str], progress: Progress) -> None:
    """Adopt the open launch batches that name a node to remove, so its instance is recorded and terminated here
    rather than adopted, and brought back, by the next `create`."""
    for group, batch in list(ledger.launches.items()):
        if set(batch["nodes"]) & set(names):
            instances.adopt_open_batch(aws, ledger, group, progress)


def describe(aws: Aws, ids: list[str]) -> dict[str, dict]:
    """instance id -> instance for the ids EC2 still knows (a filter, so an unknown id is no error)."""
    found: dict[str, dict] = {}
    for start in range(0, len(ids), _FILTER_BATCH):
        reservations = aws.pages("ec2", "describe_instances", "Reservations",
                                 Filters=[{"Name": "instance-id", "Values": ids[start:start + _FILTER_BATCH]}])
        found |= {i["InstanceId"]: i for r in reservations for i in r["Instances"]}
    return found


def sort(recorded: dict[str, str], found: dict[str, dict], owner: tags.Owner) -> Sorting:
    """Which recorded instances to terminate, which are gone, and which are not the cluster's (tags checked live)."""
    sorting = Sorting()
    for name, instance_id in recorded.items():
        instance = found.get(instance_id)
        gone = instance is None or instance["State"]["Name"] == "terminated"
        if not gone and not owner.owns(tags.as_dict(instance.get("Tags"))):
            sorting.foreign[name] = instance_id
            continue
        (sorting.gone if gone else sorting.ours)[name] = instance_id
        sorting.addresses |= {(instance or {}).get(k) for k in ("PublicIpAddress", "PrivateIpAddress")} - {None}
    return sorting


def forget_hosts(path: Path, hosts: set[str]) -> None:
    """Drop the known_hosts lines of these names and addresses (plain `host[,host] type key` lines, `[host]:port`
    too); other lines, comments and hashed entries stay as they are."""
    if not hosts or not path.is_file():
        return
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not (line_hosts(line) & hosts)]
    if len(kept) != len(lines):
        write_private(path, "".join(kept))


def line_hosts(line: str) -> set[str]:
    """The host names and addresses a known_hosts line is for (none for a comment or a blank line)."""
    words = line.split()
    if words and words[0].startswith("@"):  # @cert-authority, @revoked
        words = words[1:]
    if not words or words[0].startswith("#"):
        return set()
    return {_bare(pattern) for pattern in words[0].split(",")}


def _bare(pattern: str) -> str:
    """`[host]:port` -> host; anything else as it is."""
    return pattern[1:].split("]", 1)[0] if pattern.startswith("[") else pattern
