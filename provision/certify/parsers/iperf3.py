"""iperf3 results, from its -J JSON (preferred) or its text summary, as received Gb/s.

The receiver's figure is judged (what actually arrived). In text output the "[SUM]" lines of a
parallel (-P) run win over the per-stream lines. iperf3 prints bit rates with decimal prefixes.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

_SUMMARY = re.compile(r"^\[\s*(?P<id>\d+|SUM)\]\s+(?P<start>[0-9.]+)-(?P<end>[0-9.]+)\s*sec\s+"
                      r"(?P<xfer>[0-9.]+)\s+\S+\s+(?P<rate>[0-9.]+)\s+(?P<unit>[KMGT]?bits)/sec"
                      r"(?:\s+(?P<retr>\d+))?.*?\b(?P<role>sender|receiver)\s*$")
_BITS = {"bits": 1.0, "Kbits": 1e3, "Mbits": 1e6, "Gbits": 1e9, "Tbits": 1e12}


@dataclass(frozen=True)
class Iperf3Result:
    """Throughput of one run in Gb/s; sender figure and retransmits when reported."""

    received_gbps: float
    sent_gbps: float | None
    retransmits: int | None
    streams: int | None
    seconds: float | None


def parse_json(text: str) -> Iperf3Result:
    """Parse `iperf3 -J` output; ValueError on an error document or missing summary."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"iperf3 JSON is not valid JSON: {exc}") from exc
    if doc.get("error"):
        raise ValueError(f"iperf3 reported an error: {doc['error']}")
    end = doc.get("end") or {}
    received = end.get("sum_received") or end.get("sum")
    if not received or "bits_per_second" not in received:
        raise ValueError("iperf3 JSON has no end.sum_received; was the run cut short?")
    sent = end.get("sum_sent") or {}
    start = (doc.get("start") or {}).get("test_start") or {}
    return Iperf3Result(received_gbps=received["bits_per_second"] / 1e9,
                        sent_gbps=sent["bits_per_second"] / 1e9 if "bits_per_second" in sent else None,
                        retransmits=sent.get("retransmits"), streams=start.get("num_streams"),
                        seconds=received.get("seconds"))


def parse_text(text: str) -> Iperf3Result:
    """Parse the human-readable summary; ValueError when no receiver line is present."""
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
        raise ValueError("no iperf3 receiver summary line found; was the run cut short?")
    sender = lines.get((pick, "sender"))
    retr = sender["retr"] if sender is not None else None
    return Iperf3Result(received_gbps=_gbps(receiver), sent_gbps=_gbps(sender) if sender is not None else None,
                        retransmits=int(retr) if retr is not None else None, streams=len(stream_ids) or None,
                        seconds=float(receiver["end"]) - float(receiver["start"]))


def parse(text: str) -> Iperf3Result:
    """JSON if the output is a JSON document, the text summary otherwise."""
    return parse_json(text) if text.lstrip().startswith("{") else parse_text(text)


def _gbps(match: re.Match[str]) -> float:
    return float(match["rate"]) * _BITS[match["unit"]] / 1e9
