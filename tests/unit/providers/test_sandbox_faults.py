"""cut_pair's commands: one prohibit route in each node's netns, to the other node's address only."""
from __future__ import annotations

from provision.providers.sandbox.faults import pair_routes
from provision.providers.sandbox.record import NodeRecord


def node(name: str, address: str) -> NodeRecord:
    return NodeRecord(name=name, address=address, netns=f"gp-health-{name}", veth=f"v{name}", dir=f"/x/{name}")


def test_a_pair_cut_refuses_each_nodes_address_in_the_others_namespace_only():
    a, b = node("compute03", "10.93.0.13"), node("compute06", "10.93.0.16")
    assert pair_routes(a, b, "replace") == [
        ["ip", "-n", "gp-health-compute03", "route", "replace", "prohibit", "10.93.0.16/32"],
        ["ip", "-n", "gp-health-compute06", "route", "replace", "prohibit", "10.93.0.13/32"]]


def test_restoring_deletes_the_same_two_routes():
    a, b = node("compute03", "10.93.0.13"), node("compute06", "10.93.0.16")
    assert [r[4] for r in pair_routes(a, b, "del")] == ["del", "del"]
    assert [r[5:] for r in pair_routes(a, b, "del")] == [r[5:] for r in pair_routes(a, b, "replace")]
