"""Slurm and munge checks the runner makes itself: commands to run and their output judged as CheckResults.

Pure: the commands are strings, the judgements read text. Which node a check is about:
- node.reachable, munge.credential: every node (the controller makes the reference credential);
- slurm.slurmd, slurm.node_state: compute nodes; slurm.controller: the controller;
- slurm.srun_all, slurm.sbatch: the cluster (node None).
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from provision.certify.probe.records import CheckResult

RUN_ROOT = "/run/gpu-provision-certify"  # per-run scratch on every node: expectation file, iperf3 pid
OK_STATES = ("idle", "mixed", "allocated", "completing")
HELD_STATES = ("maint", "reserved", "resv", "planned")  # a node in the reservation certify runs in (held nodes)
SACCT_DONE = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
              "BOOT_FAIL", "DEADLINE")
_FIELD = re.compile(r"^(?P<key>[a-z_]+)=(?P<value>.*)$")


def run_dir(run_id: str) -> str:
    """The node-local scratch folder of one run."""
    return f"{RUN_ROOT}/{run_id}"


def expect_path(run_id: str) -> str:
    """Where the node's NodeExpectation is written for the probe (--expect-json @FILE)."""
    return f"{run_dir(run_id)}/expect.json"


def precheck_command(run_id: str, expect_json: str, credential: str | None, compute: bool,
                     digest_file: str) -> str:
    """One SSH command per node: write the expectation, report slurmd's state and the installed probe's
    digest (compute nodes), decode the controller's munge credential. Prints key=value lines (parse_fields)."""
    lines = [f"mkdir -p -m 0700 {run_dir(run_id)}",
             f"printf '%s\\n' {shlex.quote(expect_json)} > {expect_path(run_id)}"]
    if compute:
        lines += ['echo "slurmd=$(systemctl is-active slurmd 2>/dev/null)"',
                  f'echo "probe_digest=$(cat {shlex.quote(digest_file)} 2>/dev/null)"']
    if credential is not None:
        lines += [f"out=$(printf '%s' {shlex.quote(credential)} | unmunge 2>&1)",
                  'echo "munge_rc=$?"',
                  'echo "munge=$(printf "%s\\n" "$out" | grep -m1 -E "^STATUS:|rror" | tr -s " ")"']
    return "\n".join(lines)


def parse_fields(text: str) -> dict[str, str]:
    """key=value lines -> dict (the last value of a key wins)."""
    out = {}
    for line in text.splitlines():
        match = _FIELD.match(line.strip())
        if match:
            out[match["key"]] = match["value"].strip()
    return out


def reachable_check(node: str, reason: str | None) -> CheckResult:
    """node.reachable: an SSH session could be opened (host key verified)."""
    if reason:
        return CheckResult("node.reachable", "fail", node=node, threshold="SSH login", source="paramiko",
                           detail=f"cannot reach the node: {reason}")
    return CheckResult("node.reachable", "pass", node=node, threshold="SSH login", source="paramiko")


def slurmd_check(node: str, fields: Mapping[str, str]) -> CheckResult:
    """slurm.slurmd: systemd reports slurmd active."""
    state = fields.get("slurmd") or "unknown"
    if state == "active":
        return CheckResult("slurm.slurmd", "pass", node=node, value=state, threshold="active")
    return CheckResult("slurm.slurmd", "fail", node=node, value=state, threshold="active",
                       detail="slurmd is not running: `systemctl start slurmd` on the node, then check "
                              "/var/log/slurm/slurmd.log")


def probe_check(node: str, fields: Mapping[str, str], expected: str) -> CheckResult:
    """probe.installed: the node runs exactly the probe this gpu-provision ships (same digest)."""
    found = fields.get("probe_digest") or None
    base = dict(node=node, value=found[:12] if found else None, threshold=expected[:12],
                source="SHA-256 of the probe's modules (certify role)")
    if found == expected:
        return CheckResult("probe.installed", "pass", **base)
    why = "the certify probe is not installed" if not found else "the node has another version of the probe"
    return CheckResult("probe.installed", "fail", **base,
                       detail=f"{why}: run `provision deploy SPEC --tags certify --limit {node}`")


