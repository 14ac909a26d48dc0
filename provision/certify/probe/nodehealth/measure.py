"""The active checks' measurements on this node, each judged against its floor (nodehealth.active decides when and
where they run, and acts on the verdicts).

- active.net: the node's links to a few other compute nodes, iperf3 TCP both ways to each; judged by the median of
  every direction measured, so one slow peer or one busy moment does not decide it (a node is judged by all its
  links). A peer whose server is busy (another node's pass) is replaced by the next.
- active.memory_bw: host memory copy bandwidth (a buffer copied in place, read and write counted).
- active.fs[<mount>]: write, fsync, drop the cache and read back a file on each shared filesystem (the probe's own
  code, certify.probe.fs), its checksum compared; the slower of the two rates is judged.
- On GPU nodes, active.gpu_gemm[gpuN] (gpubench, the probe's benchmark) and the DCGM diagnostic (level 1 quick, 2
  standard), as certify judges them.

A fail is a fault seen twice: a figure below its floor is measured again (the network with other peers where there are
any) and judged by the better figure. Below both times: fail, "confirmed: X then Y". Once: a warning naming both.
"""
from __future__ import annotations

import json
import random
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from provision.certify.probe import bench, dcgm, fs
from provision.certify.probe.nodehealth.config import ActiveConfig, HealthConfig
from provision.certify.probe.nodehealth.run import Deadline, run
from provision.certify.probe.records import CheckResult

SECONDS = {"quick": 2, "standard": 5}  # iperf3 -t of one direction
MEMORY_MIB = {"quick": 128, "standard": 512}
FS_MIB = {"quick": 16, "standard": 256}
DEFAULT_FLOORS = {"active.memory_bw": 1.0, "active.fs": 5.0}  # GB/s, MB/s: see README "Active checks"
BUSY = "busy"  # what iperf3 says when its server runs another test


# What iperf3 says when the path to a peer is broken (a fault of the link); anything else that leaves no figure (a
# server busy with another pass, one not running yet: "Connection refused" proves the path works, iperf3 missing
# here) says nothing about the link.
LINK_ERRORS = ("timed out", "no route", "unreachable", "did not finish", "reset by peer", "closed unexpectedly")


@dataclass(frozen=True)
class Figure:
    """One measurement: the value (None: nothing measured) and what it was measured over, or why it failed;
    `unmeasured` when nothing could be measured for a reason that is no fault of the node (never a fail)."""

    value: float | None
    over: str = ""
    error: str = ""
    unmeasured: bool = False


def measure_all(cfg: HealthConfig, rng: random.Random | None = None) -> list[CheckResult]:
    """Every active check that applies to this node."""
    active = cfg.active
    if active is None:
        return []
    rng = rng or random.Random()
    checks = [network(cfg, active, rng), memory(cfg, active)] + filesystems(cfg, active)
    if cfg.gpu is not None and cfg.gpu.count > 0:
        checks += gpu_checks(cfg, active)
    return checks


def confirmed_check(check: str, node: str, unit: str, floor: float, measure: Callable[[int], Figure],
                    subject: str | None = None, source: str = "") -> CheckResult:
    """Judge `measure(0)` against the floor; below it, `measure(1)` too, and the better figure decides."""
    base = dict(node=node, subject=subject, unit=unit, threshold=floor, source=source)
    first = measure(0)
    if first.value is not None and first.value >= floor:
        return CheckResult(check, "pass", value=round(first.value, 4), detail=first.over, **base)
    if first.unmeasured:
        return CheckResult(check, "warn", detail=f"not measured: {first.error}", **base)
    again = measure(1)
    values = [f.value for f in (first, again) if f.value is not None]
    best = max(values) if values else None
    figures = f"{_say(first)} then {_say(again)} {unit} (floor {floor:g})"
    if best is not None and best >= floor:
        return CheckResult(check, "warn", value=round(best, 4), detail=f"not confirmed: {figures}; {again.over}", **base)
    why = "; ".join(filter(None, [again.over, again.error or first.error]))
    return CheckResult(check, "fail", value=None if best is None else round(best, 4),
                       detail=f"confirmed: {figures}; {why}", **base)


def _say(figure: Figure) -> str:
    return "no figure" if figure.value is None else f"{figure.value:.3g}"


