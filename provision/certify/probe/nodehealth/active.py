"""Active checks (the spec's health.active): on a schedule, measure this node while it is idle, without delaying users.

The node's gpu-provision-health service starts this program on each of its passes; it does something only when the
node's interval has passed since its last active pass (state folder, active.json), one pass at a time (a lock). Where
the measurements (nodehealth.measure) run depends on the node's state in Slurm:

- IDLE (no job, no drain, no reservation): in a job of the hidden partition (active.partition) that every other
  partition preempts (PreemptType=preempt/partition_prio, PreemptMode=CANCEL there, OFF in the users' partitions),
  submitted with --immediate: a user's job that wants the node cancels ours at once, so nobody waits for a check.
  Preemption rather than a maintenance window: a window takes nodes out on a clock whether users need them or not
  and checks a node only in its slot; preemption checks any node while it is idle and gives it back the moment a job
  wants it.
- drained by the active checks and idle: measured directly (no job can start there, nobody waits): the pass that
  returns the node to service.
- anything else (allocated, mixed, drained by anyone else, reserved, down): skipped, said in the record.

A confirmed failure (measure.confirmed_check: below the floor twice) drains the node with a reason naming the check and the
figure, "ac:net: confirmed: 0.0192 then 0.0191 Gb/s (floor 0.25) ... (gpu-provision-active)"; a pass resumes a node
whose drain reason is the active checks' own, never another's. A job that was preempted leaves no verdict.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provision.certify.probe.nodehealth import config as health_config, measure, reason as reasons, textfiles
from provision.certify.probe.nodehealth.config import HealthConfig
from provision.certify.probe.nodehealth.passes import write_json
from provision.certify.probe.nodehealth.run import Deadline, run
from provision.certify.probe.nodehealth.slurm import NodeState, Slurm

STATE = "active.json"  # the last active pass, read by `provision health --active`
STARTED = "active.started"  # when the last pass began (the interval counts from it, even if that pass died)
JOB_NAME = "gp-provision-active"
SLURM_DEADLINE_S = 20.0


@dataclass
class ActiveRecord:
    """What one active pass found and did."""

    node: str
    started: float
    where: str = "skipped"  # job | direct | skipped
    why: str = ""  # why skipped, or why no verdict (the job was preempted or did not start)
    seconds: float = 0.0
    action: str = "none"  # none | drained | still drained | resumed | left alone | drain failed: ...
    reason: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)
    metrics: str = ""  # why the pass's textfile was not written ("" written, nothing measured, or metrics off)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for active.json."""
        return dict(self.__dict__)


def placement(node: NodeState) -> tuple[str, str]:
    """(where, why): "job" on an idle node in service, "direct" on an idle node the active checks drained,
    "skipped" otherwise with the state that made it so."""
    flags = set(node.state.upper().split("+"))
    if flags == {"IDLE"}:
        return "job", ""
    if flags == {"IDLE", "DRAIN"} and reasons.is_active(node.reason):
        return "direct", ""
    if node.drained and not reasons.is_active(node.reason):
        return "skipped", f"drained by someone else ({node.reason or 'no reason'})"
    return "skipped", f"not idle ({node.state})"


def due(cfg: HealthConfig, now: float) -> bool:
    """Whether the node's interval has passed since its last active pass began."""
    try:
        last = float((cfg.state_dir / STARTED).read_text())
    except (OSError, ValueError):
        return True
    return now - last >= cfg.active.interval_s or now < last


def job_argv(cfg: HealthConfig, config_path: Path) -> list[str]:
    """srun of this program's --measure as one exclusive, immediately placed job of the active partition."""
    active = cfg.active
    return [cfg.commands["srun"], f"--partition={active.partition}", f"--nodelist={cfg.node}", "--nodes=1",
            "--ntasks=1", "--exclusive", "--immediate=10", f"--time={active.time_limit_min}",
            f"--job-name={JOB_NAME}", "--quiet", "--kill-on-bad-exit=1", sys.executable, "-m",
            "provision.certify.probe.nodehealth.active", "--config", str(config_path), "--measure"]


