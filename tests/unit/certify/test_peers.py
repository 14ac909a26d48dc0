"""Which nodes a partial certification measures its new nodes against, and how its MPI job is planned and judged."""
from __future__ import annotations

import pytest

from provision.certify.control import peer_mpi, peers
from provision.records import NodeInfo

SINFO = """\
cn01|idle|0/4/0/4
cn02|mixed|2/2/0/4
cn03|allocated|4/0/0/4
cn04|drained|0/0/4/4
cn05|maint|0/4/0/4
cn06|idle*|0/0/4/4
cn07|down*|0/0/4/4
cn08|idle|0/4/0/4
cn08|idle|0/4/0/4
gp01|idle|0/8/0/8
cn09|draining|2/0/2/4
cn10|idle~|0/4/0/4
"""


def nodes(*names: str) -> list[NodeInfo]:
    return [NodeInfo(name=n, group=n[:2], roles=("compute",)) for n in names]


def test_states_are_read_once_per_node_with_their_idle_cpus():
    found = peers.parse_states(SINFO)
    assert found["cn02"] == peers.Standing("mixed", 2) and found["cn08"] == peers.Standing("idle", 4)
    assert len(found) == 11 and found["cn06"].in_service is False and found["cn01"].in_service


@pytest.mark.parametrize("name", ["cn04", "cn05", "cn06", "cn07", "cn09", "cn10"])
def test_drained_held_down_unresponsive_or_powered_down_nodes_are_never_peers(name):
    assert name not in peers.ranked(nodes(name, "cn01"), peers.parse_states(SINFO), {"cn"})


def test_peers_are_the_new_nodes_group_first_then_idle_before_mixed_before_allocated():
    candidates = nodes("cn03", "cn02", "gp01", "cn08", "cn01", "cn04")
    assert peers.ranked(candidates, peers.parse_states(SINFO), {"cn"}) == ["cn01", "cn08", "cn02", "cn03", "gp01"]
    assert peers.ranked(candidates, peers.parse_states(SINFO), {"gp"})[0] == "gp01"
    assert peers.ranked(candidates, {}, {"cn"}) == []  # no state read: no peer


def test_the_note_says_how_many_were_chosen_and_why_fewer():
    assert peers._note(3, 5, 7, [], 3, "") == ("3 of 5 compute nodes in service (up to 3; the certified nodes' group, "
                                               "idle ones first); 2 other(s) drained, down, held or reserved")
    assert "unreachable over SSH: cn01" in peers._note(1, 2, 2, ["cn01"], 3, "")
    assert peers._note(0, 0, 0, [], 3, "") == "no peer: the cluster has no other compute node"
    assert peers._note(0, 0, 4, [], 3, "exit 1").startswith("no peer: the controller could not list")


def test_the_mpi_job_asks_only_peers_with_an_idle_cpu_best_first():
    assert peer_mpi.plan_peers({"cn01": 4, "cn03": 0, "cn02": 1}) == ["cn01", "cn02"]


def test_the_reservation_flags_are_read_from_scontrol():
    line = "ReservationName=gpu_provision_certify Nodes=cn05 Flags=MAINT,IGNORE_JOBS,SPEC_NODES TRES=cpu=2"
    assert peer_mpi.flags(line) == ["MAINT", "IGNORE_JOBS", "SPEC_NODES"] and peer_mpi.flags("") == [""]


def test_mpi_with_each_peer_fails_a_new_node_only_when_half_or_more_of_its_peers_fail():
    one_bad = peer_mpi.judge("cn05", {"cn01": True, "cn02": False, "cn03": True}, set(), "cn02: Killed")
    assert one_bad.verdict == "warn" and "fails with cn02 and passes with cn01, cn03" in one_bad.detail
    assert one_bad.value == "2/3 peers" and "cn02: Killed" in one_bad.detail
    two_bad = peer_mpi.judge("cn05", {"cn01": False, "cn02": False, "cn03": True}, set(), "x")
    assert two_bad.verdict == "fail" and "fails with cn01, cn02 (2 of 3 peers)" in two_bad.detail
    assert peer_mpi.judge("cn05", {"cn01": False, "cn02": True}, set(), "x").verdict == "fail"  # half
    every_pair = peer_mpi.judge("cn05", {"cn01": True, "cn02": True}, set(), "x")
    assert every_pair.verdict == "warn" and "passes with cn01, cn02" in every_pair.detail
    busy = peer_mpi.judge("cn05", {"cn01": None, "cn02": False, "cn03": True}, set(), "x")  # a busy peer: not counted
    assert busy.verdict == "fail" and peer_mpi.judge("cn05", {"cn01": None}, set(), "x").verdict == "na"


def test_a_peer_that_fails_with_another_peer_too_does_not_count_against_the_new_node():
    check = peer_mpi.judge("cn05", {"cn01": False, "cn02": True}, {"cn01"}, "x")
    assert check.verdict == "warn" and "cn01 fails with another peer too: not this node's fault" in check.detail
    assert peer_mpi.judge("cn05", {"cn01": False, "cn02": False}, {"cn01"}, "x").verdict == "fail"
