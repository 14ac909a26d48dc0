"""Everything the probe does on one node, in order, returning the node's document (probe.document)."""
from __future__ import annotations

import contextlib
import socket
import time
from datetime import datetime, timezone

from provision.certify.probe import nvml
from provision.certify.probe import health, xid
from provision.certify.probe import PROBE_VERSION, bench, dcgm, fs, pci, software, system
from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.health import LoadSummary
from provision.certify.probe.records import CheckResult, Measurement

__all__ = ["PROBE_VERSION", "bench_again", "run", "verify_filesystem"]
BURN_SECONDS = {"quick": None, "standard": 0, "full": 1800}  # None: no GPU benchmark at this level
BENCH_TIMEOUT_S = 600.0  # per phase, on top of the burn-in


def now_iso() -> str:
    """UTC timestamp for documents."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run(expect: NodeExpectation, level: str, *, gpubench: str | None = None,
        burn_seconds: int | None = None) -> ProbeDocument:
    """GPU health (and benchmarks above quick), Xids, RDMA ports, shared filesystem: one document."""
    started, started_at = time.monotonic(), now_iso()
    burn = BURN_SECONDS[level] if burn_seconds is None or level == "quick" else burn_seconds
    snap, load, bench_check, measurements, bench_doc = _gpus(expect, burn, gpubench)
    switches = pci.scan()
    checks = health.evaluate(snap, expect, load, switches) + [bench_check, *_dcgm(expect, level, snap),
                                                              _xids(expect, snap)]
    ports = system.rdma_ports()
    checks.append(system.check_rdma(ports, expect))
    fs_doc, fs_checks, fs_measurements = _filesystem(expect)
    return ProbeDocument(mode="probe", node=expect.node, hostname=socket.gethostname(), level=level,
                         run_id=expect.run_id, started_at=started_at, nvml=snap.to_dict(), gpubench=bench_doc,
                         rdma=tuple(ports), fs=fs_doc, nvswitches=switches.to_dict(),
                         software=software.read().to_dict(),
                         checks=tuple(checks + fs_checks), measurements=tuple(measurements + fs_measurements),
                         duration_s=round(time.monotonic() - started, 1))


def bench_again(expect: NodeExpectation, level: str, *, gpubench: str | None = None) -> ProbeDocument:
    """The GPU benchmarks alone, without burn-in (the GPUs are warm from the first run): measured again where a
    figure of the first run failed (certify.judging.confirm)."""
    started, started_at = time.monotonic(), now_iso()
    _, _, check, measurements, bench_doc = _gpus(expect, 0, gpubench)
    return ProbeDocument(mode="bench", node=expect.node, hostname=socket.gethostname(), level=level,
                         run_id=expect.run_id, started_at=started_at, gpubench=bench_doc, checks=(check,),
                         measurements=tuple(measurements), duration_s=round(time.monotonic() - started, 1))


def verify_filesystem(expect: NodeExpectation) -> ProbeDocument:
    """Second pass after every node wrote: read all files of the run and compare checksums."""
    return ProbeDocument(mode="fs-verify", node=expect.node, run_id=expect.run_id, started_at=now_iso(),
                         fs_verify=fs.verify(expect.fs_mount, expect.run_id) if expect.fs_mount else None)


def _gpus(expect: NodeExpectation, burn: int | None, binary: str | None):
    """NVML snapshot (after any load), load summaries, the bench check, measurements, raw bench results."""
    with contextlib.ExitStack() as stack:
        try:
            session = stack.enter_context(nvml.Session())
            snap = session.snapshot()
        except nvml.NvmlUnavailable as exc:
            snap = nvml.NvmlSnapshot(available=False, reason=str(exc))
            return snap, {}, _bench_check(expect, "na", f"no GPU benchmark: {exc}"), [], None
        if burn is None or not snap.gpus:
            why = "quick level runs no GPU benchmark" if burn is None else "no GPU visible"
            return snap, {}, _bench_check(expect, "na", why), [], None
        path = bench.find_binary(binary)
        if path is None:
            verdict = "fail" if expect.gpu_count else "na"
            return snap, {}, _bench_check(expect, verdict, "gpubench binary not found; the certify role builds it "
                                                           "with nvcc (or pass --gpubench PATH)"), [], None
        indices = [g.index for g in snap.gpus if not g.error]
        load = {i: LoadSummary() for i in indices}

        def sample() -> None:
            for index in indices:
                load[index].add(session.live(index))

        results, errors = bench.run(path, indices, burn_seconds=burn, timeout_s=burn + BENCH_TIMEOUT_S,
                                    sample=sample)
        after = session.snapshot()
    context = {g.index: {"gpu_model": expect.gpu_model, "pcie_gen": g.pcie_gen_max, "pcie_width": g.pcie_width_max}
               for g in after.gpus}
    measurements = bench.measurements(expect.node, results, context)
    check = _bench_check(expect, "fail" if errors else "pass",
                         "; ".join(errors) or f"ran on {len(indices)} GPUs (burn-in {burn} s)")
    return after, load, check, measurements, {"binary": path, "errors": errors, "results": results}


def _bench_check(expect: NodeExpectation, verdict: str, detail: str) -> CheckResult:
    return CheckResult("gpu.bench", verdict, node=expect.node, source="gpubench (cuBLAS GEMM, copies)",
                       detail=detail)


def _dcgm(expect: NodeExpectation, level: str, snap: nvml.NvmlSnapshot) -> list[CheckResult]:
    """DCGM's diagnostic, after gpubench (idle GPUs) and before the Xid read (so Xids it provokes are seen)."""
    return dcgm.run(expect, level, has_gpus=bool(expect.gpu_count or (snap.available and snap.gpus)))


