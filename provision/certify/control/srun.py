"""One srun step across many nodes: the command line, and its output split back into one text per node.

Every task first prints `certify-node=$SLURMD_NODENAME`, so its output is attributed by name, not by
task number (Slurm numbers tasks in its own node order). `srun --label` cuts a line longer than
SRUN_CHUNK bytes into labelled pieces (Slurm's I/O message size); a piece of exactly that length is
joined with the task's next line again, so a probe's long JSON line comes back whole. srun's error lines name the nodes where a
task could not start or failed; a node whose task printed nothing and that no error names is reported
as "no output".
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

NODE_MARK = "certify-node="
SRUN_CHUNK = 1024  # MAX_MSG_LEN in Slurm's src/common/io_hdr.h
KILL_AFTER_S = 10  # after the timeout, SIGKILL srun this much later
STOPPED = "srun did not finish in time and was stopped"  # a step's general reason when its timeout ended it
_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
_NODE_ERRORS = (  # srun/slurmstepd lines that name a node, and what they mean
    re.compile(r"srun: error: (?P<node>[\w.-]+): tasks? [0-9,\-\[\]]+: (?P<why>.+)$"),
    re.compile(r"failed on node (?P<node>[\w.-]+): (?P<why>.+)$"),
    re.compile(r"\*\*\* STEP \S+ ON (?P<node>[\w.-]+) (?P<why>CANCELLED.*?)\s*\*\*\*"),
    re.compile(r"srun: error: Node failure on (?P<node>[\w.-]+)(?P<why>.*)$"),
)


@dataclass(frozen=True)
class Step:
    """What one srun step should run and where."""

    nodes: tuple[str, ...]
    command: str  # shell command run by each task (after the node marker)
    job_name: str
    timeout_s: int
    ntasks_per_node: int = 1
    gres: str | None = None  # e.g. "gpu:8"
    env: tuple[tuple[str, str], ...] = ()  # exported to the tasks
    extra: tuple[str, ...] = ()  # further srun options, e.g. ("--mpi=pmix",)
    kill_on_bad_exit: bool = False  # a task that fails ends every task of the step (an MPI job cannot finish then)
    user: str | None = None  # submitted as this user (runuser from root's session), not root

    def shell(self) -> str:
        """The command line to run on the controller (srun under `timeout`, as `user` when one is named: its tasks
        start in /tmp, since root's working directory is not theirs to enter)."""
        task = f"echo {NODE_MARK}$SLURMD_NODENAME; exec {self.command}"
        argv = ["timeout", "-k", str(KILL_AFTER_S), str(self.timeout_s), "srun", f"-N{len(self.nodes)}",
                f"--ntasks-per-node={self.ntasks_per_node}", "-w", ",".join(self.nodes), "--label",
                f"--job-name={self.job_name}", f"--kill-on-bad-exit={int(self.kill_on_bad_exit)}", *self.extra]
        if self.gres:
            argv.append(f"--gres={self.gres}")
        if self.user:
            argv.append("--chdir=/tmp")
        env = [f"{k}={v}" for k, v in self.env]
        argv = (["env", *env] if env else []) + argv
        if self.user:
            argv = ["runuser", "-u", self.user, "--", *argv]
        return " ".join(shlex.quote(a) for a in argv) + " bash -c " + shlex.quote(task)


@dataclass
class StepOutput:
    """A finished step, per node: the text each node's tasks printed, and why nodes failed."""

    rc: int | None
    texts: dict[str, str] = field(default_factory=dict)  # node -> its tasks' stdout (labels removed)
    errors: dict[str, str] = field(default_factory=dict)  # node -> srun's reason
    general: list[str] = field(default_factory=list)  # srun errors that name no node
    timed_out: bool = False

    def missing(self, nodes: Sequence[str]) -> dict[str, str]:
        """Nodes that printed nothing, with the best reason known."""
        out = {}
        for node in nodes:
            if self.texts.get(node, "").strip():
                continue
            if node in self.errors:
                out[node] = self.errors[node]
            elif self.timed_out:
                out[node] = "the srun step timed out before this node answered"
            elif self.general:
                out[node] = self.general[-1]
            else:
                out[node] = "no output from this node's task"
        return out


def split_labelled(stdout: str) -> dict[str, str]:
    """`srun --label` output -> {node: text}; each task names its node in its first line."""
    by_task: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        match = _LABEL.match(line)
        if not match:
            continue
        lines = by_task.setdefault(match[1], [])
        if lines and len(lines[-1]) % SRUN_CHUNK == 0 and lines[-1]:
            lines[-1] += match[2]  # the rest of a line srun cut into pieces
        else:
            lines.append(match[2])
    out: dict[str, list[str]] = {}
    for lines in by_task.values():
        node = next((line[len(NODE_MARK):].strip() for line in lines if line.startswith(NODE_MARK)), None)
        if node:
            out.setdefault(node, []).extend(line for line in lines if not line.startswith(NODE_MARK))
    return {node: "\n".join(lines) for node, lines in out.items()}


def node_errors(stderr: str) -> tuple[dict[str, str], list[str]]:
    """({node: reason} from srun's error lines that name a node, [other srun error lines])."""
    named: dict[str, str] = {}
    general: list[str] = []
    for raw in stderr.splitlines():
        line = _LABEL.sub(r"\2", raw).strip()
        for pattern in _NODE_ERRORS:
            match = pattern.search(line)
            if match:
                named.setdefault(match["node"], match["why"].strip() or line)
                break
        else:
            if line.startswith(("srun: error:", "srun: fatal:", "slurmstepd: error:")):
                general.append(line)
    return named, general


def parse(rc: int | None, stdout: str, stderr: str) -> StepOutput:
    """Everything a finished step says, per node."""
    named, general = node_errors(stderr)
    timed_out = rc in (124, 137)
    if timed_out:
        general.append(STOPPED)
    return StepOutput(rc, split_labelled(stdout), named, general, timed_out)
