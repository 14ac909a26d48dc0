"""NVIDIA Xid events from kernel log text (dmesg or journalctl -k), judged per node against NVIDIA's catalogue.

NVML keeps no Xid history, so the kernel log since boot is the record. Each Xid is classified by the
catalogue's immediate action (provision.certify.health.xid_catalog): the node-level check carries the most
far-reaching action as `action`, and its detail lists every (code, GPU) with its own. Standard library only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from provision.certify.probe.health.xid_catalog import CATALOGUE, entry, recovery_action
from provision.certify.probe.records import CheckResult, worst

# "NVRM: Xid (PCI:0000:44:00): 79, pid=..., GPU has fallen off the bus." Old drivers omit "PCI:"; under MIG the
# driver adds the instances: "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, ..." or "(PCI:... GPU-I:01 GPU-CI:02)".
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)"
                  r"(?P<mig>(?:\s+GPU-C?I:\s*\d+)*)\s*\): (?P<code>\d+)(?:,\s*(?P<msg>.*))?")
_MIG_ID = re.compile(r"GPU-(?P<kind>C?I):\s*(?P<id>\d+)")
# Newer drivers report a lost GPU over several lines without an Xid: remember the GPU, then the phrase.
_GPU_NAMED = re.compile(r"NVRM: (?:The NVIDIA )?GPU (?:at )?(?:PCI:)?(?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:"
                        r"[0-9A-Fa-f]{2}(?:\.\d)?)")
_FALLEN = re.compile(r"fallen off the bus", re.IGNORECASE)
_CAUSE = re.compile(r"caused by previous Xid (?P<code>\d+)")

# Xid 144-150 carry a severity after the unit ("145, RLW, nonfatal, ..." or "145, RLW_RXPIPE Nonfatal XC0 ..."):
# a nonfatal one was corrected by the link (FEC churn), so it only warns, although the catalogue files every
# code of the range under WORKFLOW_NVLINK5_ERR; a fatal one, or one named as the cause of a teardown, fails.
NVLINK_XIDS = range(144, 151)
RECOVERY_XID = 154
_NONFATAL = re.compile(r"\bnonfatal\b", re.IGNORECASE)
# The node-level action: the first of these among the findings (most far-reaching first).
ACTION_ORDER: tuple[str, ...] = (
    "check_mechanicals", "reboot", "restart_vm", "bus_reset", "drain_and_reset", "reset_gpu", "workflow_xid_48",
    "workflow_nvlink_err", "workflow_nvlink5_err", "drain_p2p", "update_sw", "recover_imex_domain",
    "contact_support", "see_message", "check_uvm", "restart_app", "workflow_xid_45", "none",
)
THRESHOLD = "no Xid whose catalogue action is a reset, reboot or inspection"


@dataclass(frozen=True)
class XidEvent:
    """One Xid: its code, the GPU's PCI address as logged, the message, and the MIG instances if any."""

    code: int
    pci: str
    message: str
    gpu_instance: int | None = None
    compute_instance: int | None = None


@dataclass(frozen=True)
class Finding:
    """How one logged Xid is judged: verdict, the action it calls for, and what it means."""

    verdict: str
    action: str
    meaning: str


def normalise_pci(address: str) -> str:
    """"00000000:1B:00.0" (NVML) and "0000:1b:00" (kernel log) both become "0000:1b:00"."""
    parts = address.lower().split(":")
    if len(parts) < 3:
        return address.lower()
    domain, bus, device = parts[-3], parts[-2], parts[-1].split(".")[0]
    return f"{domain[-4:].rjust(4, '0')}:{bus}:{device}"


def _event(match: re.Match) -> XidEvent:
    ids = {m["kind"]: int(m["id"]) for m in _MIG_ID.finditer(match["mig"] or "")}
    return XidEvent(int(match["code"]), normalise_pci(match["pci"]), (match["msg"] or "").strip(),
                    ids.get("I"), ids.get("CI"))