def network(cfg: HealthConfig, active: ActiveConfig, rng: random.Random) -> CheckResult:
    """active.net: the median of the node's measured directions against net_min_gbps; measured again with other
    peers (where the cluster has more) before a fail stands."""
    peers = [p for p in active.peers if p[0] != cfg.node]
    if not peers:
        return CheckResult("active.net", "na", node=cfg.node, detail="no other compute node to measure a link to")
    order = rng.sample(peers, len(peers))
    again = order[active.count:] + order[:active.count]  # the second look prefers the peers the first did not take

    def measure(attempt: int) -> Figure:
        return links(cfg, active, order if attempt == 0 else again)
    return confirmed_check("active.net", cfg.node, "Gb/s", active.net_min_gbps, measure, source="iperf3 TCP, both ways")


def links(cfg: HealthConfig, active: ActiveConfig, candidates: list[tuple[str, str]]) -> Figure:
    """iperf3 both ways to `active.count` peers of `candidates` (a busy one replaced by the next)."""
    figures: list[float] = []
    measured: list[str] = []
    errors: list[str] = []
    unavailable: list[str] = []
    for name, address in candidates:
        if len(measured) == active.count:
            break
        both = [iperf3(cfg, active, address, reverse) for reverse in (False, True)]
        if not any(value is not None or link_fault(error) for value, error in both):
            unavailable.append(f"{name}: {next(e for _, e in both if e)}")
            continue
        figures += [value for value, _ in both if value is not None]
        errors += [f"{name}: {error}" for value, error in both if value is None]
        measured.append(name)
    if not figures and not errors:
        return Figure(None, error="no peer could be measured (" + "; ".join(unavailable) + ")", unmeasured=True)
    if not figures:
        return Figure(None, error="; ".join(errors))
    value = statistics.median(figures)
    return Figure(value, over=f"median {value:.3g} Gb/s of {len(figures)} directions to {', '.join(measured)}",
                  error="; ".join(errors))


def link_fault(error: str) -> bool:
    """Whether iperf3's error says the path to the peer is broken (LINK_ERRORS)."""
    return any(word in error.lower() for word in LINK_ERRORS)


def iperf3(cfg: HealthConfig, active: ActiveConfig, address: str, reverse: bool) -> tuple[float | None, str]:
    """(received Gb/s, "") or (None, why): one direction to the peer's server."""
    seconds = SECONDS.get(active.level, 2)
    argv = [cfg.commands["iperf3"], "-c", address, "-p", str(active.port), "-t", str(seconds), "-J",
            "--connect-timeout", "3000"] + (["-b", active.bitrate] if active.bitrate else []) + (["-R"] if reverse else [])
    done = run(argv, Deadline(seconds + 10), cap_s=seconds + 10)
    return parse_iperf3(done.stdout, done.rc, done.stderr)


def parse_iperf3(text: str, rc: int | None, stderr: str = "") -> tuple[float | None, str]:
    """iperf3 -J's received bits per second as Gb/s, or why there is none (BUSY when its server runs another test)."""
    try:
        doc = json.loads(text) if text.strip() else {}
    except ValueError:
        doc = {}
    error = str(doc.get("error") or "") if isinstance(doc, dict) else ""
    if "busy" in error.lower():
        return None, BUSY
    try:
        bits = float(doc["end"]["sum_received"]["bits_per_second"])
    except (KeyError, TypeError, ValueError):
        if rc is None:
            return None, "iperf3 did not finish"
        said = error or next(iter(stderr.strip().splitlines()[-1:]), "") or f"exit {rc}"
        return None, said[:160]
    return bits / 1e9, ""


def memory(cfg: HealthConfig, active: ActiveConfig) -> CheckResult:
    """active.memory_bw: a buffer copied a few times; bytes read and written per second."""
    size = MEMORY_MIB.get(active.level, 128) * 1024 * 1024
    floor = active.floors.get("active.memory_bw", DEFAULT_FLOORS["active.memory_bw"])

    def measure(_: int) -> Figure:
        value = copy_bandwidth(size)
        return Figure(value, over=f"best of 3 copies of {size >> 20} MiB")
    return confirmed_check("active.memory_bw", cfg.node, "GB/s", floor, measure, source="in-place copy, read + write")


