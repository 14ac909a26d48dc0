"""What a check-mode run would change in files: Ansible's diff results as unified diffs, folded across hosts.

A task's result carries `diff` (template, copy, lineinfile, blockinfile and the like under `--diff`): one mapping or
a list of them, each with `before`/`after` (text, or a mapping of attributes such as the mode) and their headers, or
an already formatted `prepared` text, or a note that the file is binary or too large. `unified` turns that into the
text a reader knows from `diff -u`; `fold` shows a diff that many hosts share once, with the hostlist of those hosts.

A no_log task's result is censored before it reaches us (no `diff` key); `task_diff` refuses a censored result
anyway, so a secret a task hides (the munge key, the accounting database password) is never shown.
"""
from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from provision import hostlist

MAX_LINES = 400  # of one task's diff on one host; the rest is summarised in a line
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # terminal escapes and the like from a file's content
_NOTES = {"dst_binary": "diff skipped: the file on the node is binary",
          "src_binary": "diff skipped: the source file is binary",
          "dst_larger": "diff skipped: the file on the node is larger than {} bytes",
          "src_larger": "diff skipped: the source file is larger than {} bytes"}


@dataclass(frozen=True)
class FileDiff:
    """What one task would change on one host, as unified diff text (never from a no_log task)."""

    task: str
    text: str


@dataclass(frozen=True)
class DiffBlock:
    """One task's diff as several hosts would see it: the same text on every host named."""

    task: str
    text: str
    nodes: tuple[str, ...]

    @property
    def hostlist(self) -> str:
        """The hosts folded into one hostlist expression ("compute[01-03]")."""
        return hostlist.compress(self.nodes)

    def as_dict(self) -> dict:
        """JSON form for --json."""
        return {"task": self.task, "hosts": self.hostlist, "nodes": list(self.nodes), "diff": self.text}


def censored(res: Mapping) -> bool:
    """Whether a result was hidden by no_log (Ansible keeps `censored`, ansible-runner replaces the whole result)."""
    return bool(res.get("censored") or res.get("_ansible_no_log"))


def task_diff(task: str, res: Mapping) -> FileDiff | None:
    """The diff a task's result carries (items of a loop too), or None: none, empty, or a censored result."""
    if censored(res):
        return None
    parts = [unified(res["diff"])] if res.get("diff") else []
    for item in res.get("results") or []:
        if isinstance(item, Mapping) and item.get("diff") and not censored(item):
            parts.append(unified(item["diff"]))
    text = "".join(part for part in parts if part)
    return FileDiff(task, text) if text else None


def unified(diff: object) -> str:
    """Ansible's diff result (a mapping or a list of them) as unified diff text, cut at MAX_LINES."""
    entries = diff if isinstance(diff, list) else [diff]
    lines: list[str] = []
    for entry in entries:
        if isinstance(entry, Mapping):
            lines += _entry_lines(entry)
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES] + [f"... {len(lines) - MAX_LINES} more lines (the run's artifacts hold them)\n"]
    return _CONTROL.sub(_escape, "".join(lines))


def _entry_lines(entry: Mapping) -> list[str]:
    """One diff entry: the notes, the before/after difference, the prepared text."""
    lines = [_NOTES[key].format(entry[key]) + "\n" for key in _NOTES if key in entry]
    if "before" in entry and "after" in entry:
        before, after = _text(entry["before"]), _text(entry["after"])
        lines += difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                      fromfile=str(entry.get("before_header", "before")),
                                      tofile=str(entry.get("after_header", "after")), lineterm="\n")
    if entry.get("prepared"):
        lines.append(str(entry["prepared"]).rstrip("\n") + "\n")
    return [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]


def _text(value: object) -> str:
    """A side of a diff as text: attributes (a mapping) as sorted JSON, as Ansible shows them."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, indent=4) + "\n"
    return str(value)


def _escape(match: re.Match) -> str:
    """A control character as a visible escape: a node's file must not drive the terminal."""
    return f"\\x{ord(match.group()):02x}"


def fold(per_host: Iterable[tuple[str, Iterable[FileDiff]]]) -> list[DiffBlock]:
    """One block per distinct (task, diff), with every host that has it; blocks in the order they first came."""
    groups: dict[tuple[str, str], list[str]] = {}
    for host, found in per_host:
        for diff in found:
            groups.setdefault((diff.task, diff.text), []).append(host)
    return [DiffBlock(task, text, tuple(nodes)) for (task, text), nodes in groups.items()]
