"""Folding the plan's tables: runs of nodes that differ only by a following number become one hostlist row."""
from __future__ import annotations

import pytest

from provision.cli.plan_view import fold
from provision.cluster.change import NodeChange
from provision.hostlist import expand, next_in_range
from provision.providers.base import PlanItem


def _items(names: str, details: list[str], kind: str = "host", cost: float | None = None) -> list[PlanItem]:
    return [PlanItem(kind, name, detail, cost) for name, detail in zip(expand(names), details)]


def _creation(items: list[PlanItem]) -> list[tuple[str, str, int]]:
    return [(r.name, r.detail, r.size) for r in fold(items, lambda i: i.name, lambda i: i.detail,
                                                     lambda i: (i.kind, i.hourly_cost_usd))]


FOLDS = [
    ("addresses that follow", _items("gpu[01-16]", [f"10.0.0.{i}" for i in range(11, 27)]),
     [("gpu[01-16]", "10.0.0.[11-26]", 16)]),
    ("the same detail", _items("node[8-12]", ["CPU only"] * 5), [("node[8-12]", "CPU only", 5)]),
    ("a run splits where the address leaves its /24",
     _items("n[1-4]", ["10.0.0.254", "10.0.0.255", "10.0.1.0", "10.0.1.1"]),
     [("n[1-2]", "10.0.0.[254-255]", 2), ("n[3-4]", "10.0.1.[0-1]", 2)]),
    ("a gap in the names", _items("n[1-2,4]", ["a", "a", "a"]), [("n[1-2]", "a", 2), ("n4", "a", 1)]),
    ("a different padding is another run", [PlanItem("host", "n9", "a"), PlanItem("host", "n010", "a")],
     [("n9", "a", 1), ("n010", "a", 1)]),
    ("padding kept past a power of ten", _items("gpu[098-101]", ["x"] * 4), [("gpu[098-101]", "x", 4)]),
    ("details that neither match nor follow", _items("n[1-3]", ["a", "b", "c"]),
     [("n1", "a", 1), ("n2", "b", 1), ("n3", "c", 1)]),
    ("shared then following details do not mix", _items("n[1-4]", ["x1", "x1", "x2", "x3"]),
     [("n[1-2]", "x1", 2), ("n[3-4]", "x[2-3]", 2)]),
    ("another kind", [PlanItem("bridge", "br1", ""), PlanItem("node", "br2", "")], [("br1", "", 1), ("br2", "", 1)]),
    ("another price", [PlanItem("i", "a1", "", 1.0), PlanItem("i", "a2", "", 2.0)], [("a1", "", 1), ("a2", "", 1)]),
    ("names without numbers", [PlanItem("vpc", "demo-vpc", ""), PlanItem("subnet", "demo-subnet", "")],
     [("demo-vpc", "", 1), ("demo-subnet", "", 1)]),
]


@pytest.mark.parametrize("items, expected", [c[1:] for c in FOLDS], ids=[c[0] for c in FOLDS])
def test_runs_fold_into_hostlists(items, expected):
    assert _creation(items) == expected


def test_every_folded_row_expands_back_to_its_nodes_and_addresses():
    items = _items("compute[0001-1000]", [f"10.{i // 250}.{i % 250 // 10}.{i % 10 + 1}" for i in range(1000)])
    rows = fold(items, lambda i: i.name, lambda i: i.detail, lambda i: i.kind)
    assert sum(r.size for r in rows) == 1000 and len(rows) == 100
    pairs = [(n, a) for r in rows for n, a in zip(expand(r.name), expand(r.detail))]
    assert pairs == [(i.name, i.detail) for i in items]


def test_the_change_table_folds_nodes_with_the_same_action_group_and_details():
    nodes = [NodeChange(f"cn{i:03d}", "add", "cn") for i in range(1, 501)] + \
        [NodeChange("cn501", "add", "cn", ("held until certify passes",)), NodeChange("gpu01", "remove", "gpu")]
    rows = fold(nodes, lambda n: n.name, lambda n: "; ".join(n.details), lambda n: (n.group, n.action))
    assert [(r.name, r.first.action, r.detail) for r in rows] == [
        ("cn[001-500]", "add", ""), ("cn501", "add", "held until certify passes"), ("gpu01", "remove", "")]


@pytest.mark.parametrize("name, previous, follows", [
    ("gpu10", "gpu09", True), ("node10", "node9", True), ("gpu100", "gpu099", True), ("10.0.0.2", "10.0.0.1", True),
    ("gpu010", "gpu9", False), ("gpu02", "gpu1", False), ("gpu3", "gpu1", False), ("b2", "a1", False),
    ("gpu", "gpu", False), ("gpu1", "gpu", False), ("gpu٢", "gpu1", False),
])
def test_next_in_range(name, previous, follows):
    assert next_in_range(name, previous) is follows