def parse_xids(text: str) -> list[XidEvent]:
    """Every Xid in the text, in order; a "fallen off the bus" report without an Xid counts as Xid 79."""
    events: list[XidEvent] = []
    last_gpu: str | None = None
    for line in text.splitlines():
        match = _XID.search(line)
        if match:
            event = _event(match)
            events.append(event)
            cause = _CAUSE.search(event.message)
            if cause and not any(e.code == int(cause["code"]) and e.pci == event.pci for e in events):
                events.append(XidEvent(int(cause["code"]), event.pci, f"named as the cause of Xid {event.code}"))
            continue
        named = _GPU_NAMED.search(line)
        if named:
            last_gpu = normalise_pci(named.group("pci"))
        if _FALLEN.search(line) and last_gpu and not _already_79(events, last_gpu):
            events.append(XidEvent(79, last_gpu, "GPU has fallen off the bus (reported without an Xid line)"))
    return events


def _already_79(events: list[XidEvent], pci: str) -> bool:
    return any(e.code == 79 and e.pci == pci for e in events)


def classify(code: int) -> tuple[str, str]:
    """(verdict, meaning) for one Xid code, from the catalogue."""
    row = entry(code)
    return row.verdict, row.meaning


def judge_event(event: XidEvent) -> Finding:
    """Verdict and action of one logged Xid: the catalogue's, with Xid 154's action read from its message and
    a nonfatal NVLink Xid (144-150) softened to a warning."""
    row = entry(event.code)
    if event.code == RECOVERY_XID:
        named = recovery_action(event.message)
        if named is None:
            return Finding("warn", "see_message", f"{row.meaning}: {event.message or 'no action named'}")
        return Finding(named[1], named[0], f"{row.meaning} to {named[0]}")
    if event.code in NVLINK_XIDS and _NONFATAL.search(event.message):
        return Finding("warn", "none", f"{row.meaning}, nonfatal (corrected by the link)")
    return Finding(row.verdict, row.action, row.meaning)


def classify_event(event: XidEvent) -> tuple[str, str]:
    """(verdict, meaning) for one logged Xid."""
    finding = judge_event(event)
    return finding.verdict, finding.meaning


def most_urgent(actions: list[str]) -> str:
    """The first action of ACTION_ORDER among these; an action the order does not know comes before "none"."""
    rank = {a: i for i, a in enumerate(ACTION_ORDER)}
    return min(actions, key=lambda a: rank.get(a, len(ACTION_ORDER) - 1))


def _current(events: list[XidEvent]) -> list[XidEvent]:
    """Drop every Xid 154 of a GPU but its last: the recovery action is a state, the latest one holds."""
    last = {e.pci: i for i, e in enumerate(events) if e.code == RECOVERY_XID}
    return [e for i, e in enumerate(events) if e.code != RECOVERY_XID or last[e.pci] == i]


def evaluate(events: list[XidEvent], node: str, *, gpu_by_pci: dict[str, int] | None = None,
             log_source: str = "kernel log") -> CheckResult:
    """One node-level verdict: the worst finding since boot, its action, each distinct (code, GPU) listed once."""
    source = f"{log_source} since boot; {CATALOGUE}"
    if not events:
        return CheckResult("gpu.xid", "pass", node=node, value=0, unit="Xids", threshold=THRESHOLD, source=source)
    gpu_by_pci = {normalise_pci(k): v for k, v in (gpu_by_pci or {}).items()}
    seen: dict[tuple[int, str, Finding], int] = {}
    for event in _current(events):
        key = (event.code, event.pci, judge_event(event))
        seen[key] = seen.get(key, 0) + 1
    verdict = worst(f.verdict for _, _, f in seen)
    action = most_urgent([f.action for _, _, f in seen if f.verdict == verdict])
    lines = []
    for (code, pci, finding), times in sorted(seen.items(), key=lambda item: (item[0][0], item[0][1])):
        where = f"gpu{gpu_by_pci[pci]} ({pci})" if pci in gpu_by_pci else pci
        lines.append(f"Xid {code} on {where} x{times}: {finding.meaning} -> {finding.action}")
    return CheckResult("gpu.xid", verdict, node=node, value=len(events), unit="Xids", threshold=THRESHOLD,
                       source=source, detail="; ".join(lines), action=action)


def unreadable(node: str, reason: str) -> CheckResult:
    """The kernel log could not be read: the check cannot vouch for the node."""
    return CheckResult("gpu.xid", "warn", node=node, threshold=THRESHOLD,
                       detail=f"kernel log unreadable ({reason}); run the probe as root or allow journal access")
