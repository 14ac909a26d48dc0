"""The probe's document: what one node reports, as one JSON line on the probe's stdout and as a typed record on both
sides. The probe builds it (collect.py); the control side reads it back (`from_dict`) and judges it.

Four kinds: "probe" (the node's checks and measurements and the raw readings behind them), "fs-verify" (the
second pass that reads every node's file of the run), "bench" (the GPU benchmarks alone, measured again where a
figure failed: gpu.bench and the benchmark measurements) and "error" (the probe could not run, or the control side
could not get a document from it: `error` says why). A document of another PROBE_VERSION keeps only its header,
so a node running other code is reported as such instead of being misread.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from provision.certify.probe import PROBE_VERSION
from provision.certify.probe.records import CheckResult, Measurement
from provision.certify.probe.system import RdmaPort

MODES = ("probe", "fs-verify", "bench", "error")
_HEADER = ("probe_version", "mode", "node", "hostname", "level", "run_id", "started_at", "duration_s", "error")


@dataclass(frozen=True)
class ProbeDocument:
    """One node's report. Raw readings (nvml, gpubench, fs, fs_verify, nvswitches, software) stay plain data."""

    mode: str  # one of MODES
    probe_version: int | None = PROBE_VERSION
    node: str | None = None
    hostname: str | None = None
    level: str | None = None
    run_id: str | None = None
    started_at: str | None = None
    nvml: dict | None = None  # NvmlSnapshot.to_dict()
    gpubench: dict | None = None  # the benchmark binary, its errors and raw results
    rdma: tuple[RdmaPort, ...] = ()
    fs: dict | None = None  # fs.write_and_read(): path, sizes, checksums, rates, error
    nvswitches: dict | None = None  # NvSwitchScan.to_dict()
    fs_verify: dict | None = None  # fs.verify(): every node's file of the run, read back
    software: dict | None = None  # software.SoftwareInventory.to_dict(): kernel, OS, Slurm, NCCL
    checks: tuple[CheckResult, ...] = ()
    measurements: tuple[Measurement, ...] = ()
    duration_s: float | None = None
    error: str | None = None  # mode "error": why there is no report; else checks that could not be read

    @classmethod
    def failed(cls, error: str, node: str | None = None) -> ProbeDocument:
        """A node without a report, and why."""
        return cls(mode="error", node=node, error=error)

    @property
    def current(self) -> bool:
        """A probe report of this code's version, whose checks could all be read."""
        return self.mode == "probe" and self.probe_version == PROBE_VERSION and self.error is None

    @property
    def current_version(self) -> bool:
        """A document of this code's version whose checks could all be read (any kind)."""
        return self.probe_version == PROBE_VERSION and self.error is None

    @property
    def fs_written(self) -> bool:
        """The node wrote its file to the shared filesystem."""
        return bool(self.fs) and not self.fs.get("error")

    @property
    def nvml_gpu_count(self) -> int | None:
        """How many GPUs NVML listed; None when NVML was not available."""
        return len(self.nvml.get("gpus") or []) if self.nvml and self.nvml.get("available") else None

    def active_rdma_ports(self) -> list[RdmaPort]:
        """RDMA ports whose state is ACTIVE."""
        return [p for p in self.rdma if p.state == "ACTIVE"]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON; fields without a value are left out."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, tuple):
                out[item.name] = [v.to_dict() for v in value]
            elif value is not None:
                out[item.name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeDocument:
        """Read a document back; one of another version keeps its header, unreadable checks are named in `error`."""
        if not isinstance(data, dict) or data.get("mode") not in MODES:
            return cls.failed("the probe's output is not a probe document")
        header = {key: data.get(key) for key in _HEADER if key in data}
        if data.get("probe_version") != PROBE_VERSION:
            return cls(**header)
        body = {key: data.get(key) for key in ("nvml", "gpubench", "fs", "nvswitches", "fs_verify", "software")}
        try:
            typed = {"checks": tuple(CheckResult.from_dict(c) for c in data.get("checks", [])),
                     "measurements": tuple(Measurement.from_dict(m) for m in data.get("measurements", [])),
                     "rdma": tuple(RdmaPort(**p) for p in data.get("rdma", []))}
        except (TypeError, ValueError) as exc:
            return cls(**header, **body, error=f"unreadable probe checks: {exc}")
        return cls(**header, **body, **typed)
