"""What a deploy applied: the rendered inventory's variables, normalised, and where they are recorded.

The record is the state document `settings` (0600, written atomically): the variables every host reads (`common`), each
host's own variables with the groups it is in (`hosts`, groups under `group_names`, the name roles read them by), the
provider's facts the inventory carried (`provider_vars`, so `plan` renders the same without asking the provider), and a
SHA-256 `digest` of the compared part, so an `up` with nothing to change compares one string.

It is written only after a deploy that covered every node of the cluster with no --limit, --tags, --check or
--retry-failed (an `up`, a plain `deploy`, a whole `deploy --rolling`); a partial run leaves the last record as it is.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from provision.errors import StateError
from provision.state import ClusterState

DOCUMENT = "settings"
FORMAT = 1
FILES = ("hosts.yml", "group_vars/all/cluster.yml")  # what provision.inventory renders
GROUPS = "group_names"  # a host's groups, under the name the roles read them by
# Not settings: which nodes are held in the certify reservation follows certify, not the spec (converge.HOLD_VAR);
# whether the cluster is in service follows its deploys (the CLI passes it to each run, the inventory says it for a
# plain ansible-playbook run).
TRANSIENT = ("slurm_hold_nodes", "provision_in_service")

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _InventoryLoader(_Loader):  # type: ignore[misc, valid-type]
    """Reads a rendered inventory as Ansible does, an !unsafe string as the string it is."""


_InventoryLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


@dataclass(frozen=True)
class Settings:
    """The variables a deploy gives the nodes: every host's, each host's own (with its groups)."""

    common: dict[str, Any]
    hosts: dict[str, dict[str, Any]]
    provider_vars: dict[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """SHA-256 of the compared part (common and host variables, canonical JSON)."""
        text = json.dumps({"common": self.common, "hosts": self.hosts}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def groups_of(self, host: str) -> list[str]:
        """The inventory groups a host is in."""
        return list(self.hosts.get(host, {}).get(GROUPS, []))

    def as_document(self) -> dict:
        """The state document's content."""
        return {"format": FORMAT, "digest": self.digest, "common": self.common, "hosts": self.hosts,
                "provider_vars": self.provider_vars}


def from_inventory(files: Mapping[str, str], provider_vars: Mapping[str, str] | None = None) -> Settings:
    """The settings in a rendered inventory (relative path -> text, as provision.inventory.render returns it)."""
    inventory = (yaml.load(files["hosts.yml"], Loader=_InventoryLoader) or {}).get("all", {})
    cluster = yaml.load(files["group_vars/all/cluster.yml"], Loader=_InventoryLoader) or {}
    common = {k: v for k, v in {**(inventory.get("vars") or {}), **cluster}.items() if k not in TRANSIENT}
    hosts = {name: dict(values or {}) for name, values in (inventory.get("hosts") or {}).items()}
    for group, body in (inventory.get("children") or {}).items():
        for host in (body or {}).get("hosts") or {}:
            hosts.setdefault(host, {}).setdefault(GROUPS, []).append(group)
    for values in hosts.values():
        values[GROUPS] = sorted(values.get(GROUPS, []))
    kept = {k: str(v) for k, v in (provider_vars or {}).items() if k not in TRANSIENT}
    return Settings(common, hosts, kept)


def written(inventory_dir: Path) -> dict[str, str]:
    """The inventory files as a deploy's Ansible read them from the cluster's inventory folder."""
    return {relative: (inventory_dir / relative).read_text(encoding="utf-8") for relative in FILES}


def record(state: ClusterState, settings: Settings) -> Settings:
    """Keep what a deploy that covered the whole cluster applied (0600, atomic)."""
    state.write(DOCUMENT, {**settings.as_document(), "applied_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return settings


def load(state: ClusterState) -> Settings | None:
    """What the last deploy that covered the whole cluster applied; None when nothing was recorded."""
    document = state.read(DOCUMENT) if state.exists() else None
    if document is None:
        return None
    if document.get("format") != FORMAT:
        raise StateError(f"{state.path / (DOCUMENT + '.json')}: format {document.get('format')!r} is not one this "
                         f"version reads ({FORMAT})", hint="remove it; the next `provision up` deploys and records "
                                                          "it again")
    return Settings(document.get("common") or {}, document.get("hosts") or {}, document.get("provider_vars") or {})


def forget(state: ClusterState) -> None:
    """Drop the record (the cluster was taken down)."""
    state.remove(DOCUMENT)