def munge_checks(credential: str | None, controller: str, controller_error: str | None,
                 fields: Mapping[str, Mapping[str, str]]) -> list[CheckResult]:
    """munge.credential per node: the controller's credential decodes there.

    When every other node (at least two) rejects it, the controller's key is the odd one out: it fails,
    the others pass with a note. A node that cannot be reached is not judged here (node.reachable is)."""
    source = "munge -n on the controller | unmunge on the node"
    if credential is None:
        return [CheckResult("munge.credential", "fail", node=controller, source=source,
                            detail=f"munge -n failed on the controller: {controller_error or 'no credential'}")]
    verdicts = {n: f.get("munge_rc") == "0" and f.get("munge", "").startswith("STATUS: Success")
                for n, f in fields.items() if n != controller}
    against_all = len(verdicts) >= 2 and not any(verdicts.values())
    out = [CheckResult("munge.credential", "fail" if against_all else "pass", node=controller, source=source,
                       threshold="decodes on every node",
                       detail="no other node accepts this controller's credentials: its munge key differs from "
                              "theirs; rerun `provision deploy --tags munge`" if against_all else "")]
    for node, ok in verdicts.items():
        status = fields[node].get("munge") or "no status"
        if ok or against_all:
            out.append(CheckResult("munge.credential", "pass", node=node, value=status, source=source,
                                   detail="blamed on the controller" if against_all else ""))
        else:
            out.append(CheckResult("munge.credential", "fail", node=node, value=status, threshold="STATUS: Success",
                                   source=source, detail="this node rejects the controller's credential: a "
                                                         "different /etc/munge/munge.key or munged not running; "
                                                         "rerun `provision deploy --tags munge --limit " + node + "`"))
    return out


def state_command() -> str:
    """On the controller: is slurmctld up, and every node's state with the reason."""
    return "scontrol ping; echo '--'; sinfo -h -N -o '%N|%T|%E'"


def parse_states(text: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """(scontrol ping output, {node: (state, reason)})."""
    ping, _, table = text.partition("--")
    states = {}
    for line in table.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) == 3 and parts[0]:
            states[parts[0]] = (parts[1], parts[2])
    return ping.strip(), states


def controller_check(controller: str, ping: str, error: str | None = None) -> CheckResult:
    """slurm.controller: `scontrol ping` says the primary slurmctld is UP."""
    up = "is UP" in ping and "DOWN" not in ping
    return CheckResult("slurm.controller", "pass" if up else "fail", node=controller,
                       value=(ping.splitlines() or [""])[0] or None, threshold="slurmctld UP",
                       source="scontrol ping", detail="" if up else (error or "slurmctld does not answer"))


def node_state_check(node: str, state: tuple[str, str] | None, held: bool = False) -> CheckResult:
    """slurm.node_state: the node is usable by jobs (not down, drained or not responding); `held`: certify runs
    inside the hold reservation, where a reserved node is usable."""
    if state is None:
        return CheckResult("slurm.node_state", "fail", node=node, threshold=" or ".join(OK_STATES), source="sinfo",
                           detail="the controller does not list this node: check slurm.conf")
    name, reason = state
    base = name.rstrip("*~#!%$@^-+")
    if name.endswith("*"):
        return CheckResult("slurm.node_state", "fail", node=node, value=name, threshold=" or ".join(OK_STATES),
                           source="sinfo", detail="not responding to slurmctld")
    if base in OK_STATES or (held and base in HELD_STATES):
        return CheckResult("slurm.node_state", "pass", node=node, value=name, source="sinfo")
    why = f" ({reason})" if reason and reason != "none" else ""
    return CheckResult("slurm.node_state", "fail", node=node, value=name, threshold=" or ".join(OK_STATES),
                       source="sinfo", detail=f"the node is {name}{why}; `scontrol update nodename={node} "
                                              "state=resume` once it is fixed")


def runnable(state: tuple[str, str] | None, held: bool = False) -> bool:
    """Whether a step can be placed on a node in this state (down, drained and unknown nodes cannot; a reserved node
    can when certify runs inside the reservation)."""
    if state is None or state[0].endswith("*"):
        return False
    base = state[0].rstrip("~#!%$@^-+")
    return base in OK_STATES or (held and base in HELD_STATES)


def runnable_nodes(nodes: Sequence[str], state_output: str | None, held: bool = False) -> list[str]:
    """Those of `nodes` Slurm can place a step on now, from `state_command`'s output (None: the controller did not
    answer, so none)."""
    states = parse_states(state_output)[1] if state_output is not None else {}
    return [n for n in nodes if runnable(states.get(n), held=held)]


