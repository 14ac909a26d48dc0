"""Whether Slurm confines jobs where it is meant to: slurm.enforce_memory (a job over its --mem is stopped, or held to
it) and slurm.enforce_procs (a process that leaves its job with setsid is gone when the job ends).

Both need cgroups: ProctrackType=proctrack/cgroup and TaskPlugin with task/cgroup (the slurm role's default on real
hosts), plus ConstrainRAMSpace=yes for memory. Where the controller's configuration has them off (the sandbox, whose
nodes share this machine's kernel: slurm_cgroup_enabled is false there), both are n/a and say which setting. The jobs
run as certify's user, as a person's would.

Pure: steps are srun.Step records; the judgement reads srun.StepOutput and the follow-up's answers.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from provision.certify.control.slurm_checks import parse_fields
from provision.certify.control.srun import Step, StepOutput
from provision.certify.probe.records import CheckResult

CONFIG_COMMAND = "scontrol show config"
LIMIT_MIB = 64  # the job's --mem
ALLOCATE_MIB = 256  # what its task then fills: four times the limit
HELD_FRACTION = 0.75  # a task that survived with less than this share of its allocation resident was held (swap)
TIMEOUT_S = 60
_CONFIG_LINE = re.compile(r"^\s*(?P<key>[A-Za-z]+)\s*=\s*(?P<value>.*?)\s*$")
_OOM = ("out of memory", "oom-kill", "oom_kill")
# The task fills ALLOCATE_MIB with bytes (touched, so resident) and prints its resident size; killed first, it prints
# nothing after "start".
_MEMORY_TASK = ("echo mem=start; python3 -c " + shlex.quote(
    f"b = b'x' * ({ALLOCATE_MIB} << 20)\n"
    "rss = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS:'))\n"
    f"print('mem=survived'); print('allocated_mib={ALLOCATE_MIB}'); print('rss_mib=%d' % (rss // 1024))"))
_LEAVE_TASK = "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo left_pid=$!"


@dataclass(frozen=True)
class Confinement:
    """What the controller's configuration says about confining jobs."""

    procs: bool  # ProctrackType=proctrack/cgroup
    tasks: bool  # task/cgroup among TaskPlugin
    memory: bool  # ConstrainRAMSpace=yes
    settings: str  # the values read, for the checks' details

    @property
    def confined(self) -> bool:
        return self.procs and self.tasks


def parse_config(text: str) -> Confinement:
    """`scontrol show config` (which includes cgroup.conf's values) -> the settings that confine jobs."""
    found = {}
    for line in text.splitlines():
        match = _CONFIG_LINE.match(line)
        if match:
            found.setdefault(match["key"].lower(), match["value"])
    proctrack = found.get("proctracktype", "unknown")
    plugins = found.get("taskplugin", "unknown")
    ram = found.get("constrainramspace", "no")
    return Confinement(proctrack == "proctrack/cgroup", "task/cgroup" in plugins.split(","), ram.lower() == "yes",
                       f"ProctrackType={proctrack}, TaskPlugin={plugins}, ConstrainRAMSpace={ram}")


def memory_step(nodes: Sequence[str], job_name: str) -> Step:
    """A task a node that fills four times its --mem."""
    return Step(tuple(nodes), "sh -c " + shlex.quote(_MEMORY_TASK), job_name, TIMEOUT_S,
                extra=(f"--mem={LIMIT_MIB}M",))


def leave_step(nodes: Sequence[str], job_name: str) -> Step:
    """A task a node that starts a process in a session of its own and ends at once."""
    return Step(tuple(nodes), "sh -c " + shlex.quote(_LEAVE_TASK), job_name, TIMEOUT_S)


def left_pids(one: Step, output: StepOutput) -> dict[str, int]:
    """node -> the pid its task left behind."""
    pids = {}
    for node in one.nodes:
        pid = parse_fields(output.texts.get(node, "")).get("left_pid", "")
        if pid.isdigit():
            pids[node] = int(pid)
    return pids


def survivor_command(pid: int) -> str:
    """Run as root on the node after the job: whether the process is still there (then ended, by its pid)."""
    return (f"for i in 1 2 3 4 5; do kill -0 {pid} 2>/dev/null || {{ echo left=gone; exit 0; }}; sleep 1; done; "
            f"echo left=alive; kill {pid}")


