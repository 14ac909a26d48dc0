"""GPU checks of a pass: NVML's view against the spec (count, readable, memory errors) and Xids new since the last
pass. A failing Xid stays failed until the node boots again (the GPU needs a reset or a reboot, not a retry)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from provision.certify.probe import health, nvml, system, xid
from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.nodehealth.config import HealthConfig
from provision.certify.probe.records import CheckResult

# The NVML checks that mean "take the node out" when they fail; the rest (clocks, temperature, processes) are
# certify's business under load, not a health pass beside a user's job.
DRAINING = ("gpu.nvml", "gpu.count", "gpu.readable", "gpu.model", "gpu.ecc.volatile_uncorrected",
            "gpu.row_remap.pending", "gpu.row_remap.failure")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def nvml_checks(cfg: HealthConfig, snapshot=nvml.snapshot) -> list[CheckResult]:
    """NVML against the spec's GPUs: only the draining checks, renamed health.gpu.*."""
    if cfg.gpu is None:
        return []
    expect = NodeExpectation(node=cfg.node, gpu_model=cfg.gpu.model or None, gpu_count=cfg.gpu.count)
    results = [r for r in health.evaluate(snapshot(), expect) if r.check in DRAINING]
    return [CheckResult(f"health.{r.check}", r.verdict if r.verdict == "fail" else "pass", node=cfg.node,
                        subject=r.subject, value=r.value, unit=r.unit, threshold=r.threshold, detail=r.detail)
            for r in results]


def boot_id(path: Path = BOOT_ID) -> str:
    """This boot's id ("" when unreadable)."""
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def xid_check(cfg: HealthConfig, memory: dict[str, Any], log_reader=system.read_kernel_log,
              this_boot: str | None = None) -> CheckResult:
    """Xids logged since the last pass, judged by the catalogue; `memory` (the record of the last pass, updated in
    place) holds how many were seen and a failure that stays until the next boot. The first pass ever takes what
    the log already holds as seen (certify judged it)."""
    this_boot = boot_id() if this_boot is None else this_boot
    try:
        text, source = log_reader(3.0)
    except system.KernelLogUnavailable as exc:
        return xid.unreadable(cfg.node, str(exc))
    events = xid.parse_xids(text)
    first = "xid_seen" not in memory
    if memory.get("boot_id") != this_boot and not first:
        memory.update(xid_seen=0, xid_failure="")
    seen = len(events) if first else min(memory.get("xid_seen", 0), len(events))
    judged = xid.evaluate(events[seen:], cfg.node, log_source=source)
    memory.update(boot_id=this_boot, xid_seen=len(events))
    if judged.verdict == "fail":
        memory["xid_failure"] = judged.detail
    sticky = memory.get("xid_failure", "")
    verdict = "fail" if sticky else ("pass" if judged.verdict != "warn" else "warn")
    return CheckResult("health.xid", verdict, node=cfg.node, value=len(events) - seen, unit="new Xids",
                       threshold=xid.THRESHOLD, detail=sticky or judged.detail, action=judged.action)
