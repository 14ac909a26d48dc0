"""One health pass: run the checks, tell Slurm, record the result."""
from __future__ import annotations

import json
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provision.certify.probe.nodehealth import checks, gpu, reason as own_reason, textfiles
from provision.certify.probe.nodehealth.config import HealthConfig
from provision.certify.probe.nodehealth.run import Deadline
from provision.certify.probe.nodehealth.slurm import Slurm, private_munge
from provision.certify.probe.records import CheckResult

LAST = "last.json"  # the last pass, read by `provision health`
MEMORY = "memory.json"  # what a pass carries to the next (Xids seen, a failure that lasts until reboot)


@dataclass
class PassRecord:
    """What one pass found and did."""

    node: str
    started: str
    seconds: float = 0.0
    ok: bool = True
    action: str = "none"  # none | drained | still drained | resumed | left alone | slurmctld unreachable: ...
    reason: str = ""
    trigger: str = "once"  # once | service | slurm
    checks: list[dict[str, Any]] = field(default_factory=list)
    metrics: str = ""  # why the pass's textfile was not written ("" written, or metrics off)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for last.json."""
        return dict(self.__dict__)


def run_checks(cfg: HealthConfig, deadline: Deadline, memory: dict[str, Any]) -> list[CheckResult]:
    """Every check that applies to this node, cheapest first."""
    results = [checks.munge(cfg, deadline)]
    if cfg.slurmd:
        results.append(checks.slurmd(cfg))
    results += checks.mounts(cfg, deadline)
    if cfg.files:
        results.append(checks.config_files(cfg))
    if cfg.gpu is not None:
        results += gpu.nvml_checks(cfg)
        results.append(gpu.xid_check(cfg, memory))
    return results


def failures_of(results: list[CheckResult]) -> list[tuple[str, str]]:
    """(check id with its subject, evidence) of each failed check."""
    return [(f"{r.check}[{r.subject}]" if r.subject else r.check, r.detail) for r in results if r.verdict == "fail"]


def tell_slurm(cfg: HealthConfig, deadline: Deadline, failures: list[tuple[str, str]],
               munge_ok: bool) -> tuple[str, str]:
    """(action, reason): drain on failure, resume what this program drained, leave any other drain alone."""
    with nullcontext(None) if munge_ok else private_munge(cfg, deadline) as env:
        if not munge_ok and env is None:
            return "slurmctld unreachable: munge is down and a private munged did not start", ""
        slurm = Slurm(cfg, deadline, env)
        node, why = slurm.node()
        if node is None:
            return f"slurmctld unreachable: {why}", ""
        if failures:
            reason = own_reason.text(failures)
            if node.drained and not node.drained_by_health:
                return "left alone", node.reason
            if node.drained_by_health and node.reason == reason:
                return "still drained", reason
            done = slurm.drain(reason)
            return ("drained", reason) if done.ok else (f"drain failed: {done.first_error()}", reason)
        if node.drained_by_health:
            done = slurm.resume()
            return ("resumed", "") if done.ok else (f"resume failed: {done.first_error()}", node.reason)
        return "none", node.reason


def one_pass(cfg: HealthConfig, trigger: str = "once") -> PassRecord:
    """Run the checks and act on them, within cfg.deadline_s; the record is also written to the state folder."""
    began = time.monotonic()
    deadline = Deadline(cfg.deadline_s)
    memory = read_json(cfg.state_dir / MEMORY)
    results = run_checks(cfg, deadline, memory)
    failures = failures_of(results)
    munge_ok = all(r.verdict != "fail" for r in results if r.check == "health.munge")
    action, reason = tell_slurm(cfg, deadline, failures, munge_ok)
    record = PassRecord(node=cfg.node, started=time.strftime("%Y-%m-%dT%H:%M:%S%z"), ok=not failures,
                        action=action, reason=reason, trigger=trigger, checks=[r.to_dict() for r in results],
                        seconds=round(time.monotonic() - began, 3))
    record.metrics = textfiles.publish_health(cfg.metrics_dir, record.checks, record.ok)
    write_json(cfg.state_dir / MEMORY, memory)
    write_json(cfg.state_dir / LAST, record.to_dict())
    return record


def read_json(path: Path) -> dict[str, Any]:
    """A record of the state folder as a dict ({} when missing or unreadable)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace the file in one step (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(temporary, path)
