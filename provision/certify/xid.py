"""NVIDIA Xid events from kernel log text (dmesg or journalctl -k), judged per node.

NVML keeps no Xid history, so the kernel log since boot is the record. Standard library only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from provision.certify.records import CheckResult

# "NVRM: Xid (PCI:0000:44:00): 79, pid=..., GPU has fallen off the bus." (old drivers omit "PCI:")
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)\): "
                  r"(?P<code>\d+)(?:,\s*(?P<msg>.*))?")
# Newer drivers report a lost GPU over several lines without an Xid: remember the GPU, then the phrase.
_GPU_NAMED = re.compile(r"NVRM: (?:The NVIDIA )?GPU (?:at )?(?:PCI:)?(?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:"
                        r"[0-9A-Fa-f]{2}(?:\.\d)?)")
_FALLEN = re.compile(r"fallen off the bus", re.IGNORECASE)
_CAUSE = re.compile(r"caused by previous Xid (?P<code>\d+)")

# Xid codes (NVIDIA "Xid Errors" catalogue): hardware or driver faults fail the node; errors an
# application usually causes only warn. Codes not listed warn as unclassified.
HARDWARE_XIDS: dict[int, str] = {
    48: "double-bit ECC error", 61: "internal micro-controller breakpoint", 62: "internal micro-controller halt",
    64: "ECC page retirement or row remapping failure", 74: "NVLink error", 79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate", 95: "uncontained ECC error", 119: "GSP RPC timeout", 120: "GSP error",
    121: "C2C link error", 140: "unrecovered ECC error", 154: "GPU recovery action changed (reset needed)",
    **{code: "NVLink error" for code in range(144, 151)},  # Xid 144-150: NVLink errors (Blackwell)
}
# Xid 144-150 carry a severity after the unit ("145, RLW, nonfatal, ..."): a nonfatal one was corrected by
# the link (FEC churn), so it only warns; a fatal one, or one named as the cause of a teardown, fails.
NVLINK_XIDS = range(144, 151)
_NONFATAL = re.compile(r"\bnonfatal\b", re.IGNORECASE)
APPLICATION_XIDS: dict[int, str] = {
    13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
    45: "preemptive cleanup after a previous error", 63: "ECC page retirement or row remapping event",
    68: "video decoder exception", 69: "graphics engine class error", 94: "contained ECC error",
    109: "context switch timeout",
}


@dataclass(frozen=True)
class XidEvent:
    """One Xid: its code, the GPU's PCI address as logged, and the message."""

    code: int
    pci: str
    message: str


def normalise_pci(address: str) -> str:
    """"00000000:1B:00.0" (NVML) and "0000:1b:00" (kernel log) both become "0000:1b:00"."""
    parts = address.lower().split(":")
    if len(parts) < 3:
        return address.lower()
    domain, bus, device = parts[-3], parts[-2], parts[-1].split(".")[0]
    return f"{domain[-4:].rjust(4, '0')}:{bus}:{device}"


def parse_xids(text: str) -> list[XidEvent]:
    """Every Xid in the text, in order; a "fallen off the bus" report without an Xid counts as Xid 79."""
    events: list[XidEvent] = []
    last_gpu: str | None = None
    for line in text.splitlines():
        match = _XID.search(line)
        if match:
            message = (match.group("msg") or "").strip()
            pci = normalise_pci(match.group("pci"))
            events.append(XidEvent(int(match.group("code")), pci, message))
            cause = _CAUSE.search(message)
            if cause and not any(e.code == int(cause["code"]) and e.pci == pci for e in events):
                events.append(XidEvent(int(cause["code"]), pci, f"named as the cause of Xid {match.group('code')}"))
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
    """(verdict, meaning) for one Xid code."""
    if code in HARDWARE_XIDS:
        return "fail", HARDWARE_XIDS[code]
    if code in APPLICATION_XIDS:
        return "warn", APPLICATION_XIDS[code]
    return "warn", "unclassified Xid"


def classify_event(event: XidEvent) -> tuple[str, str]:
    """(verdict, meaning) for one logged Xid: its code, softened for a corrected NVLink error."""
    verdict, meaning = classify(event.code)
    if event.code in NVLINK_XIDS and _NONFATAL.search(event.message):
        return "warn", f"{meaning}, nonfatal (corrected by the link)"
    return verdict, meaning


def evaluate(events: list[XidEvent], node: str, *, gpu_by_pci: dict[str, int] | None = None,
             log_source: str = "kernel log") -> CheckResult:
    """One node-level verdict: the worst Xid since boot, with each distinct (code, GPU) listed once."""
    source = f"{log_source} since boot; NVIDIA Xid catalogue (hardware Xids fail, application Xids warn)"
    if not events:
        return CheckResult("gpu.xid", "pass", node=node, value=0, unit="Xids", threshold="no hardware Xid",
                           source=source)
    gpu_by_pci = {normalise_pci(k): v for k, v in (gpu_by_pci or {}).items()}
    seen: dict[tuple[int, str, str, str], int] = {}
    for event in events:
        key = (event.code, event.pci, *classify_event(event))
        seen[key] = seen.get(key, 0) + 1
    verdict = "fail" if any(key[2] == "fail" for key in seen) else "warn"
    lines = []
    for (code, pci, _, meaning), times in sorted(seen.items()):
        where = f"gpu{gpu_by_pci[pci]} ({pci})" if pci in gpu_by_pci else pci
        lines.append(f"Xid {code} on {where} x{times}: {meaning}")
    return CheckResult("gpu.xid", verdict, node=node, value=len(events), unit="Xids", threshold="no hardware Xid",
                       source=source, detail="; ".join(lines))


def unreadable(node: str, reason: str) -> CheckResult:
    """The kernel log could not be read: the check cannot vouch for the node."""
    return CheckResult("gpu.xid", "warn", node=node, threshold="no hardware Xid",
                       detail=f"kernel log unreadable ({reason}); run the probe as root or allow journal access")
