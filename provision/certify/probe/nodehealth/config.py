"""What the slurm role tells the health program about its node (/etc/gpu-provision/health.json)."""
from __future__ import annotations

import json
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
                   commands={**DEFAULT_COMMANDS, **data.get("commands", {})})


DEFAULT_COMMANDS = {"scontrol": "/usr/bin/scontrol", "munge": "/usr/bin/munge", "unmunge": "/usr/bin/unmunge",
                    "munged": "/usr/sbin/munged", "runuser": "/usr/sbin/runuser", "stat": "/usr/bin/stat"}


def load(path: Path = DEFAULT_PATH) -> HealthConfig:
    """Read and validate the config file; ValueError names what is wrong."""
    try:
        return replace(HealthConfig.from_dict(json.loads(path.read_text())), written=path.stat().st_mtime)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg})") from exc
