"""Slurm's answers read as records: sinfo per node, squeue per job, sdiag's scheduler figures, for the Slurm collector.

The formats are the ones the collector asks for (slurm.SINFO, slurm.SQUEUE), the same in Slurm 22.05 and 24.11:
`sinfo -O Field:|` prints each field whole followed by "|" (no padding, no truncation; recorded on both versions in
tests/fixtures/slurm/status), the reason last because an admin's reason may hold "|". A line that does not read is
skipped and said in the notes; it never stops the others.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

REASON_MAX = 200  # characters of a drain reason kept as a label value
SUFFIXES = "*~#!%$@^-"  # sinfo's short and long state suffixes: not responding, powered off, powering up, ...
SHORT = {"alloc": "allocated", "mix": "mixed", "drng": "draining", "drain": "drained", "comp": "completing",
         "resv": "reserved", "maint": "maintenance", "plnd": "planned", "failg": "failing", "npc": "perfctrs",
         "pow_dn": "powered_down", "pow_up": "powering_up", "inval": "invalid"}
BUSY = {"allocated", "mixed", "completing"}  # a drain flag on these is "draining"; on the others, "drained"


@dataclass(frozen=True)
class NodeRow:
    """One node as sinfo shows it."""

    name: str
    state: str  # the base state, drain shown as drained or draining (state_label)
    drained: bool
    reason: str  # "" when Slurm has none
    cpus_allocated: int
    cpus_idle: int
    cpus_total: int
    memory_mb: int
    memory_allocated_mb: int
    gpus: int
    gpus_allocated: int


@dataclass(frozen=True)
class JobRow:
    """One job (or one line of a job array) as squeue shows it."""

    state: str  # lower case: pending, running, completing, ...
    partition: str
    user: str
    account: str
    reason: str  # the pending reason's first part ("ReqNodeNotAvail" of "ReqNodeNotAvail, UnavailableNodes:...")


@dataclass(frozen=True)
class Scheduler:
    """sdiag's figures the catalogue has; None where sdiag did not print one."""

    threads: int | None = None
    agent_queue: int | None = None
    last_cycle_us: int | None = None
    backfill_last_cycle_us: int | None = None


def state_label(text: str) -> tuple[str, bool]:
    """(state, drained) of any form sinfo prints: StateComplete ("idle+drain", "down+not_responding"), long
    ("draining", "down*") or short ("drng", "idle~", "mix-"). A drain flag on a busy node is "draining", on any other
    "drained", as Slurm itself names them."""
    words = [w.strip().rstrip(SUFFIXES).lower() for w in text.split("+")]
    base = SHORT.get(words[0], words[0]) if words and words[0] else "unknown"
    flags = set(words[1:])
    if base in ("drained", "draining"):
        return base, True
    if "drain" in flags:
        return ("draining" if base in BUSY or "completing" in flags else "drained"), True
    return base, False


def split_outside_parentheses(text: str) -> list[str]:
    """Comma-separated items, commas inside parentheses kept ("gpu:a:2(IDX:0,3),gpu:b:1(IDX:1)")."""
    items, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    return items + [current] if current else items


def gpu_count(gres: str) -> int | None:
    """GPUs in a Gres or GresUsed field: "gpu:h100:8(S:0-1)" 8, "gpu:8" 8, "gpu:h100:3(IDX:0-2),nvme:1" 3,
    "(null)" 0; None when a gpu item's count does not read."""
    total = 0
    for item in split_outside_parentheses(gres.strip()):
        parts = item.split("(", 1)[0].split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) == 1:
            total += 1
        elif parts[-1].isdigit():
            total += int(parts[-1])
        else:
            return None
    return total


SINFO_FIELDS = ("NodeList", "StateComplete", "CPUsState", "Memory", "AllocMem", "Gres", "GresUsed", "Reason")


def node_row(line: str) -> NodeRow | None:
    """One sinfo line in SINFO_FIELDS' order; None when it does not read."""
    fields = line.split("|", len(SINFO_FIELDS) - 1)
    if len(fields) != len(SINFO_FIELDS):
        return None
    name, state, cpus, memory, allocated, gres, used, reason = (f.strip() for f in fields)
    counts = cpus.split("/")
    gpus, gpus_used = gpu_count(gres), gpu_count(used)
    if not name or len(counts) != 4 or not all(c.isdigit() for c in counts) or gpus is None or gpus_used is None:
        return None
    if not memory.isdigit() or not allocated.isdigit():
        return None
    label, drained = state_label(state)
    reason = "" if reason in ("none", "(null)") else reason[:REASON_MAX]
    return NodeRow(name, label, drained, reason, int(counts[0]), int(counts[1]), int(counts[3]), int(memory),
                   int(allocated), gpus, gpus_used)


def nodes(text: str) -> tuple[list[NodeRow], list[str]]:
    """Every node once (sinfo -N prints a node once per partition), and a note per line that did not read."""
    rows, notes = _read_lines("sinfo", text, node_row)
    once: dict[str, NodeRow] = {}
    for row in rows:
        once.setdefault(row.name, row)
    return list(once.values()), notes


def _read_lines(command: str, text: str, read):
    """The rows of a command's non-empty lines, and a note per line `read` could not read (None)."""
    rows, notes = [], []
    for line in filter(str.strip, text.splitlines()):
        row = read(line)
        if row is None:
            notes.append(f"{command}: skipped a line that does not read: {line[:120]!r}")
        else:
            rows.append(row)
    return rows, notes


SQUEUE_FIELDS = ("%T", "%P", "%u", "%a", "%r")


def job_row(line: str) -> JobRow | None:
    """One squeue line in SQUEUE_FIELDS' order; None when it does not read."""
    fields = [f.strip() for f in line.split("|", len(SQUEUE_FIELDS) - 1)]
    if len(fields) != len(SQUEUE_FIELDS) or not fields[0] or not re.fullmatch(r"[A-Za-z_]+", fields[0]):
        return None
    state, partition, user, account, reason = fields
    return JobRow(state.lower(), partition, user, account, reason.split(",", 1)[0].strip()[:REASON_MAX])


def jobs(text: str) -> tuple[list[JobRow], list[str]]:
    """Every job line, and a note per line that did not read."""
    return _read_lines("squeue", text, job_row)


_FIGURE = re.compile(r"^\s*([^:]+?):\s+(\d+)\s*$")
_TOP = {"Server thread count": "threads", "Agent queue size": "agent_queue"}


def scheduler(text: str) -> Scheduler:
    """sdiag's thread count, agent queue, and the last cycle of the main and the backfill scheduler (microseconds),
    each read in its section: a section starts at a line without indent ("Main schedule statistics (microseconds):",
    "Backfilling stats", or "Backfilling stats (WARNING: ...)" while a backfill cycle runs)."""
    found: dict[str, int] = {}
    section = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = "main" if line.startswith("Main schedule statistics") else (
                "backfill" if line.startswith("Backfilling stats") else "")
        match = _FIGURE.match(line)
        if match is None:
            continue
        key, value = match.group(1).strip(), int(match.group(2))
        if key in _TOP:
            found.setdefault(_TOP[key], value)
        elif key == "Last cycle" and section in ("main", "backfill"):
            found.setdefault("last_cycle_us" if section == "main" else "backfill_last_cycle_us", value)
    return Scheduler(**found)
