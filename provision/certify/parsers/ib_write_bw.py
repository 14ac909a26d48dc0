"""perftest ib_write_bw client output: the header block and the bandwidth table, in Gb/s.

perftest reports "MB/sec" as MiB/s (bytes / 0x100000) unless --report_gbits is given, when it
reports Gb/s (bytes / 125000000); both are converted to Gb/s here (perftest_parameters/resources.c,
format_factor). Warning lines perftest mixes into the table ("Conflicting CPU frequency ...") are skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[(?P=unit)\]")
_ROW = re.compile(r"^\s*(?P<size>\d+)\s+(?P<iters>\d+)\s+(?P<peak>[0-9.]+)\s+(?P<avg>[0-9.]+)\s+(?P<rate>[0-9.]+)")
_FIELD = re.compile(r"(?P<key>Device|Number of qps|Link type|Transport type|Connection type)\s*:\s*(?P<value>\S+)")
_TO_GBPS = {"Gb/sec": 1.0, "MB/sec": 0x100000 * 8 / 1e9}


@dataclass(frozen=True)
class IbRow:
    """One message size: peak and average bandwidth in Gb/s, message rate in Mpps."""

    size_bytes: int
    iterations: int
    peak_gbps: float
    average_gbps: float
    msg_rate_mpps: float


@dataclass(frozen=True)
class IbWriteBw:
    """A parsed ib_write_bw run."""

    device: str | None
    qps: int | None
    link_type: str | None
    unit_reported: str
    rows: tuple[IbRow, ...]

    @property
    def average_gbps(self) -> float:
        """Average bandwidth at the largest message size (Gb/s), the figure judged."""
        return max(self.rows, key=lambda r: r.size_bytes).average_gbps


def parse(text: str) -> IbWriteBw:
    """Parse client output; ValueError when no bandwidth table is present (server side, or a failed run)."""
    fields: dict[str, str] = {}
    unit: str | None = None
    rows: list[IbRow] = []
    for line in text.splitlines():
        for match in _FIELD.finditer(line):
            fields.setdefault(match["key"], match["value"])
        header = _HEADER.search(line)
        if header:
            unit = header["unit"]
            if unit not in _TO_GBPS:
                raise ValueError(f"ib_write_bw reported bandwidth in '{unit}'; expected Gb/sec or MB/sec")
            continue
        row = _ROW.match(line) if unit else None
        if row:
            factor = _TO_GBPS[unit]
            rows.append(IbRow(int(row["size"]), int(row["iters"]), float(row["peak"]) * factor,
                              float(row["avg"]) * factor, float(row["rate"])))
    if not rows:
        raise ValueError("no ib_write_bw bandwidth table found; is this the client side of a finished run?")
    qps = fields.get("Number of qps")
    return IbWriteBw(fields.get("Device"), int(qps) if qps and qps.isdigit() else None, fields.get("Link type"),
                     unit or "", tuple(rows))
