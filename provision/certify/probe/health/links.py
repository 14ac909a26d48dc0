"""Link health of one GPU: PCIe generation and width, NVLink state and errors, NVLink fabric registration.

What NVLink a GPU must show follows from its node (provision.certify.health.topology), not its name."""
from __future__ import annotations

from provision.certify.probe.nvml import (FABRIC_HEALTH_DEGRADED_BW_MASK, FABRIC_HEALTH_DEGRADED_BW_TRUE,
                                          FABRIC_STATE_COMPLETED, FABRIC_STATE_IN_PROGRESS, FABRIC_STATE_NOT_STARTED,
                                          FABRIC_STATE_NOT_SUPPORTED)
from provision.certify.probe.health.context import GpuContext
from provision.certify.probe.health.topology import NvlinkExpectation, fabric_state_name, nvlink_expectation
from provision.certify.probe.records import CheckResult

# PCIe generation of each architecture's GPUs (CERTIFY-FIGURES.md table, PCIe column; datasheets).
ARCH_PCIE_GEN = {"hopper": 5, "ampere": 4, "ada": 4}


def pcie_link(ctx: GpuContext) -> CheckResult:
    """Current generation and width at their maximum; judged strictly only under load (idle GPUs down-train)."""
    check = "gpu.pcie.link"
    for field in ("pcie_gen_max", "pcie_width_max", "pcie_gen_current", "pcie_width_current"):
        missing = ctx.unread(check, field)
        if missing:
            return missing
    gpu = ctx.gpu
    loaded = bool(ctx.load and ctx.load.samples)
    gen = (ctx.load.pcie_gen_max_seen if loaded else None) or gpu.pcie_gen_current
    width = (ctx.load.pcie_width_max_seen if loaded else None) or gpu.pcie_width_current
    value, threshold = f"Gen{gen} x{width}", f"Gen{gpu.pcie_gen_max} x{gpu.pcie_width_max}"
    source = "nvmlDeviceGetMaxPcieLinkGeneration/Width" + (" (sampled under load)" if loaded else " (idle)")
    replay = f"; {gpu.pcie_replay_count} PCIe replays" if gpu.pcie_replay_count else ""
    if width < gpu.pcie_width_max:
        verdict = "fail" if loaded else "warn"
        return ctx.result(check, verdict, value=value, threshold=threshold, source=source,
                          detail=f"link runs at x{width} of x{gpu.pcie_width_max}; reseat the GPU or check the riser"
                                 + replay)
    if gen < gpu.pcie_gen_max:
        if loaded:
            return ctx.result(check, "fail", value=value, threshold=threshold, source=source,
                              detail=f"link stayed at Gen{gen} under load (max Gen{gpu.pcie_gen_max})" + replay)
        return ctx.result(check, "pass", value=value, threshold=threshold, source=source,
                          detail="idle GPUs lower the link generation to save power; not judged without load" + replay)
    expected = ARCH_PCIE_GEN.get(ctx.model.architecture) if ctx.model else None
    if expected and gpu.pcie_gen_max < expected:
        return ctx.result(check, "warn", value=value, threshold=f"Gen{expected} x16", source=source,
                          detail=f"{ctx.model.key} supports Gen{expected} but the slot allows Gen{gpu.pcie_gen_max}")
    return ctx.result(check, "pass", value=value, threshold=threshold, source=source, detail=replay.lstrip("; "))


def _expectation(ctx: GpuContext) -> NvlinkExpectation:
    return nvlink_expectation(ctx.expect, ctx.model, ctx.switches, ctx.gpu.fabric_state)


def nvlink_links(ctx: GpuContext) -> CheckResult:
    """Every NVLink up where the node has an NVLink fabric; n/a where it cannot have one (see topology)."""
    check = "gpu.nvlink.links"
    need = _expectation(ctx)
    missing = ctx.unread(check, "nvlinks")
    if missing or not ctx.gpu.nvlinks:
        return _no_links(ctx, check, need, missing)
    links = ctx.gpu.nvlinks
    down = [link.link for link in links if not link.active]
    up = len(links) - len(down)
    base = dict(value=up, unit="links", threshold=f"{len(links)} up", source="nvmlDeviceGetNvLinkState")
    if not down:
        return ctx.result(check, "pass", **base, detail=need.reason)
    if ctx.expect.gpu_count <= 1 and not up:
        return ctx.result(check, "na", **base, detail=f"{need.reason}; its {len(links)} NVLinks are down, as expected")
    verdict = "fail" if need.required else "warn"
    extra = "" if need.required else "; no NVLink fabric is expected here: a bridge or direct link may be loose"
    return ctx.result(check, verdict, **base,
                      detail=f"links down: {', '.join(map(str, down))} ({need.reason}){extra}")


