"""Filters that read Slurm's node listings into data, so the slurm role decides from fields, never by matching text.

    slurm_health_drains(text, nodes)   the nodes among `nodes` that are drained (or draining) with a reason the node
                                       health program set: what must go back to service when the program is switched
                                       off, since nothing else would resume them

`text` is `sinfo -h -N -o '%N|%T|%E'` (node, long state, reason; the reason last, so a '|' inside it is kept). The
program's reasons start with "hc:" and end with "(gpu-provision-health)", or start with "gpu-provision-health" (older
versions): the same rule as provision/certify/probe/nodehealth/reason.py, which writes them. Any other drain (an
admin's, certify's, a rolling deploy's) is never picked. A line that is not three fields fails the task.
"""
from __future__ import annotations

from ansible.errors import AnsibleFilterError

TAG, MARK, LEGACY = "hc:", "(gpu-provision-health)", "gpu-provision-health"


def _own(reason: str) -> bool:
    return (reason.startswith(TAG) and reason.endswith(MARK)) or reason.startswith(LEGACY)


def slurm_health_drains(text: str, nodes: list[str]) -> list[str]:
    """The nodes of `nodes` (in sinfo's order, once each) drained by the health program."""
    wanted, out = set(nodes), []
    for line in str(text).splitlines():
        if not line.strip():
            continue
        fields = line.split("|", 2)
        if len(fields) != 3:
            raise AnsibleFilterError(f"slurm_health_drains: not a 'node|state|reason' line of sinfo: {line!r}")
        node, state, reason = (f.strip() for f in fields)
        if node in wanted and "drain" in state.lower() and _own(reason) and node not in out:
            out.append(node)
    return out


class FilterModule:
    """The role's filters."""

    def filters(self):
        return {"slurm_health_drains": slurm_health_drains}
