"""The per-node software and firmware inventory the report shows, and the nodes that differ from their group.

The probe reads kernel release, OS, Slurm and NCCL versions, and from NVML the driver, the CUDA version it
supports and each GPU's VBIOS (NodeResult.inventory, report schema 1.2). A report of schema 1.0/1.1 has no
inventory: its driver and CUDA columns come from the `gpu.driver.version` and `gpu.driver.cuda_version` checks.
A column none of the nodes has a value for is left out.

Within a node group (or GPU model, for nodes without one), an entry other than the one most of the group's
nodes have is marked odd. This is a marker on the page, not a verdict: `config.packages` judges the stack's
package versions; the marker also shows a kernel, OS or VBIOS that differs.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from provision.certify.records import ClusterReport, NodeResult

NA = "n/a"
GPU_COUNT_CHECK = "gpu.count"
# (column heading, NodeInventory field, check whose value stands in when a report has no inventory)
COLUMNS: tuple[tuple[str, str, str | None], ...] = (
    ("NVIDIA driver", "driver", "gpu.driver.version"),
    ("CUDA (driver supports)", "cuda", "gpu.driver.cuda_version"),
    ("VBIOS", "vbios", None),
    ("kernel", "kernel", None),
    ("OS", "os", None),
    ("Slurm", "slurm", None),
    ("NCCL", "nccl", None),
)
LEADING = ("group", "GPU model", "GPUs")  # from the node record and the gpu.count check
COMPARED = frozenset(h for h, _, _ in COLUMNS)  # the group's nodes should agree on these


@dataclass(frozen=True)
class InventoryRow:
    """One node's entries, in the order of Inventory.columns ("" where the node has none), and which are odd."""

    node: str
    entries: tuple[str, ...]
    odd: tuple[bool, ...]

    @property
    def is_odd(self) -> bool:
        """Some entry differs from the node's group."""
        return any(self.odd)


@dataclass(frozen=True)
class Variant:
    """One distinct combination of entries and how many nodes have it."""

    entries: tuple[str, ...]
    nodes: int
    example: str


@dataclass(frozen=True)
class Inventory:
    """The columns that have data, a row per node, the distinct combinations (commonest first), the odd nodes."""

    columns: tuple[str, ...]
    rows: tuple[InventoryRow, ...]
    variants: tuple[Variant, ...]

    @property
    def odd_nodes(self) -> tuple[str, ...]:
        """Nodes with an entry their group's majority does not have."""
        return tuple(r.node for r in self.rows if r.is_odd)


def inventory(report: ClusterReport) -> Inventory | None:
    """The inventory table, or None when the report carries none of its fields."""
    headings = LEADING + tuple(h for h, _, _ in COLUMNS)
    full = [(n, _entries(n)) for n in report.nodes]
    keep = [i for i in range(len(headings)) if any(entries[i] for _, entries in full)]
    if not any(i >= len(LEADING) or headings[i] != "group" for i in keep):
        return None
    columns = tuple(headings[i] for i in keep)
    kept = [(node, tuple(entries[i] for i in keep)) for node, entries in full]
    odd = _odd_marks(kept, columns)
    rows = tuple(InventoryRow(node.name, entries, odd[node.name]) for node, entries in kept)
    return Inventory(columns, rows, _variants(rows))


def _entries(node: NodeResult) -> tuple[str, ...]:
    """group, GPU model, GPU count, then the COLUMNS: from the inventory, else the stand-in check."""
    values = {c.check: c.value for c in node.checks if c.value is not None}
    found = node.inventory.to_dict() if node.inventory else {}
    out = [node.group or "", node.gpu_model or "", str(values.get(GPU_COUNT_CHECK, ""))]
    for _, field, check in COLUMNS:
        if field in found:
            out.append(vbios_text(found[field]) if field == "vbios" else str(found[field]))
        else:
            out.append(str(values.get(check, "")) if check else "")
    return tuple(out)


def vbios_text(versions: list[str]) -> str:
    """One VBIOS version when all GPUs agree, else each distinct one with its GPUs: "A (gpu0-6), B (gpu7)"."""
    distinct = list(dict.fromkeys(versions))
    if len(distinct) <= 1:
        return distinct[0] if distinct else ""
    return ", ".join(f"{v} ({_gpus([i for i, x in enumerate(versions) if x == v])})" for v in distinct)


def _gpus(indices: list[int]) -> str:
    """gpu0-6 for a run of indices, gpu0,gpu3 otherwise."""
    if indices == list(range(indices[0], indices[-1] + 1)) and len(indices) > 1:
        return f"gpu{indices[0]}-{indices[-1]}"
    return ",".join(f"gpu{i}" for i in indices)


def _odd_marks(kept: list[tuple[NodeResult, tuple[str, ...]]],
               columns: tuple[str, ...]) -> dict[str, tuple[bool, ...]]:
    """Per node and column: the entry is known and differs from the one most of its group's nodes have."""
    groups: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for node, entries in kept:
        groups.setdefault(node.group or node.gpu_model or "", []).append((node.name, entries))
    out = {}
    for members in groups.values():
        usual = [_majority([e[i] for _, e in members]) if columns[i] in COMPARED else None
                 for i in range(len(columns))]
        for name, entries in members:
            out[name] = tuple(u is not None and e not in ("", NA) and e != u for e, u in zip(entries, usual))
    return out


def _majority(values: list[str]) -> str | None:
    """The entry more nodes have than any other (ties and unknowns give None: no node is the odd one out)."""
    ranked = Counter(v for v in values if v not in ("", NA)).most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _variants(rows: tuple[InventoryRow, ...]) -> tuple[Variant, ...]:
    counts = Counter(r.entries for r in rows)
    first: dict[tuple[str, ...], str] = {}
    for row in rows:
        first.setdefault(row.entries, row.node)
    return tuple(Variant(entries, n, first[entries]) for entries, n in counts.most_common())
