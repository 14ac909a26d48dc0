"""The node's checks, each a CheckResult under the pass's deadline; ids start with "health."."""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

from provision.certify.probe.nodehealth.config import HealthConfig
from provision.certify.probe.nodehealth.run import Deadline, run
from provision.certify.probe.records import CheckResult

MOUNTINFO = Path("/proc/self/mountinfo")


def munge(cfg: HealthConfig, deadline: Deadline) -> CheckResult:
    """munged answers: a credential made here decodes here."""
    made = run([cfg.commands["munge"], "-n"], deadline, cap_s=3.0)
    if made.ok:
        made = run([cfg.commands["unmunge"]], deadline, cap_s=3.0, stdin=made.stdout)
    verdict = "pass" if made.ok else "fail"
    return CheckResult("health.munge", verdict, node=cfg.node, threshold="munge -n | unmunge succeeds",
                       detail="" if made.ok else made.first_error())


def slurmd(cfg: HealthConfig, proc: Path = Path("/proc")) -> CheckResult:
    """slurmd runs: a process of this node is called slurmd. (Its pid file is no witness: Slurm 24.11's slurmd,
    started with --systemd, writes none.)"""
    running = any(_comm(entry) == "slurmd" for entry in _processes(proc))
    return CheckResult("health.slurmd", "pass" if running else "fail", node=cfg.node, threshold="slurmd running",
                       detail="" if running else "no slurmd process is running")


def _processes(proc: Path) -> list[Path]:
    """The /proc entries of processes (numeric names)."""
    try:
        return [entry for entry in proc.iterdir() if entry.name.isdigit()]
    except OSError:
        return []


def _comm(entry: Path) -> str:
    """A process's command name, or "" once it has gone."""
    try:
        return (entry / "comm").read_text().strip()
    except OSError:
        return ""


def mounted(mountinfo: str) -> set[str]:
    """Mount points listed in a mountinfo text (octal escapes decoded)."""
    points = set()
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4:
            points.add(fields[4].encode().decode("unicode_escape"))
    return points


def mounts(cfg: HealthConfig, deadline: Deadline, mountinfo: Path = MOUNTINFO) -> list[CheckResult]:
    """Each shared filesystem is mounted and answers a stat within the deadline (a hung mount fails, not hangs)."""
    try:
        points = mounted(mountinfo.read_text())
    except OSError:
        points = set()
    results = []
    for point in cfg.mounts:
        detail = ""
        if point not in points:
            detail = f"{point} is not mounted"
        else:
            answer = run([cfg.commands["stat"], "-f", "-c", "%T", point], deadline, cap_s=3.0)
            detail = "" if answer.ok else f"{point}: {answer.first_error()}"
        results.append(CheckResult("health.mount", "fail" if detail else "pass", node=cfg.node, subject=point,
                                   threshold="mounted and answering", detail=detail))
    return results


def sha1(path: Path) -> str | None:
    """SHA-1 of a file's bytes; None when it cannot be read."""
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except OSError:
        return None


SETTLE_S = 600.0  # a file rewritten after the health config, this recently, is a deploy still under way


def config_files(cfg: HealthConfig, now: float | None = None) -> CheckResult:
    """The cluster-wide files are what the deploy rendered (the same on every node). A deploy writes them a few tasks
    before this config: a file newer than the config and younger than SETTLE_S only warns (a drift stays a drift and
    fails once it is older)."""
    now = time.time() if now is None else now
    differ, settling = [], []
    for path, expected in sorted(cfg.files.items()):
        found = sha1(Path(path))
        if found == expected:
            continue
        line = f"{path} {'missing' if found is None else 'sha1 ' + found[:12]} (deployed {expected[:12]})"
        mtime = _mtime(Path(path))
        (settling if mtime > cfg.written and now - mtime < SETTLE_S else differ).append(line)
    verdict = "fail" if differ else ("warn" if settling else "pass")
    detail = "; ".join(differ + [f"{line}, rewritten after the health config: a deploy under way?" for line in settling])
    return CheckResult("health.config", verdict, node=cfg.node, value=len(differ), unit="files differ",
                       threshold="identical to the deployed files", detail=detail)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
