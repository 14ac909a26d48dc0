"""Memory health of one GPU: ECC mode and volatile uncorrectable errors, row remapping, retired pages."""
from __future__ import annotations

from provision.certify.probe.health.context import GpuContext
from provision.certify.probe.records import CheckResult

# DCGM treats this many retired pages as the replacement limit (DCGM_LIMIT_MAX_RETIRED_PAGES).
RETIRED_PAGES_LIMIT = 60


def ecc_mode(ctx: GpuContext) -> CheckResult:
    """ECC must be on (and stay on after the next reset) when the expectation asks for it."""
    check = "gpu.ecc.mode"
    missing = ctx.unread(check, "ecc_enabled")
    if missing:
        return missing
    want = ctx.expect.ecc
    on, pending = ctx.gpu.ecc_enabled, ctx.gpu.ecc_pending_enabled
    state = "enabled" if on else "disabled"
    threshold = "enabled" if want else "any"
    source = "expectation: ECC on for datacenter GPUs (nvmlDeviceGetEccMode)"
    if want and not on:
        return ctx.result(check, "fail", value=state, threshold=threshold, source=source,
                          detail="ECC is off; enable it with `nvidia-smi -e 1` and reset the GPU")
    if want and pending is False:
        return ctx.result(check, "warn", value=state, threshold=threshold, source=source,
                          detail="ECC will be off after the next GPU reset (pending mode disabled)")
    return ctx.result(check, "pass", value=state, threshold=threshold, source=source)


def ecc_volatile_uncorrected(ctx: GpuContext) -> CheckResult:
    """No uncorrectable ECC error since the driver loaded."""
    check = "gpu.ecc.volatile_uncorrected"
    missing = ctx.unread(check, "ecc_volatile_uncorrected")
    if missing:
        return missing
    count = ctx.gpu.ecc_volatile_uncorrected
    source = "nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE); any is a failure"
    if count:
        return ctx.result(check, "fail", value=count, unit="errors", threshold="== 0", source=source,
                          detail=f"{count} uncorrectable ECC errors since the driver loaded; drain and reset the GPU")
    return ctx.result(check, "pass", value=0, unit="errors", threshold="== 0", source=source)


def row_remap_pending(ctx: GpuContext) -> CheckResult:
    """A row remap waiting for a GPU reset means a faulty row is still in use."""
    check = "gpu.row_remap.pending"
    missing = ctx.unread(check, "remap_pending")
    if missing:
        return _pre_ampere(ctx, check, missing)
    source = "nvmlDeviceGetRemappedRows: pending must be 0"
    if ctx.gpu.remap_pending:
        return ctx.result(check, "fail", value=True, threshold="false", source=source,
                          detail="a row remap is pending; reset the GPU to apply it")
    return ctx.result(check, "pass", value=False, threshold="false", source=source,
                      detail=f"{ctx.gpu.remapped_rows_uncorrectable or 0} rows remapped for uncorrectable errors, "
                             f"{ctx.gpu.remapped_rows_correctable or 0} for correctable")


def row_remap_failure(ctx: GpuContext) -> CheckResult:
    """A failed remap (no spare rows left) means the GPU must be replaced."""
    check = "gpu.row_remap.failure"
    missing = ctx.unread(check, "remap_pending")
    if missing:
        return _pre_ampere(ctx, check, missing)
    source = "nvmlDeviceGetRemappedRows: failure must be 0"
    if ctx.gpu.remap_failure:
        return ctx.result(check, "fail", value=True, threshold="false", source=source,
                          detail="row remapping failed (no spare rows); the GPU needs replacement")
    return ctx.result(check, "pass", value=False, threshold="false", source=source)


def retired_pages(ctx: GpuContext) -> CheckResult:
    """Pre-Ampere GPUs retire pages instead of remapping rows: none pending, fewer than the RMA limit."""
    check = "gpu.retired_pages"
    if "remap_pending" not in ctx.gpu.unsupported:
        return ctx.result(check, "na", detail="this GPU remaps rows instead of retiring pages")
    missing = ctx.unread(check, "retired_pages_dbe")
    if missing:
        return missing
    total = (ctx.gpu.retired_pages_dbe or 0) + (ctx.gpu.retired_pages_sbe or 0)
    source = f"nvmlDeviceGetRetiredPages; DCGM replacement limit {RETIRED_PAGES_LIMIT} pages"
    if ctx.gpu.retired_pages_pending:
        return ctx.result(check, "fail", value=total, unit="pages", threshold=f"< {RETIRED_PAGES_LIMIT}",
                          source=source, detail="a page retirement is pending; reset the GPU")
    if total >= RETIRED_PAGES_LIMIT:
        return ctx.result(check, "fail", value=total, unit="pages", threshold=f"< {RETIRED_PAGES_LIMIT}",
                          source=source, detail="retired pages reached the replacement limit")
    verdict = "warn" if ctx.gpu.retired_pages_dbe else "pass"
    return ctx.result(check, verdict, value=total, unit="pages", threshold=f"< {RETIRED_PAGES_LIMIT}",
                      source=source, detail=f"{ctx.gpu.retired_pages_dbe or 0} retired for double-bit errors")


def _pre_ampere(ctx: GpuContext, check: str, missing: CheckResult) -> CheckResult:
    """Row remapping is unsupported before Ampere: say so instead of a bare n/a."""
    if missing.verdict == "na":
        return ctx.result(check, "na", detail="row remapping is not supported (pre-Ampere GPU: see gpu.retired_pages)")
    return missing


CHECKS = (ecc_mode, ecc_volatile_uncorrected, row_remap_pending, row_remap_failure, retired_pages)
