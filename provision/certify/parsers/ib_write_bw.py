"""perftest bandwidth output (ib_write_bw, ib_send_bw, ib_read_bw, ...): header block and table, in Gb/s.

perftest reports MiB/s (bytes / 0x100000) unless --report_gbits is given, when it reports Gb/s
(bytes / 125000000); versions before 24.07 label the MiB/s column "MB/sec", later ones "MiB/sec"
(perftest_parameters.h RESULT_FMT). Both are converted to Gb/s here. The table is read through
its header, so the QoS layout (a `#sl` column) and the per-port columns of dual-port runs are
understood. Lines perftest mixes into the table (CPU-frequency warnings) are skipped, and a
loopback run that prints the server's and the client's output into one stream still parses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from provision.certify.probe.parse_errors import failure, guarded

_HEADER = re.compile(r"#bytes\s+(?P<sl>#sl\s+)?#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[(?P=unit)\]")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_FIELD = re.compile(r"(?P<key>Device|Number of qps|Link type|Transport type|Connection type)\s*:\s*(?P<value>\S+)")
_FIELD_LINE = re.compile(r"^[A-Za-z][\w .*/()-]*?\s*:\s*\S")  # " Number of qps   : 1"
_ERROR = re.compile(r"(?i)error|fail|couldn'?t|unable|cannot|can't|refused|timed? ?out")
TO_GBPS = {"Gb/sec": 1.0, "MB/sec": 0x100000 * 8 / 1e9, "MiB/sec": 0x100000 * 8 / 1e9}
_CHATTER = ("initializing CUDA", "Listing all CUDA devices", "CUDA device", "Picking device", "[pid =",
            "creating CUDA Ctx", "making it the current CUDA Ctx", "allocated ", "deallocating GPU buffer",
            "destroying current CUDA Ctx", "Using ROCm", "Perftest doesn't supports", "Conflicting CPU frequency",
            "WARNING:", "Waiting for client", "Please run the same command", "local address:",
            "remote address:", "GID:", "Connected:", "Completed:", "Total run time:")


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
    """A parsed perftest bandwidth run."""

    device: str | None
    qps: int | None
    link_type: str | None
    unit_reported: str
    rows: tuple[IbRow, ...]

    @property
    def largest(self) -> IbRow:
        """The row with the largest message size (the first of equals: a loopback prints it twice)."""
        return max(self.rows, key=lambda r: r.size_bytes)

    @property
    def average_gbps(self) -> float:
        """Average bandwidth at the largest message size (Gb/s), the figure judged."""
        return self.largest.average_gbps


def _row(line: str, unit: str, qos: bool) -> IbRow | None:
    """A table row (`size [sl] iterations peak average rate ...`), None for anything else."""
    tokens = line.split()
    width = 6 if qos else 5
    if len(tokens) < width or not all(_NUMBER.match(t) for t in tokens[:width]):
        return None
    size, iterations, peak, avg, rate = (tokens[0], *tokens[width - 4:width])
    if not size.isdigit() or not iterations.isdigit():
        return None
    factor = TO_GBPS[unit]
    return IbRow(int(size), int(iterations), float(peak) * factor, float(avg) * factor, float(rate))


def _known(line: str) -> bool:
    """Whether a line is part of perftest's usual output (to quote the first one that is not)."""
    text = line.strip()
    if _ERROR.search(text):
        return False
    return bool(not text or set(text) <= {"-"} or text.startswith(("*", "#bytes", *_CHATTER))
                or text.endswith(" Test") or _FIELD_LINE.match(text) or _row(text, "Gb/sec", False))


@guarded("perftest")
def parse(text: str) -> IbWriteBw:
    """Parse client output; ParseError when no bandwidth table is present (server side, or a failed run)."""
    fields: dict[str, str] = {}
    unit: str | None = None
    qos = False
    rows: list[IbRow] = []
    for line in text.splitlines():
        for match in _FIELD.finditer(line):
            fields.setdefault(match["key"], match["value"])
        if header := _HEADER.search(line):
            unit, qos = header["unit"], bool(header["sl"])
            if unit not in TO_GBPS:
                raise failure(f"perftest reported bandwidth in '{unit}'; expected Gb/sec, MB/sec or MiB/sec",
                              [line], lambda _: False)
        elif unit and (row := _row(line, unit, qos)):
            rows.append(row)
    if not rows:
        raise failure("no perftest bandwidth table found; is this the client side of a finished run?",
                      text.splitlines(), _known)
    qps = fields.get("Number of qps")
    return IbWriteBw(fields.get("Device"), int(qps) if qps and qps.isdigit() else None, fields.get("Link type"),
                     unit or "", tuple(rows))
