"""What a node should look like, handed to the probe as --expect-json and used by the health checks.

Standard library only (the probe imports it). The control side builds it from the spec's records
(certify.control.session.expectation_for); `from_dict` validates what arrives on the node and names the bad field.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

LEVELS: tuple[str, ...] = ("quick", "standard", "full")


@dataclass(frozen=True)
class NodeExpectation:
    """The deployed state the probe compares a node with."""

    node: str
    gpu_model: str | None = None  # a key of provision.certify.probe.gpus.GPU_MODELS; None: no GPUs expected
    gpu_count: int = 0
    driver_branch: int | None = None  # e.g. 570: the driver version must start with "570."
    driver_version: str | None = None  # exact version when the spec pins one
    cuda_version: str | None = None  # newest CUDA toolkit deployed: the driver must support it
    mig: bool = False
    persistence: bool = True
    ecc: bool = True
    interconnect: str = "none"  # none, infiniband, efa
    interconnect_nics: int = 0
    fs_mount: str | None = None  # shared filesystem mount the probe writes to
    fs_type: str | None = None  # spec filesystem.type (glusterfs, nfs, ...): the mount must be one; None: not checked
    fs_size_mib: int = 256
    run_id: str = "manual"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, for --expect-json."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeExpectation:
        """Validate a decoded --expect-json document; ValueError names the field and the fix."""
        if not isinstance(data, dict):
            raise ValueError("expectation: expected a JSON object, e.g. {\"node\": \"gpu01\", \"gpu_count\": 8}")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"expectation.{unknown[0]}: unknown key; known keys: {', '.join(known)}")
        if "node" not in data:
            raise ValueError("expectation.node: missing; give the node name as Slurm knows it")
        for name, value in data.items():
            _check_type(name, value, known[name].type)
        return cls(**data)


_TYPES = {"str": (str,), "int": (int,), "bool": (bool,)}


def _check_type(name: str, value: Any, annotation: str) -> None:
    """Check one field against its annotation string ("str | None", "int", "bool")."""
    parts = [p.strip() for p in str(annotation).split("|")]
    if value is None:
        if "None" in parts:
            return
        raise ValueError(f"expectation.{name}: null is not allowed; give a {parts[0]}")
    allowed = tuple(t for p in parts if p in _TYPES for t in _TYPES[p])
    wrong_bool = isinstance(value, bool) and bool not in allowed
    if not isinstance(value, allowed) or wrong_bool:
        raise ValueError(f"expectation.{name}: {value!r} is not of type {' or '.join(parts)}")
