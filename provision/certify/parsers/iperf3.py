"""iperf3 results, from its -J JSON (preferred) or its text summary, as received Gb/s.

The receiver's figure is judged (what actually arrived). In text output the "[SUM]" lines of a
parallel (-P) run win over the per-stream lines. iperf3 prints bit rates with decimal prefixes.
An error document (`"error": "unable to connect ..."`), a run cut before its summary, text that is
not iperf3's or JSON of another shape all raise ParseError with the line that shows it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from provision.certify.probe.parse_errors import LAST, ParseError, failure, guarded

_SUMMARY = re.compile(r"^\[\s*(?P<id>\d+|SUM)\]\s+(?P<start>[0-9.]+)-\s*(?P<end>[0-9.]+)\s*sec\s+"
                      r"(?P<xfer>[0-9.]+)\s+\S+\s+(?P<rate>[0-9.]+)\s+(?P<unit>[KMGT]?bits)/sec"
                      r"(?:\s+(?P<retr>\d+)\b(?!\.))?.*?\b(?P<role>sender|receiver)\s*$")
_INTERVAL = re.compile(r"^\[\s*(?:\d+|SUM)\]\s+[0-9.]+-\s*[0-9.]+\s*sec\b")
_BITS = {"bits": 1.0, "Kbits": 1e3, "Mbits": 1e6, "Gbits": 1e9, "Tbits": 1e12}
_KNOWN = ("Connecting to host", "[ ID]", "- - -", "iperf Done", "Server listening", "Accepted connection",
          "-----------", "Reverse mode", "Starting Test", "Test Complete", "Time:", "Connecting to",
          "TCP MSS", "Cookie:", "Target Bitrate", "Bidirectional", "local ")


@dataclass(frozen=True)
class Iperf3Result:
    """Throughput of one run in Gb/s; sender figure and retransmits when reported."""

    received_gbps: float
    sent_gbps: float | None
    retransmits: int | None
    streams: int | None
    seconds: float | None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _rate(section: dict, what: str) -> float:
    value = section.get("bits_per_second")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"iperf3 JSON: {what}.bits_per_second is missing or not a number", json.dumps(section)[:200])
    return value / 1e9


def _decode(text: str) -> dict:
    """The JSON document; ParseError quoting the line where decoding stopped."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.splitlines() or [""]
        raise ParseError(f"iperf3 JSON is not valid JSON ({exc.msg})", lines[min(exc.lineno, len(lines)) - 1]) from exc
    if not isinstance(doc, dict):
        raise ParseError("iperf3 JSON is not an object", text.strip().splitlines()[0])
    return doc


@guarded("iperf3")
def parse_json(text: str) -> Iperf3Result:
    """Parse `iperf3 -J` output; ParseError on an error document or missing summary."""
    doc = _decode(text)
    if doc.get("error"):
        raise ParseError("iperf3 reported an error", str(doc["error"]), where="iperf3 said")
    end = _dict(doc.get("end"))
    received = _dict(end.get("sum_received")) or _dict(end.get("sum"))
    if not received:
        raise ParseError("iperf3 JSON has no end.sum_received; was the run cut short?",
                         text.strip().splitlines()[-1], where=LAST)
    sent = _dict(end.get("sum_sent"))
    start = _dict(_dict(doc.get("start")).get("test_start"))
    retransmits = sent.get("retransmits")
    seconds = received.get("seconds")
    return Iperf3Result(received_gbps=_rate(received, "end.sum_received"),
                        sent_gbps=_rate(sent, "end.sum_sent") if "bits_per_second" in sent else None,
                        retransmits=retransmits if isinstance(retransmits, int) else None,
                        streams=start.get("num_streams") if isinstance(start.get("num_streams"), int) else None,
                        seconds=float(seconds) if isinstance(seconds, (int, float)) else None)


def _known(line: str) -> bool:
    """Whether a line is part of iperf3's usual text output (to quote the first one that is not)."""
    text = line.strip()
    return not text or text.startswith(_KNOWN) or bool(_INTERVAL.match(text))


@guarded("iperf3")
def parse_text(text: str) -> Iperf3Result:
    """Parse the human-readable summary; ParseError when no receiver line is present."""
    lines: dict[tuple[str, str], re.Match[str]] = {}
    stream_ids: set[str] = set()
    for raw in text.splitlines():
        match = _SUMMARY.match(raw.strip())
        if match:
            key = "SUM" if match["id"] == "SUM" else "stream"
            if key == "stream":
                stream_ids.add(match["id"])
            lines[(key, match["role"])] = match
    pick = "SUM" if ("SUM", "receiver") in lines else "stream"
    receiver = lines.get((pick, "receiver"))
    if receiver is None:
        raise failure("no iperf3 receiver summary line found; was the run cut short?", text.splitlines(), _known)
    sender = lines.get((pick, "sender"))
    retr = sender["retr"] if sender is not None else None
    return Iperf3Result(received_gbps=_gbps(receiver), sent_gbps=_gbps(sender) if sender is not None else None,
                        retransmits=int(retr) if retr is not None else None, streams=len(stream_ids) or None,
                        seconds=float(receiver["end"]) - float(receiver["start"]))


def parse(text: str) -> Iperf3Result:
    """JSON if the output opens a JSON document (also behind a terminal's "^C"), the text summary otherwise."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith("{") or first.endswith("{"):
        return parse_json(text[text.index("{"):])
    return parse_text(text)


def _gbps(match: re.Match[str]) -> float:
    return float(match["rate"]) * _BITS[match["unit"]] / 1e9
