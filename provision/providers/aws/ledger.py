"""The aws state document: every resource is written down before the code relies on it.

Creating a resource is three steps: record the intent, call AWS (tagging at creation), record the
id. A crash between the call and the record leaves an intent; the next `up` looks the resource up
by its tags and adopts it instead of making a second one. The cluster's id and its claim on the name
(claim.py) are recorded the same way, before anything else.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from provision.providers.aws.tags import Owner
from provision.state import ClusterState

DOCUMENT = "aws"
VERSION = 1  # unchanged by "cluster" (id and claim): a document without it was made before cluster ids


def _empty() -> dict[str, Any]:
    """A document with nothing recorded."""
    return {"version": VERSION, "cluster": {}, "resources": {}, "instances": {}, "launches": {}, "steps": [],
            "facts": {}}


class Ledger:
    """Read-modify-write access to state/<cluster>/aws.json (0600, written atomically on every change)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        stored = state.read(DOCUMENT) or {}
        self.data: dict[str, Any] = _empty() | stored
        if "cluster" not in stored and not self.is_empty():  # made before ids: its resources carry the name only
            self.data["cluster"] = {"by_name": True}

    def save(self) -> None:
        """Write the document now."""
        self.state.write(DOCUMENT, self.data)

    def kept(self) -> bool:
        """Whether the document is on disk: written by the first `up` here, removed only by a clean teardown."""
        return self.state.read(DOCUMENT) is not None

    def is_empty(self) -> bool:
        """Whether nothing is recorded (nothing created, nothing half-created)."""
        return not (self.data["resources"] or self.data["instances"] or self.data["launches"])

    def remove(self) -> None:
        """Forget the document (after a clean teardown)."""
        self.state.remove(DOCUMENT)
        self.data = _empty()

    # --- the cluster's id and its claim on the name -----------------------------------------------

    @property
    def cluster_id(self) -> str | None:
        """The id drawn at the cluster's first `up` (None before it)."""
        return self.data["cluster"].get("id")

    @property
    def claim_held(self) -> bool:
        """Whether the claim was confirmed ours once (not only intended)."""
        return self.data["cluster"].get("claim") == "held"

    @property
    def owner(self) -> Owner:
        """What selects the cluster's resources: name and id; the name alone for a cluster made before ids."""
        by_name = self.data["cluster"].get("by_name")
        return Owner(self.state.cluster, None if by_name else self.cluster_id)

    def claiming(self, cluster_id: str) -> None:
        """Write down the id before the claim is sent (a crash after it finds the claim ours)."""
        self.data["cluster"].update(id=cluster_id, claim="taking")
        self.save()

    def claimed(self) -> None:
        """Write down that the claim is ours."""
        if not self.claim_held:
            self.data["cluster"]["claim"] = "held"
            self.save()

    # --- resources -----------------------------------------------------------------------------

    @property
    def resources(self) -> dict[str, dict]:
        """key -> {kind, id, status, owned, ...}."""
        return self.data["resources"]

    def id(self, key: str) -> str | None:
        """The id of a created resource, or None."""
        record = self.resources.get(key)
        return record["id"] if record and record.get("status") == "created" else None

    def record(self, key: str) -> dict | None:
        """The whole record of a resource."""
        return self.resources.get(key)

    def intend(self, key: str, kind: str, **extra: Any) -> None:
        """Write down that a resource is about to be created."""
        self.resources[key] = {"kind": kind, "status": "creating", **extra}
        self.save()

    def created(self, key: str, kind: str, resource_id: str, *, owned: bool = True, **extra: Any) -> None:
        """Write down a resource's id; owned=False for things the spec names (kept at teardown)."""
        self.resources[key] = {"kind": kind, "id": resource_id, "status": "created", "owned": owned, **extra}
        self.save()

    def forget(self, key: str) -> None:
        """Drop a resource that no longer exists."""
        if self.resources.pop(key, None) is not None:
            self.save()

    def ensure(self, key: str, kind: str, create: Callable[[], str], find: Callable[[], str | None],
               **extra: Any) -> tuple[str, bool]:
        """A resource's id, made only if neither the state nor (after a crash) AWS has it; (id, made_now)."""
        existing = self.id(key)
        if existing:
            return existing, False
        if key in self.resources:  # an intent without an id: the last run may have made it
            found = find()
            if found:
                self.created(key, kind, found, **extra)
                return found, False
        self.intend(key, kind, **extra)
        made = create()
        self.created(key, kind, made, **extra)
        return made, True

    # --- steps without an id of their own (attachments, rules) ----------------------------------

    def step_done(self, step: str) -> bool:
        """Whether an attach/authorize step finished before."""
        return step in self.data["steps"]

    def clear_steps(self) -> None:
        """Forget every finished step (the network they belonged to is gone)."""
        if self.data["steps"]:
            self.data["steps"] = []
            self.save()

    def mark_step(self, step: str, done: bool = True) -> None:
        """Record (or forget) a finished step."""
        steps = set(self.data["steps"])
        self.data["steps"] = sorted(steps | {step} if done else steps - {step})
        self.save()

    # --- instances ------------------------------------------------------------------------------

    @property
    def instances(self) -> dict[str, dict]:
        """node name -> {id, group, instance_type}."""
        return self.data["instances"]

    @property
    def launches(self) -> dict[str, dict]:
        """group -> {token, nodes}: a RunInstances batch that was sent but whose answer is not recorded yet."""
        return self.data["launches"]

    def launching(self, group: str, token: str, nodes: list[str]) -> None:
        """Write down a batch before sending it."""
        self.launches[group] = {"token": token, "nodes": nodes}
        self.save()

    def launched(self, group: str, instance_type: str, ids: dict[str, str]) -> None:
        """Write down the instances of a batch (node name -> instance id) and close the batch."""
        for name, instance_id in ids.items():
            self.instances[name] = {"id": instance_id, "group": group, "instance_type": instance_type}
        self.launches.pop(group, None)
        self.save()

    def launch_abandoned(self, group: str) -> None:
        """Close a batch that AWS refused (nothing was made)."""
        if self.launches.pop(group, None) is not None:
            self.save()

    def forget_instances(self, names: list[str]) -> None:
        """Drop instances that are terminated."""
        popped = [self.instances.pop(name, None) for name in list(names)]
        if any(record is not None for record in popped):
            self.save()

    # --- facts learned at `up` and needed later (describe, teardown) ----------------------------

    @property
    def facts(self) -> dict[str, Any]:
        """Resolved image, vCPUs per type, FSx endpoint, notes."""
        return self.data["facts"]

    def learn(self, **facts: Any) -> None:
        """Record facts (only changed ones cause a write)."""
        if any(self.facts.get(k) != v for k, v in facts.items()):
            self.facts.update(facts)
            self.save()
