"""A partial certification judges its new nodes by their pairs in aggregate: one bad peer never fails a good new node,
a new node that fails with most of its partners (or whose links are all slow) fails, and peers get no check."""
from __future__ import annotations

from provision.certify.judging import netmatrix, partial
from provision.certify.judging.assemble import assemble
from provision.certify.judging.netmatrix import PairResult
from provision.certify.records import RunScope
from provision.records import NodeInfo

CTL, NEW, PEERS = "ctl01", "cn05", ("cn01", "cn02", "cn03")
EVERYONE = [CTL, NEW, *PEERS]


def pairs(nodes=EVERYONE, value=40.0, slow=(), unmeasured=()):
    """Every ordered pair at `value` Gb/s; links touching a node in `slow` at half; pairs in `unmeasured` failed."""
    out = []
    for a in nodes:
        for b in nodes:
            if a == b:
                continue
            if {a, b} in [set(p) for p in unmeasured]:
                out.append(PairResult(a, b, None, "iperf3", "unable to connect to server"))
            else:
                out.append(PairResult(a, b, value / 2 if {a, b} & set(slow) else value, "iperf3"))
    return out


def judged(found, targets=(NEW,), nodes=EVERYONE):
    pair_checks, node_checks = netmatrix.judge_network(list(nodes), found, None)
    return partial.judge_network(list(targets), found, pair_checks, node_checks, netmatrix.suspects(list(nodes), found))


def test_a_new_node_passes_when_one_peer_is_bad_and_the_pairs_with_it_only_warn():
    pair_checks, node_checks = judged(pairs(slow=("cn02",)))
    [node] = node_checks
    assert node.node == NEW and node.verdict == "pass"
    assert "judged by its pairs in aggregate" in node.detail and "cn02" in node.detail
    with_bad = [c for c in pair_checks if "cn02" in c.subject]
    assert {c.subject for c in with_bad} == {"cn05->cn02", "cn02->cn05"}  # the peers' own pairs get no check
    assert {c.verdict for c in with_bad} == {"warn"} and all("aggregate" in c.detail for c in with_bad)
    assert all(NEW in c.subject for c in pair_checks)


def test_a_peer_that_cannot_be_measured_counts_against_itself_not_the_new_node():
    pair_checks, node_checks = judged(pairs(unmeasured=[(NEW, "cn01")]))
    assert node_checks[0].verdict != "fail" and "cn01" in node_checks[0].detail
    assert "fail" not in {c.verdict for c in pair_checks}


def test_a_new_node_failing_with_most_partners_fails():
    _, node_checks = judged(pairs(unmeasured=[(NEW, CTL), (NEW, "cn01"), (NEW, "cn02")]))
    assert node_checks[0].verdict == "fail" and "3 of its 4 partners" in node_checks[0].detail


def test_a_new_node_whose_links_are_all_slow_fails_against_the_peers_links():
    pair_checks, node_checks = judged(pairs(slow=(NEW,)))
    assert node_checks[0].verdict == "fail" and "below the links between other nodes" in node_checks[0].detail
    assert {c.verdict for c in pair_checks} == {"fail"}


def test_with_one_peer_and_the_controller_half_failing_is_the_new_nodes_fault():
    nodes = [CTL, NEW, "cn01"]
    _, node_checks = judged(pairs(nodes, unmeasured=[(NEW, "cn01")]), nodes=nodes)
    assert node_checks[0].verdict == "fail"


def test_two_new_nodes_are_each_judged_and_a_bad_one_does_not_fail_the_other():
    nodes = [*EVERYONE, "cn06"]
    pair_checks, node_checks = judged(pairs(nodes, slow=("cn06",)), targets=(NEW, "cn06"), nodes=nodes)
    verdicts = {c.node: c.verdict for c in node_checks}
    assert verdicts == {NEW: "pass", "cn06": "fail"}
    assert {c.verdict for c in pair_checks if "cn06" in c.subject} == {"fail"}  # its pairs stay failed


def test_a_partial_report_names_its_scope_and_has_no_check_about_a_peer():
    nodes = [NodeInfo(name=CTL, group="ctl", roles=("controller",)), NodeInfo(name=NEW, group="cn", roles=("compute",))]
    scope = RunScope("partial", (NEW,), PEERS, "3 of 3 compute nodes in service")
    report = assemble(cluster="c", level="quick", nodes=nodes, probes={}, started_at="t0", finished_at="t1",
                      pairs=pairs(slow=("cn02",)), probed=(), scope=scope)
    assert report.scope == scope and [n.name for n in report.nodes] == [CTL, NEW]
    assert report.network.nodes == tuple(EVERYONE)
    assert not [c for c in report.all_checks() if c.node in PEERS]
    assert report.verdict == "warn" and not [n for n in report.nodes if n.verdict == "fail"]
    assert [c.check for c in next(n for n in report.nodes if n.name == CTL).checks] == []  # a partner, not judged