def not_applicable(nodes: Sequence[str], config: Confinement) -> list[CheckResult]:
    """Both checks n/a on every node: Slurm does not confine jobs here."""
    return _both(nodes, "na", f"Slurm does not confine jobs here ({config.settings}): a job over its --mem and a "
                              "process that leaves its job are not stopped (the sandbox: its nodes share this "
                              "machine's kernel)")


def unknown(nodes: Sequence[str], why: str) -> list[CheckResult]:
    """Both checks a warning on every node: whether Slurm confines jobs could not be read."""
    return _both(nodes, "warn", f"not checked: the controller's configuration could not be read ({why})")


def _both(nodes: Sequence[str], verdict: str, detail: str) -> list[CheckResult]:
    return [CheckResult(check, verdict, node=node, detail=detail)
            for node in nodes for check in ("slurm.enforce_memory", "slurm.enforce_procs")]


def memory_checks(one: Step, output: StepOutput, config: Confinement) -> list[CheckResult]:
    """slurm.enforce_memory per node: killed for memory, or held below its allocation, passes."""
    out = []
    for node in one.nodes:
        base = dict(node=node, threshold=f"stopped or held at --mem={LIMIT_MIB}M", unit="MiB",
                    source=f"srun --mem={LIMIT_MIB}M, a task filling {ALLOCATE_MIB} MiB")
        if not config.memory:
            out.append(CheckResult("slurm.enforce_memory", "na", node=node,
                                   detail=f"memory is not confined ({config.settings})"))
            continue
        fields = parse_fields(output.texts.get(node, ""))
        reason = output.errors.get(node, "")
        if fields.get("mem") == "survived":
            rss = int(fields.get("rss_mib", "0") or 0)
            held = rss < ALLOCATE_MIB * HELD_FRACTION
            out.append(CheckResult("slurm.enforce_memory", "pass" if held else "fail", **base, value=rss,
                                   detail=f"held: {rss} MiB resident of {ALLOCATE_MIB} (the rest swapped)" if held else
                                   f"a job of --mem={LIMIT_MIB}M kept {rss} MiB resident: memory is not enforced here "
                                   "(is the node's cgroup memory controller on?)"))
        elif fields.get("mem") == "start" and _stopped_for_memory(reason, output.general if len(one.nodes) == 1 else []):
            out.append(CheckResult("slurm.enforce_memory", "pass", **base,
                                   detail=f"stopped for memory: {reason or output.general[-1]}"))
        else:
            why = reason or output.missing([node]).get(node) or "the task ended without a word on memory"
            out.append(CheckResult("slurm.enforce_memory", "fail", **base,
                                   detail=f"the memory job did not show enforcement: {why}"))
    return out


def _stopped_for_memory(reason: str, general: Sequence[str]) -> bool:
    """Whether srun's words for the node (or, in a one-node step, any of its words) say Out Of Memory."""
    return any(word in text.lower() for text in (reason, *general) for word in _OOM)


def procs_checks(one: Step, pids: Mapping[str, int], answers: Mapping[str, str]) -> list[CheckResult]:
    """slurm.enforce_procs per node from the follow-up's answer (left=gone passes)."""
    out = []
    for node in one.nodes:
        base = dict(node=node, threshold="gone when its job ends", source="srun: setsid sleep 600 &, then kill -0")
        if node not in pids:
            out.append(CheckResult("slurm.enforce_procs", "fail", **base,
                                   detail="the job that leaves a process did not run here"))
            continue
        state = parse_fields(answers.get(node, "")).get("left")
        if state == "gone":
            out.append(CheckResult("slurm.enforce_procs", "pass", **base, value="gone",
                                   detail=f"pid {pids[node]} ended with its job"))
        elif state == "alive":
            out.append(CheckResult("slurm.enforce_procs", "fail", **base, value="alive",
                                   detail=f"pid {pids[node]} outlived its job (ended now by certify): processes "
                                          "escape their jobs here (proctrack/cgroup?)"))
        else:
            out.append(CheckResult("slurm.enforce_procs", "warn", **base,
                                   detail="could not look for the process after the job (the node did not answer)"))
    return out
