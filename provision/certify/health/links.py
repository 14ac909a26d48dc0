"""Link health of one GPU: PCIe generation and width, NVLink state and errors, NVSwitch fabric."""
from __future__ import annotations

from provision.adaptors.nvml import FABRIC_STATE_COMPLETED
from provision.certify.health.context import GpuContext
from provision.certify.records import CheckResult

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


def nvlink_links(ctx: GpuContext) -> CheckResult:
    """Every NVLink up; NVSwitch boards must report links at all."""
    check = "gpu.nvlink.links"
    needs = bool(ctx.model and ctx.model.nvswitch)
    missing = ctx.unread(check, "nvlinks")
    if missing or not ctx.gpu.nvlinks:
        if needs and (missing is None or missing.verdict == "na"):
            return ctx.result(check, "fail", value=0, unit="links", threshold="all up",
                              detail=f"{ctx.model.key} sits on an NVSwitch board but NVML reports no NVLink")
        return missing or ctx.result(check, "na", detail="this GPU has no NVLink")
    links = ctx.gpu.nvlinks
    down = [link.link for link in links if not link.active]
    up = len(links) - len(down)
    source = "nvmlDeviceGetNvLinkState"
    if down:
        return ctx.result(check, "fail" if needs else "warn", value=up, unit="links", threshold=f"{len(links)} up",
                          source=source, detail=f"links down: {', '.join(map(str, down))}")
    return ctx.result(check, "pass", value=up, unit="links", threshold=f"{len(links)} up", source=source)


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
    """On NVSwitch systems the fabric manager must have finished registering the GPU."""
    check = "gpu.nvlink.fabric"
    if not (ctx.model and ctx.model.nvswitch):
        return ctx.result(check, "na", detail="no NVSwitch fabric for this model")
    missing = ctx.unread(check, "fabric_state")
    if missing:
        if missing.verdict == "na":
            return ctx.result(check, "na", detail="fabric state is not reported (before Hopper, or old driver)")
        return missing
    state, status = ctx.gpu.fabric_state, ctx.gpu.fabric_status
    source = "nvmlDeviceGetGpuFabricInfoV: state COMPLETED, status SUCCESS"
    if state != FABRIC_STATE_COMPLETED:
        return ctx.result(check, "fail", value=f"state {state}", threshold="completed", source=source,
                          detail="fabric registration not completed; check nvidia-fabricmanager on this node")
    if status != 0:
        return ctx.result(check, "fail", value=f"status {status}", threshold="success", source=source,
                          detail="fabric registration finished with an error; see the fabric manager log")
    return ctx.result(check, "pass", value="completed", threshold="completed", source=source)


CHECKS = (pcie_link, nvlink_links, nvlink_errors, nvlink_fabric)