def srun_all_check(nodes: Sequence[str], answered: Sequence[str], seconds: float | None) -> CheckResult:
    """slurm.srun_all: one srun step reached every compute node."""
    missing = [n for n in nodes if n not in answered]
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    return CheckResult("slurm.srun_all", "fail" if missing else "pass", value=f"{len(answered)}/{len(nodes)}",
                       unit="nodes", threshold=f"{len(nodes)}/{len(nodes)}", source="srun --label, one task per node",
                       detail=(f"no answer from {', '.join(missing)}" if missing else f"every node answered{took}"))


def sbatch_command(nodes: Sequence[str], job_name: str, user: str | None = None) -> str:
    """Submit a batch job across the given nodes whose steps run hostname; prints the job id. As `user` (runuser from
    root's session) when one is named, starting in /tmp (root's working directory is not theirs)."""
    command = (f"sbatch --parsable -N{len(nodes)} -w {','.join(nodes)} --job-name={job_name} --time=2 "
               f"-o /dev/null{' --chdir=/tmp' if user else ''} --wrap 'srun hostname'")
    return f"runuser -u {shlex.quote(user)} -- {command}" if user else command


def sacct_command(job_id: str) -> str:
    """The job's accounted state and exit code."""
    return f"sacct -n -X -P -j {shlex.quote(job_id)} -o State,ExitCode"


def job_state_command(job_id: str, accounting: bool) -> str:
    """The job's state and exit code: from the accounting database, or from slurmctld without accounting (it keeps
    a finished job for MinJobAge, 300 s by default)."""
    return sacct_command(job_id) if accounting else f"scontrol show job -o {shlex.quote(job_id)}"


@dataclass(frozen=True)
class Accounted:
    """What sacct says about a job."""

    state: str | None
    exit_code: str | None

    @property
    def done(self) -> bool:
        """The job reached a final state."""
        return bool(self.state) and self.state.split()[0] in SACCT_DONE


def parse_sacct(text: str) -> Accounted:
    """First line of `sacct -n -X -P -o State,ExitCode`; empty: not accounted (yet)."""
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0]:
            return Accounted(parts[0], parts[1])
    return Accounted(None, None)


def parse_scontrol_job(text: str) -> Accounted:
    """JobState and ExitCode of `scontrol show job -o JOB`; empty: slurmctld does not know the job."""
    state = re.search(r"(?:^|\s)JobState=(\S+)", text)
    code = re.search(r"(?:^|\s)ExitCode=(\S+)", text)
    return Accounted(state[1] if state else None, code[1] if code else None)


def parse_job_state(text: str, accounting: bool) -> Accounted:
    """The output of job_state_command."""
    return parse_sacct(text) if accounting else parse_scontrol_job(text)


def sbatch_check(job_id: str | None, accounted: Accounted | None, error: str | None = None,
                 seconds: float | None = None, accounting: bool = True) -> CheckResult:
    """slurm.sbatch: a batch job ran and reached COMPLETED, in the accounting database when there is one."""
    base = dict(threshold="COMPLETED", source="sbatch + sacct (slurmdbd)" if accounting else
                "sbatch + scontrol show job (no accounting)")
    if job_id is None:
        return CheckResult("slurm.sbatch", "fail", **base, detail=f"sbatch failed: {error or 'no job id'}")
    if accounted is None or not accounted.state:
        return CheckResult("slurm.sbatch", "fail", **base, value=f"job {job_id}",
                           detail=error or ("the job never appeared in sacct: is slurmdbd running?" if accounting
                                            else "slurmctld does not know the job it accepted"))
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    if accounted.state == "COMPLETED":
        return CheckResult("slurm.sbatch", "pass", **base, value=accounted.state,
                           detail=f"job {job_id} completed" + (" and is accounted" if accounting else "") + took)
    return CheckResult("slurm.sbatch", "fail", **base, value=accounted.state,
                       detail=f"job {job_id} ended {accounted.state} (exit {accounted.exit_code})"
                       if accounted.done else f"job {job_id} still {accounted.state} after the wait")


def drain_reason(checks: Sequence[str]) -> str:
    """"certify:<check ids>", each id once, the first one from the 9th character (sinfo -R shows 20), cut to 200
    characters; "certify:" is how `certify --release` knows its own drains (converge.CERTIFY_REASON)."""
    reason = "certify:" + ",".join(dict.fromkeys(checks))
    return reason if len(reason) <= 200 else reason[:197] + "..."


def drain_command(node: str, checks: Sequence[str]) -> str:
    """`scontrol update` that drains a node, the reason naming the failed checks (Slurm keeps it in sinfo -R)."""
    return (f"scontrol update nodename={shlex.quote(node)} state=drain "
            f"reason={shlex.quote(drain_reason(checks))}")