def _no_links(ctx: GpuContext, check: str, need: NvlinkExpectation, missing: CheckResult | None) -> CheckResult:
    """NVML reports no NVLink: a failure where the node has a fabric, n/a where it cannot have one."""
    if missing is not None and missing.verdict == "warn":
        return missing  # NVML failed to read the links: say so, whatever the node should have
    if need.required:
        return ctx.result(check, "fail", value=0, unit="links", threshold="all up", source="nvmlDeviceGetNvLinkState",
                          detail=f"{need.reason}, but NVML reports no NVLink on this GPU")
    if need.required is None:
        return ctx.result(check, "warn", value=0, unit="links", threshold="all up", source="nvmlDeviceGetNvLinkState",
                          detail=f"NVML reports no NVLink; {need.reason}")
    return ctx.result(check, "na", detail=f"no NVLink expected: {need.reason}")


def nvlink_errors(ctx: GpuContext) -> CheckResult:
    """NVLink data-link error counters since the driver loaded; any is worth a look."""
    check = "gpu.nvlink.errors"
    if not ctx.gpu.nvlinks:
        return ctx.result(check, "na", detail="this GPU reports no NVLink")
    totals: dict[str, int] = {}
    for link in ctx.gpu.nvlinks:
        for name, count in link.errors.items():
            totals[name] = totals.get(name, 0) + count
    total = sum(totals.values())
    source = "nvmlDeviceGetNvLinkErrorCounter (replay, recovery, CRC flit, CRC data)"
    if total:
        worst_links = [f"link {link.link}: {sum(link.errors.values())}" for link in ctx.gpu.nvlinks
                       if sum(link.errors.values())]
        breakdown = ", ".join(f"{k} {v}" for k, v in sorted(totals.items()) if v)
        return ctx.result(check, "warn", value=total, unit="errors", threshold="== 0", source=source,
                          detail=f"{breakdown} ({'; '.join(worst_links[:6])})")
    return ctx.result(check, "pass", value=0, unit="errors", threshold="== 0", source=source)


def nvlink_fabric(ctx: GpuContext) -> CheckResult:
    """A GPU NVML places on an NVLink fabric must have finished registering with it (fabric manager on HGX,
    the NVLink switch trays on GB200); state 0 means no fabric, which is n/a, not a failure."""
    check = "gpu.nvlink.fabric"
    missing = ctx.unread(check, "fabric_state")
    if missing:
        if missing.verdict == "na":
            return ctx.result(check, "na", detail="NVML does not report the fabric state (before Hopper, or an "
                                                  "old driver); NVLink health is judged by gpu.nvlink.links")
        return missing
    state, status = ctx.gpu.fabric_state, ctx.gpu.fabric_status
    source = "nvmlDeviceGetGpuFabricInfoV (state, status, healthMask)"
    if state == FABRIC_STATE_NOT_SUPPORTED:
        need = _expectation(ctx)
        why = (f"{need.reason}: NVLink health is judged by gpu.nvlink.links" if need.required
               else f"the GPU is on no NVLink fabric ({need.reason})")
        return ctx.result(check, "na", value=f"state {state}", source=source,
                          detail=f"fabric state 0 = not supported; {why}")
    if state in (FABRIC_STATE_NOT_STARTED, FABRIC_STATE_IN_PROGRESS):
        return ctx.result(check, "fail", value=fabric_state_name(state), threshold="completed", source=source,
                          detail=f"fabric registration {fabric_state_name(state)}: CUDA cannot use this GPU until "
                                 "it completes; check nvidia-fabricmanager (and nvlsm or the switch trays)")
    if state != FABRIC_STATE_COMPLETED:
        return ctx.result(check, "warn", value=f"state {state}", threshold="completed", source=source,
                          detail="unknown fabric state; a newer driver than this tool knows?")
    if status:
        return ctx.result(check, "fail", value=f"status {status}", threshold="success", source=source,
                          detail=f"fabric registration failed (NVML return code {status}); see the fabric manager log")
    mask = ctx.gpu.fabric_health_mask or 0
    if mask & FABRIC_HEALTH_DEGRADED_BW_MASK == FABRIC_HEALTH_DEGRADED_BW_TRUE:
        return ctx.result(check, "warn", value="completed, degraded bandwidth", threshold="completed", source=source,
                          detail=f"healthMask {mask:#x}: the fabric reports degraded bandwidth for this GPU")
    return ctx.result(check, "pass", value="completed", threshold="completed", source=source)


CHECKS = (pcie_link, nvlink_links, nvlink_errors, nvlink_fabric)
