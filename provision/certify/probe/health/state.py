"""Operating state of one GPU: model, persistence, throttling, temperature, power, processes, MIG."""
from __future__ import annotations

from provision.certify.probe import nvml
from provision.certify.probe.health.context import GpuContext
from provision.certify.probe.records import CheckResult

THROTTLE_FAIL = {nvml.EVENT_HW_SLOWDOWN: "HW slowdown", nvml.EVENT_HW_THERMAL: "HW thermal slowdown",
                 nvml.EVENT_HW_POWER_BRAKE: "HW power brake"}
THROTTLE_WARN = {nvml.EVENT_SW_THERMAL: "SW thermal slowdown"}
THROTTLE_INFO = {nvml.EVENT_SW_POWER_CAP: "SW power cap", nvml.EVENT_GPU_IDLE: "idle",
                 nvml.EVENT_APP_CLOCKS: "application clocks", nvml.EVENT_SYNC_BOOST: "sync boost"}
TEMPERATURE_MARGIN_C = 5  # warn this close to the slowdown threshold
POWER_WARN, POWER_FAIL = 1.02, 1.10  # draw over the enforced limit (short spikes pass the warn band)


def model(ctx: GpuContext) -> CheckResult:
    """The GPU is the model the spec names (matched on nvmlDeviceGetName)."""
    check = "gpu.model"
    missing = ctx.unread(check, "name")
    if missing:
        return missing
    name = ctx.gpu.name
    if ctx.model is None:
        return ctx.result(check, "warn", value=name, threshold="none",
                          detail="the node has GPUs but its node group names no GPU model")
    ok = ctx.model.matches_nvml_name(name)
    source = f"spec gpu.model {ctx.model.key}; the GPU catalogue names {', '.join(ctx.model.nvml_names)}"
    return ctx.result(check, "pass" if ok else "fail", value=name, threshold=ctx.model.key, source=source,
                      detail="" if ok else f"expected a {ctx.model.description}")


def persistence(ctx: GpuContext) -> CheckResult:
    """Persistence mode on, as the driver role deploys it."""
    check = "gpu.persistence_mode"
    missing = ctx.unread(check, "persistence_mode")
    if missing:
        return missing
    on = ctx.gpu.persistence_mode
    want = ctx.expect.persistence
    verdict = "fail" if want and not on else "pass"
    return ctx.result(check, verdict, value="enabled" if on else "disabled", threshold="enabled" if want else "any",
                      source="nvmlDeviceGetPersistenceMode; driver role enables nvidia-persistenced",
                      detail="start nvidia-persistenced" if verdict == "fail" else "")


def throttle(ctx: GpuContext) -> CheckResult:
    """No hardware slowdown, thermal slowdown or power brake (now or at any sample under load)."""
    check = "gpu.throttle"
    missing = ctx.unread(check, "clocks_event_reasons")
    if missing:
        return missing
    reasons = ctx.gpu.clocks_event_reasons | (ctx.load.event_reasons if ctx.load else 0)
    fails = [text for bit, text in THROTTLE_FAIL.items() if reasons & bit]
    warns = [text for bit, text in THROTTLE_WARN.items() if reasons & bit]
    infos = [text for bit, text in THROTTLE_INFO.items() if reasons & bit]
    source = "nvmlDeviceGetCurrentClocksEventReasons"
    value = ", ".join(fails + warns + infos) or "none"
    if fails:
        return ctx.result(check, "fail", value=value, threshold="no HW slowdown", source=source,
                          detail="hardware throttling: check cooling, power supply and the BMC event log")
    if warns:
        return ctx.result(check, "warn", value=value, threshold="no HW slowdown", source=source)
    return ctx.result(check, "pass", value=value, threshold="no HW slowdown", source=source)


def temperature(ctx: GpuContext) -> CheckResult:
    """Hottest reading (idle or under load) below the GPU's slowdown threshold, with a margin."""
    check = "gpu.temperature"
    missing = ctx.unread(check, "temperature_c")
    if missing:
        return missing
    hottest = max(t for t in (ctx.gpu.temperature_c, ctx.load.temperature_max_c if ctx.load else None)
                  if t is not None)
    limit = ctx.gpu.temperature_slowdown_c
    if limit is None:
        return ctx.result(check, "na", value=hottest, unit="C", detail="NVML reports no slowdown threshold")
    source = "nvmlDeviceGetTemperatureThreshold(SLOWDOWN)"
    if hottest >= limit:
        verdict, detail = "fail", "at or above the slowdown threshold"
    elif hottest >= limit - TEMPERATURE_MARGIN_C:
        verdict, detail = "warn", f"within {TEMPERATURE_MARGIN_C} C of the slowdown threshold"
    else:
        verdict, detail = "pass", ""
    return ctx.result(check, verdict, value=hottest, unit="C", threshold=limit, source=source, detail=detail)


def power(ctx: GpuContext) -> CheckResult:
    """Highest draw (idle or under load) within the enforced power limit."""
    check = "gpu.power"
    for field in ("power_w", "power_limit_w"):
        missing = ctx.unread(check, field)
        if missing:
            return missing
    draw = max(p for p in (ctx.gpu.power_w, ctx.load.power_max_w if ctx.load else None) if p is not None)
    limit = ctx.gpu.power_limit_w
    source = "nvmlDeviceGetPowerUsage vs nvmlDeviceGetEnforcedPowerLimit"
    verdict = "fail" if draw > limit * POWER_FAIL else "warn" if draw > limit * POWER_WARN else "pass"
    return ctx.result(check, verdict, value=round(draw, 1), unit="W", threshold=round(limit, 1), source=source,
                      detail="" if verdict == "pass" else "draw above the enforced limit")


def processes(ctx: GpuContext) -> CheckResult:
    """No compute process left on the GPU before certification runs."""
    check = "gpu.processes"
    missing = ctx.unread(check, "compute_pids")
    if missing:
        return missing
    pids = ctx.gpu.compute_pids
    source = "nvmlDeviceGetComputeRunningProcesses"
    if pids:
        return ctx.result(check, "fail", value=len(pids), unit="processes", threshold="== 0", source=source,
                          detail=f"stray compute processes: pid {', '.join(map(str, pids))}")
    return ctx.result(check, "pass", value=0, unit="processes", threshold="== 0", source=source)


def mig(ctx: GpuContext) -> CheckResult:
    """MIG mode as expected, with no change waiting for a reset."""
    check = "gpu.mig"
    want = ctx.expect.mig
    threshold = "enabled" if want else "disabled"
    source = "nvmlDeviceGetMigMode"
    if "mig_current" in ctx.gpu.unsupported:
        verdict = "fail" if want else "pass"
        return ctx.result(check, verdict, value="unsupported", threshold=threshold, source=source,
                          detail="this GPU has no MIG" if want else "")
    missing = ctx.unread(check, "mig_current")
    if missing:
        return missing
    on = ctx.gpu.mig_current
    value = "enabled" if on else "disabled"
    if on != want:
        return ctx.result(check, "fail", value=value, threshold=threshold, source=source,
                          detail=f"MIG is {value}; the spec expects it {threshold}")
    if ctx.gpu.mig_pending != on:
        return ctx.result(check, "warn", value=value, threshold=threshold, source=source,
                          detail="a MIG mode change is pending a GPU reset")
    return ctx.result(check, "pass", value=value, threshold=threshold, source=source)

