"""What every per-GPU health check needs: the node, the expected model, the load samples, and helpers."""
from __future__ import annotations

from dataclasses import dataclass

from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.gpus import GpuModel
from provision.certify.probe.nvml import GpuRecord, LiveSample
from provision.certify.probe.pci import NvSwitchScan
from provision.certify.probe.records import CheckResult, Scalar


@dataclass
class LoadSummary:
    """The worst of what was sampled on one GPU while the benchmark loaded it."""

    samples: int = 0
    pcie_gen_max_seen: int | None = None
    pcie_width_max_seen: int | None = None
    event_reasons: int = 0  # OR of every sample's clock event reasons
    temperature_max_c: int | None = None
    power_max_w: float | None = None

    def add(self, sample: LiveSample) -> None:
        """Fold one live sample in."""
        self.samples += 1
        self.pcie_gen_max_seen = _max(self.pcie_gen_max_seen, sample.pcie_gen_current)
        self.pcie_width_max_seen = _max(self.pcie_width_max_seen, sample.pcie_width_current)
        self.event_reasons |= sample.clocks_event_reasons or 0
        self.temperature_max_c = _max(self.temperature_max_c, sample.temperature_c)
        self.power_max_w = _max(self.power_max_w, sample.power_w)


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


@dataclass
class GpuContext:
    """One GPU being judged: where it is, what it should be, how it behaved under load."""

    node: str
    expect: NodeExpectation
    model: GpuModel | None
    gpu: GpuRecord
    load: LoadSummary | None = None
    switches: NvSwitchScan | None = None  # the node's PCI bus; None when it was not scanned

    @property
    def subject(self) -> str:
        """How the report names this GPU."""
        return f"gpu{self.gpu.index}"

    def result(self, check: str, verdict: str, *, value: Scalar = None, unit: str | None = None,
               threshold: Scalar = None, source: str | None = None, detail: str = "") -> CheckResult:
        """A CheckResult about this GPU."""
        return CheckResult(check=check, verdict=verdict, node=self.node, subject=self.subject, value=value,
                           unit=unit, threshold=threshold, source=source, detail=detail)

    def unread(self, check: str, field: str) -> CheckResult | None:
        """n/a when the field is unsupported, warn when reading it failed; None when it has a value."""
        if field in self.gpu.unsupported:
            return self.result(check, "na", detail=f"{field} is not supported by this GPU or driver")
        if field in self.gpu.errors:
            return self.result(check, "warn", detail=f"NVML could not read {field}: {self.gpu.errors[field]}")
        if getattr(self.gpu, field) is None:
            return self.result(check, "warn", detail=f"{field} was not read")
        return None