def copy_bandwidth(size: int, rounds: int = 3) -> float:
    """GB/s of the best of `rounds` copies of a `size`-byte buffer (each byte read once and written once)."""
    source, target = bytearray(size), bytearray(size)
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        target[:] = source
        best = min(best, time.perf_counter() - began)
    return 2 * size / max(best, 1e-9) / 1e9


def filesystems(cfg: HealthConfig, active: ActiveConfig) -> list[CheckResult]:
    """active.fs[<mount>] for each shared filesystem the node must have."""
    floor = active.floors.get("active.fs", DEFAULT_FLOORS["active.fs"])
    size = FS_MIB.get(active.level, 16)
    out = []
    for mount in cfg.mounts:
        def measure(attempt: int, mount: str = mount) -> Figure:
            return fs_figure(mount, cfg.node, f"active-{cfg.node}-{attempt}", size)
        out.append(confirmed_check("active.fs", cfg.node, "MB/s", floor, measure, subject=mount,
                             source="write, fsync, read back"))
    return out


def fs_figure(mount: str, node: str, run_id: str, size_mib: int) -> Figure:
    """The slower of write and read rates of one file, None when it failed or read back other bytes."""
    try:
        found = fs.write_and_read(mount, node, run_id, size_mib)
    finally:
        shutil.rmtree(fs.run_dir(mount, run_id), ignore_errors=True)
    if found.get("error"):
        return Figure(None, error=str(found["error"]))
    if found.get("sha256_read") != found.get("sha256_written"):
        return Figure(None, error=f"{size_mib} MiB read back differ from what was written")
    value = min(found["write_mb_s"], found["read_mb_s"])
    return Figure(value, over=f"{size_mib} MiB: write {found['write_mb_s']:.3g} MB/s, read {found['read_mb_s']:.3g} "
                              "MB/s")


def gpu_checks(cfg: HealthConfig, active: ActiveConfig) -> list[CheckResult]:
    """GEMM on every GPU against the model's floor (certify's threshold table), then DCGM's diagnostic."""
    gpus = list(range(cfg.gpu.count))
    binary = bench.find_binary(cfg.commands.get("gpubench"))
    floor = active.floors.get("gpu.gemm_bf16")
    out: list[CheckResult] = []
    if binary is None:
        out.append(CheckResult("active.gpu_gemm", "fail", node=cfg.node, detail="gpubench is not installed"))
    elif floor is None:
        out.append(CheckResult("active.gpu_gemm", "na", node=cfg.node,
                               detail=f"no GEMM floor for {cfg.gpu.model} in certify's table"))
    else:
        for index in gpus:
            def measure(_: int, index: int = index) -> Figure:
                return gemm_figure(binary, index)
            out.append(confirmed_check("active.gpu_gemm", cfg.node, "TFLOP/s", floor, measure, subject=f"gpu{index}",
                                 source="gpubench bf16 GEMM; certify's table"))
    out += dcgm_checks(cfg, active)
    return out


def gemm_figure(binary: str, index: int) -> Figure:
    """One GPU's bf16 GEMM TFLOP/s from gpubench."""
    results, errors = bench.run(binary, [index], burn_seconds=0, timeout_s=120, sample=lambda: None)
    value = (results.get(index, {}).get("gemm_bf16") or {}).get("tflops")
    if isinstance(value, (int, float)) and value > 0:
        return Figure(float(value), over="gpubench bf16 GEMM")
    return Figure(None, error="; ".join(errors) or "gpubench printed no GEMM figure")


def dcgm_checks(cfg: HealthConfig, active: ActiveConfig) -> list[CheckResult]:
    """The DCGM diagnostic (level 1 quick, 2 standard) as certify's probe judges it, its ids under active."""
    argv = [cfg.commands["dcgmi"], *dcgm.command(active.level)[1:]]
    if shutil.which(argv[0]) is None:
        return [CheckResult("active.dcgm", "na", node=cfg.node, detail="dcgmi is not installed")]
    timeout = dcgm.TIMEOUT_S[active.level]
    done = run(argv, Deadline(timeout), cap_s=timeout)
    found = dcgm.judge_output(done.stdout, cfg.node, active.level, exit_code=done.rc, stderr=done.stderr)
    return [replace(c, check=f"active.dcgm.{c.check.removeprefix('dcgm.')}") for c in found]
