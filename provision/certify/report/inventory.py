"""The per-node software and firmware inventory the report can show, read from the checks it carries.

Only what the data holds: the probe reports the driver version (`gpu.driver.version`), the CUDA version the
driver supports (`gpu.driver.cuda_version`) and the GPU count (`gpu.count`); the node record names the GPU
model. NCCL, Slurm, kernel and VBIOS versions are not in a ClusterReport, so the page has no column for them.
A column none of the nodes has a value for is left out.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from provision.certify.records import ClusterReport, NodeResult

# (column heading, check id whose value is the entry); the GPU model comes from the node record itself
CHECK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("GPUs", "gpu.count"),
    ("NVIDIA driver", "gpu.driver.version"),
    ("CUDA (driver supports)", "gpu.driver.cuda_version"),
)
MODEL_COLUMN = "GPU model"


@dataclass(frozen=True)
class InventoryRow:
    """One node's entries, in the order of Inventory.columns ("" where the node has none)."""

    node: str
    entries: tuple[str, ...]


@dataclass(frozen=True)
class Variant:
    """One distinct combination of entries and how many nodes have it."""

    entries: tuple[str, ...]
    nodes: int
    example: str


@dataclass(frozen=True)
class Inventory:
    """The columns that have data, a row per node, and the distinct combinations, commonest first."""

    columns: tuple[str, ...]
    rows: tuple[InventoryRow, ...]
    variants: tuple[Variant, ...]


def inventory(report: ClusterReport) -> Inventory | None:
    """The inventory table, or None when the report carries none of its fields."""
    full = [(n.name, _entries(n)) for n in report.nodes]
    headings = (MODEL_COLUMN,) + tuple(h for h, _ in CHECK_COLUMNS)
    keep = [i for i in range(len(headings)) if any(entries[i] for _, entries in full)]
    if not keep:
        return None
    rows = tuple(InventoryRow(name, tuple(entries[i] for i in keep)) for name, entries in full)
    return Inventory(tuple(headings[i] for i in keep), rows, _variants(rows))


def _entries(node: NodeResult) -> tuple[str, ...]:
    values = {c.check: c.value for c in node.checks if c.value is not None}
    return (node.gpu_model or "",) + tuple(str(values.get(check, "")) for _, check in CHECK_COLUMNS)


def _variants(rows: tuple[InventoryRow, ...]) -> tuple[Variant, ...]:
    counts = Counter(r.entries for r in rows)
    first = {}
    for row in rows:
        first.setdefault(row.entries, row.node)
    return tuple(Variant(entries, n, first[entries]) for entries, n in counts.most_common())
