"""The drain reasons the health program writes, and how it knows its own.

`sinfo -R` shows the first 20 characters of a reason, so the failed check comes first:

    hc:munge: munge: Error: Failed to access "/run/munge/munge.socket.2" (gpu-provision-health)
    hc:mount[/shared]: /shared is not mounted; config: /etc/slurm/slurm.conf sha1 ... (gpu-provision-health)

"hc:" (health check) opens every reason the program sets, then each failed check's id without its "health."
namespace and its evidence; the program's name closes it. A reason with both ends is the program's own, and so is one
that starts with its name (how earlier versions wrote them: "gpu-provision-health: health.munge: ..."). Only those
are resumed; any other drain (an admin's "hc: fan", certify's, a rolling deploy's) is never touched.
"""
from __future__ import annotations

import re

TAG = "hc:"  # every reason the program sets starts with it
MARK = "(gpu-provision-health)"  # ... and ends with it
LEGACY = "gpu-provision-health"  # how older versions started theirs (still resumed)
NAMESPACE = "health."  # the program's check ids ("health.munge"), left out of the reason
MAX = 200  # characters, the mark included
ACTIVE_TAG = "ac:"  # the active checks' reasons (nodehealth.active): "ac:net: ... (gpu-provision-active)"
ACTIVE_MARK = "(gpu-provision-active)"
ACTIVE_NAMESPACE = "active."


def text(failures: list[tuple[str, str]], tag: str = TAG, mark: str = MARK, namespace: str = NAMESPACE) -> str:
    """ "hc:<check>: <evidence>; <check>: ... (gpu-provision-health)" in one line of at most MAX characters; `failures`
    are (check id, evidence) in the order the checks ran."""
    parts = [f"{check.removeprefix(namespace)}: {detail}" if detail else check.removeprefix(namespace)
             for check, detail in failures]
    body = re.sub(r"\s+", " ", tag + "; ".join(parts)).replace("=", ":")  # `Key=` would end Reason in scontrol -o
    room = MAX - len(mark) - 1
    return f"{body if len(body) <= room else body[:room - 3] + '...'} {mark}"


def active_text(failures: list[tuple[str, str]]) -> str:
    """ "ac:<check>: <figure and floor>; ... (gpu-provision-active)": an active check's drain reason."""
    return text(failures, ACTIVE_TAG, ACTIVE_MARK, ACTIVE_NAMESPACE)


def is_active(reason: str) -> bool:
    """Whether the active checks set this reason (only those are resumed by an active pass)."""
    return reason.startswith(ACTIVE_TAG) and reason.endswith(ACTIVE_MARK)


def is_own(reason: str) -> bool:
    """Whether the health program set this reason."""
    return (reason.startswith(TAG) and reason.endswith(MARK)) or reason.startswith(LEGACY)

