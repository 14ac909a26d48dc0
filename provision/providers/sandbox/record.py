"""The sandbox's state document: every host object is written here before anything relies on it."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from provision.errors import StateError
from provision.providers.sandbox.mirror import Mirrors
from provision.state import ClusterState

DOCUMENT = "sandbox"
VERSION = 1


@dataclass
class Proc:
    """A process the sandbox started, identified by PID and kernel start time (so a reused PID is not ours)."""

    pid: int
    start: int


@dataclass
class NodeRecord:
    """One node: its names on the host, its directories, and its init process while it runs."""

    name: str
    address: str
    netns: str
    veth: str
    dir: str
    host_key: str | None = None  # "ssh-ed25519 AAAA...", once generated
    init: Proc | None = None  # PID 1 of the node, as seen from the host
    launcher: Proc | None = None  # the unshare process that waits for init
    namespaces: dict[str, int] = field(default_factory=dict)  # ns kind -> inode, for the teardown audit
    stand_in_gpus: int = 0  # TEST HOOK: /dev/nvidia0..N-1 stand-in device files, so Slurm schedules GPU gres


@dataclass
class SandboxRecord:
    """Everything one sandbox cluster owns on this machine."""

    cluster: str
    subnet: str
    bridge: str
    bridge_address: str
    mirror: str
    security_mirror: str | None = None
    components: list[str] = field(default_factory=lambda: ["main"])
    os: str = "debian-12"  # the nodes' release (records written before provider.os existed are Debian 12)
    base: str | None = None  # unpacked base root filesystem (shared, read-only lower layer)
    proxy: Proc | None = None
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    version: int = VERSION

    @property
    def proxy_url(self) -> str:
        """The apt proxy nodes use."""
        return f"http://{self.bridge_address}:3142"

    @property
    def mirrors(self) -> Mirrors:
        """The mirrors the cluster was built from."""
        return Mirrors(self.mirror, self.security_mirror, tuple(self.components))

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SandboxRecord:
        """Rebuild from JSON, nested records included."""
        nodes = {}
        for name, raw in data.get("nodes", {}).items():
            raw = dict(raw)
            raw["init"] = _proc(raw.get("init"))
            raw["launcher"] = _proc(raw.get("launcher"))
            nodes[name] = NodeRecord(**raw)
        fields = {k: v for k, v in data.items() if k not in ("nodes", "proxy")}
        return cls(**fields, proxy=_proc(data.get("proxy")), nodes=nodes)


def _proc(raw: dict | None) -> Proc | None:
    """A Proc from JSON, or None."""
    return Proc(**raw) if raw else None


def load(state: ClusterState) -> SandboxRecord | None:
    """The cluster's sandbox record, or None if it never got one."""
    data = state.read(DOCUMENT)
    if data is None:
        return None
    if data.get("version") != VERSION:
        raise StateError(f"{state.path}/{DOCUMENT}.json has format version {data.get('version')}, "
                         f"this gpu-provision reads {VERSION}",
                         hint="run `provision down` with the version that created the cluster")
    try:
        return SandboxRecord.from_dict(data)
    except (TypeError, KeyError, ValueError) as exc:
        raise StateError(f"{state.path}/{DOCUMENT}.json is malformed ({exc})",
                         hint="remove the sandbox by hand (ip netns, ip link) and delete the file") from exc


def save(state: ClusterState, record: SandboxRecord) -> None:
    """Write the record atomically (0600)."""
    state.write(DOCUMENT, record.as_dict())


def forget(state: ClusterState) -> None:
    """Drop the record once nothing it names remains."""
    state.remove(DOCUMENT)