def in_job(cfg: HealthConfig, config_path: Path) -> tuple[list[dict[str, Any]] | None, str]:
    """The checks measured inside a job of the active partition, or None and why (preempted, not started)."""
    limit = cfg.active.time_limit_min * 60 + 30
    done = run(job_argv(cfg, config_path), Deadline(limit), cap_s=limit)
    for line in reversed(done.stdout.strip().splitlines()):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("checks"), list):
            return doc["checks"], ""
    return None, f"no verdict: the job ended without one ({done.first_error()})"


def act(slurm: Slurm, node: NodeState, checks: list[dict[str, Any]]) -> tuple[str, str]:
    """(action, reason): drain on a confirmed failure, resume a node the active checks drained when all passed."""
    failures = [(f"{c['check']}[{c['subject']}]" if c.get("subject") else c["check"], c.get("detail", ""))
                for c in checks if c.get("verdict") == "fail"]
    own = node.drained and reasons.is_active(node.reason)
    if failures:
        reason = reasons.active_text(failures)
        if node.drained and not own:
            return "left alone", node.reason
        if own and node.reason == reason:
            return "still drained", reason
        done = slurm.drain(reason)
        return ("drained", reason) if done.ok else (f"drain failed: {done.first_error()}", reason)
    if own:
        done = slurm.resume()
        return ("resumed", "") if done.ok else (f"resume failed: {done.first_error()}", node.reason)
    return "none", node.reason


def one_pass(cfg: HealthConfig, config_path: Path, now: float | None = None) -> ActiveRecord:
    """Place the measurements by the node's state, run them, act on the verdicts, record the pass."""
    began = time.monotonic()
    record = ActiveRecord(cfg.node, started=time.time() if now is None else now)
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    (cfg.state_dir / STARTED).write_text(f"{record.started}\n")  # the interval counts from here
    slurm = Slurm(cfg, Deadline(SLURM_DEADLINE_S))
    node, why = slurm.node()
    if node is None:
        record.why = f"slurmctld unreachable: {why}"
    else:
        record.where, record.why = placement(node)
        checks = None
        if record.where == "job":
            checks, record.why = in_job(cfg, config_path)
        elif record.where == "direct":
            checks = [c.to_dict() for c in measure.measure_all(cfg)]
        if checks is not None:
            record.checks = checks
            after = Slurm(cfg, Deadline(SLURM_DEADLINE_S))  # the measurements took a while: a deadline of its own
            again, _ = after.node()  # the state now: a drain may have come meanwhile
            record.action, record.reason = act(after, again or node, checks)
    record.seconds = round(time.monotonic() - began, 3)
    record.metrics = textfiles.publish_active(cfg.metrics_dir, record.checks)
    write_json(cfg.state_dir / STATE, record.to_dict())
    return record


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The program's options."""
    parser = argparse.ArgumentParser(prog="gpu-provision-active", description="Active checks of this node "
                                     "(see provision/certify/probe/nodehealth/active.py).")
    parser.add_argument("--config", type=Path, default=health_config.DEFAULT_PATH)
    parser.add_argument("--measure", action="store_true", help="measure here and print the checks as JSON (what the "
                        "job of the active partition runs)")
    parser.add_argument("--now", action="store_true", help="a pass now, whether or not the interval has passed")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """0: nothing to do or a pass without a failure, 1: a check failed, 2: bad configuration."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cfg = health_config.load_or_say(args.config, "gpu-provision-active")
    if cfg is None:
        return 2
    if cfg.active is None:
        return 0
    if args.measure:
        checks = measure.measure_all(cfg)
        print(json.dumps({"node": cfg.node, "checks": [c.to_dict() for c in checks]}, default=str))
        return 1 if any(c.verdict == "fail" for c in checks) else 0
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    with open(cfg.state_dir / "active.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # a pass is running
        if not args.now and not due(cfg, time.time()):
            return 0
        record = one_pass(cfg, args.config)
    print(json.dumps(record.to_dict(), default=str))
    return 1 if any(c.get("verdict") == "fail" for c in record.checks) else 0


if __name__ == "__main__":
    sys.exit(main())
