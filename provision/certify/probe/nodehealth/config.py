"""What the slurm role tells the health program about its node (/etc/gpu-provision/health.json)."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path("/etc/gpu-provision/health.json")


@dataclass(frozen=True)
class GpuExpectation:
    """The node's GPUs as the spec has them."""

    model: str
    count: int


@dataclass(frozen=True)
class ActiveConfig:
    """Active checks (nodehealth.active): how often, how deep, which peers, and the floors a figure is judged by."""

    interval_s: float
    level: str = "quick"  # quick | standard
    peers: tuple[tuple[str, str], ...] = ()  # (Slurm name, address) of the other compute nodes
    count: int = 3  # peers measured per pass
    port: int = 5301  # every compute node's iperf3 server
    bitrate: str = ""  # iperf3 -b pacing ("1G" on the sandbox, whose veth speed is the host's CPU); "" none
    net_min_gbps: float = 1.0
    floors: dict[str, float] = field(default_factory=dict)  # check id -> floor (GPU GEMM, memory, filesystem)
    partition: str = "gp-active"  # the hidden partition every other preempts
    time_limit_min: int = 5  # the job's --time

    @classmethod
    def from_dict(cls, data: Any) -> ActiveConfig | None:
        """None when active checks are off; ValueError names the field."""
        if data is None:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("interval_s"), (int, float)):
            raise ValueError("health config: 'active' must be null or {\"interval_s\": N, ...}")
        peers = data.get("peers", [])
        if not isinstance(peers, list) or not all(isinstance(p, list) and len(p) == 2 for p in peers):
            raise ValueError("health config: 'active.peers' must be a list of [name, address]")
        floors = data.get("floors", {})
        if not isinstance(floors, dict) or not all(isinstance(v, (int, float)) for v in floors.values()):
            raise ValueError("health config: 'active.floors' must map check ids to numbers")
        return cls(interval_s=float(data["interval_s"]), level=str(data.get("level", "quick")),
                   peers=tuple((str(n), str(a)) for n, a in peers), count=int(data.get("count", 3)),
                   port=int(data.get("port", 5301)), bitrate=str(data.get("bitrate") or ""),
                   net_min_gbps=float(data.get("net_min_gbps", 1.0)),
                   floors={str(k): float(v) for k, v in floors.items()},
                   partition=str(data.get("partition", "gp-active")),
                   time_limit_min=int(data.get("time_limit_min", 5)))


@dataclass(frozen=True)
class HealthConfig:
    """One node's health checks and where the program keeps its record."""

    node: str  # the node's name in Slurm
    deadline_s: float = 8.0  # the whole pass, checks and Slurm calls
    state_dir: Path = Path("/var/lib/gpu-provision/health")
    slurmd: bool = True  # the node runs slurmd (a compute node)
    mounts: tuple[str, ...] = ()  # shared filesystems that must be mounted and answer
    files: dict[str, str] = field(default_factory=dict)  # cluster-wide file -> SHA-1 the deploy rendered
    gpu: GpuExpectation | None = None
    slurm_conf: Path = Path("/etc/slurm/slurm.conf")
    munge_key: Path = Path("/etc/munge/munge.key")
    commands: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_COMMANDS))
    written: float = 0.0  # when the deploy wrote this config (its file's mtime)
    active: ActiveConfig | None = None  # measurements on the idle node on a schedule (nodehealth.active)
    metrics_dir: Path | None = None  # node exporter's textfile directory (nodehealth.textfiles); None: not written

    @classmethod
    def from_dict(cls, data: Any) -> HealthConfig:
        """Validate the decoded document; ValueError names the field."""
        if not isinstance(data, dict) or not isinstance(data.get("node"), str) or not data["node"]:
            raise ValueError("health config: 'node' (the node's Slurm name) is missing")
        gpu = data.get("gpu")
        if gpu is not None and not (isinstance(gpu, dict) and isinstance(gpu.get("count"), int)):
            raise ValueError("health config: 'gpu' must be null or {\"model\": ..., \"count\": N}")
        files = data.get("files", {})
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise ValueError("health config: 'files' must map paths to SHA-1 digests")
        return cls(node=data["node"], deadline_s=float(data.get("deadline_s", 8.0)),
                   state_dir=Path(data.get("state_dir", "/var/lib/gpu-provision/health")),
                   slurmd=bool(data.get("slurmd", True)), mounts=tuple(str(m) for m in data.get("mounts", ())),
                   files=dict(files), gpu=GpuExpectation(str(gpu.get("model", "")), gpu["count"]) if gpu else None,
                   slurm_conf=Path(data.get("slurm_conf", "/etc/slurm/slurm.conf")),
                   munge_key=Path(data.get("munge_key", "/etc/munge/munge.key")),
                   commands={**DEFAULT_COMMANDS, **data.get("commands", {})},
                   active=ActiveConfig.from_dict(data.get("active")),
                   metrics_dir=_metrics_dir(data.get("metrics_dir")))


def _metrics_dir(value: Any) -> Path | None:
    """The textfile directory: None when missing or "" (the metrics are off); ValueError unless an absolute path."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.startswith("/"):
        raise ValueError(f"health config: 'metrics_dir' must be an absolute path or \"\" (off), not {value!r}")
    return Path(value)


DEFAULT_COMMANDS = {"scontrol": "/usr/bin/scontrol", "munge": "/usr/bin/munge", "unmunge": "/usr/bin/unmunge",
                    "munged": "/usr/sbin/munged", "runuser": "/usr/sbin/runuser", "stat": "/usr/bin/stat",
                    "srun": "/usr/bin/srun", "iperf3": "/usr/bin/iperf3", "dcgmi": "/usr/bin/dcgmi",
                    "gpubench": "/opt/gpu-provision/certify/bin/gpubench"}


def load(path: Path = DEFAULT_PATH) -> HealthConfig:
    """Read and validate the config file; ValueError names what is wrong."""
    try:
        return replace(HealthConfig.from_dict(json.loads(path.read_text())), written=path.stat().st_mtime)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg})") from exc


def load_or_say(path: Path, program: str) -> HealthConfig | None:
    """The config, or None after saying on stderr what is wrong with it (the program then exits 2)."""
    try:
        return load(path)
    except ValueError as exc:
        print(f"{program}: {exc}", file=sys.stderr)
        return None