def _xids(expect: NodeExpectation, snap: nvml.NvmlSnapshot) -> CheckResult:
    """Xids since boot, mapped to GPU indices by PCI address."""
    if not expect.gpu_count and not (snap.available and snap.gpus):
        return CheckResult("gpu.xid", "na", node=expect.node, detail="no GPU on this node")
    try:
        text, command = system.read_kernel_log()
    except system.KernelLogUnavailable as exc:
        return xid.unreadable(expect.node, str(exc))
    by_pci = {g.pci_bus_id: g.index for g in snap.gpus if g.pci_bus_id}
    return xid.evaluate(xid.parse_xids(text), expect.node, gpu_by_pci=by_pci, log_source=command)


def _filesystem(expect: NodeExpectation) -> tuple[dict | None, list[CheckResult], list[Measurement]]:
    """Write and read back this node's file on the shared mount."""
    if not expect.fs_mount:
        return None, [CheckResult("fs.write", "na", node=expect.node, detail="no shared filesystem in the spec")], []
    mounted = _mount_check(expect)
    if mounted is not None and mounted.verdict == "fail":
        return {"mount": expect.fs_mount, "error": mounted.detail}, [mounted], []
    result = fs.write_and_read(expect.fs_mount, expect.node, expect.run_id, expect.fs_size_mib)
    first = [mounted] if mounted else []
    if result["error"]:
        return result, first + [CheckResult("fs.write", "fail", node=expect.node, subject=expect.fs_mount,
                                            detail=result["error"])], []
    same = result["sha256_written"] == result["sha256_read"]
    checks = first + [CheckResult("fs.write", "pass", node=expect.node, subject=expect.fs_mount,
                                  value=result["size_bytes"], unit="bytes"),
                      CheckResult("fs.readback", "pass" if same else "fail", node=expect.node,
                                  subject=expect.fs_mount, value=result["sha256_read"][:16],
                                  threshold=result["sha256_written"][:16], source="SHA-256 of the written content",
                                  detail="" if same else "the file read back differs from what was written")]
    measurements = [Measurement(metric, expect.node, result[key], "MB/s", subject=expect.fs_mount)
                    for metric, key in (("fs.write_bw", "write_mb_s"), ("fs.read_bw", "read_mb_s"))]
    return result, checks, measurements


def _mount_check(expect: NodeExpectation) -> CheckResult | None:
    """fs.mount: the shared filesystem of the spec's type is mounted (None when no type is expected).

    Without it a node whose mount is gone would write into the empty directory beneath, and the other
    nodes would be blamed for not seeing its file."""
    if not expect.fs_type or not expect.fs_mount:
        return None
    found = fs.mount_type(expect.fs_mount)
    wanted = fs.MOUNT_TYPES.get(expect.fs_type, (expect.fs_type,))
    base = dict(node=expect.node, subject=expect.fs_mount, value=found, threshold=" or ".join(wanted),
                source="/proc/self/mounts")
    if found in wanted:
        return CheckResult("fs.mount", "pass", **base)
    why = (f"nothing is mounted on {expect.fs_mount}" if found is None
           else f"{expect.fs_mount} is a {found} mount, not {expect.fs_type}")
    return CheckResult("fs.mount", "fail", **base, detail=f"{why}: run `mount {expect.fs_mount}` on the node "
                                                         "(or `provision deploy --tags filesystem`)")
