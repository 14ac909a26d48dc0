"""slurmctld's view of every node for `provision status`: the one query's output, recorded on sandbox clusters of
Slurm 22.05 (Debian 12) and 24.11 (Debian 13), parsed into records; and what is said when it cannot be asked."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision.errors import ConnectionFailure
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult
from provision.status import slurm
from provision.status.records import SlurmNode

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm" / "status"
ADMIN = "admin: swap fan | ticket=123 (rack 4, slot 7)"  # a '|' and a '=' in it: still read whole
HEALTH_MUNGE = ('hc:munge: munge: Error: Failed to access "/run/munge/munge.socket.2": No such file or directory '
                "(Did you start munged?) (gpu-provision-health)")
HEALTH_SLURMD = "hc:slurmd: no slurmd process is running (gpu-provision-health)"
PSU = "admin: psu replaced, waiting for burn-in"


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def view(name: str):
    doc = recorded(name)
    return slurm.parse(doc["stdout"], doc["stderr"], asked="ctl01")


# fixture -> node -> (state, flags, reason, reason_user, held, summary class)
CASES = {
    "22.05-drain-held-health": {
        "compute01": ("allocated", ("drain",), ADMIN, "root", False, "drain"),
        "compute02": ("idle", ("maintenance", "reserved"), "", "", True, "idle"),
        "compute03": ("idle", ("drain",), HEALTH_MUNGE, "root", False, "drain"),
    },
    "22.05-drained-not-responding": {
        "compute01": ("idle", ("drain",), ADMIN, "root", False, "drain"),
        "compute02": ("idle", ("maintenance", "reserved"), "", "", True, "idle"),
        "compute03": ("idle", ("drain", "not_responding"), HEALTH_SLURMD, "root", False, "drain"),
    },
    "22.05-alloc-held-down": {
        "compute01": ("allocated", (), "", "", False, "alloc"),
        "compute02": ("idle", ("maintenance", "reserved"), "", "", True, "idle"),
        "compute03": ("down", ("drain", "not_responding"), PSU, "root", False, "down"),
    },
    "24.11-drain-held-health": {
        "compute01": ("mixed", ("drain",), ADMIN, "root", False, "drain"),  # 22.05 said allocated+drain here
        "compute02": ("idle", ("maintenance", "reserved"), "", "", True, "idle"),
        "compute03": ("idle", ("drain",), HEALTH_MUNGE, "root", False, "drain"),
    },
    "24.11-drained-not-responding": {
        "compute01": ("mixed", ("drain",), ADMIN, "root", False, "drain"),
        "compute02": ("idle", ("maintenance", "reserved"), "", "", True, "idle"),
        "compute03": ("idle", ("drain", "not_responding"), HEALTH_SLURMD, "root", False, "drain"),
    },
    "24.11-alloc-held-down": {
        "compute01": ("allocated", (), "", "", False, "alloc"),
        "compute02": ("idle", ("maintenance", "reserved"), "", "", True, "idle"),
        "compute03": ("down", ("drain", "not_responding"), PSU, "root", False, "down"),
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_node_has_its_state_flags_reason_who_and_hold(name):
    found = view(name)
    assert found.answered and set(found.nodes) == set(CASES[name])
    for node, (state, flags, reason, user, held, category) in CASES[name].items():
        got = found.nodes[node]
        assert (got.state, got.flags, got.reason, got.reason_user, got.held, got.category) == \
            (state, flags, reason, user, held, category), node
        assert bool(got.reason_time) == bool(reason)  # when it was set: 2026-11-27T15:56:18


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("2*.json") if not p.stem.endswith("nodes")))
def test_the_fixtures_are_outputs_of_the_query_status_runs_on_both_versions(name):
    doc = recorded(name)
    assert doc["command"] == slurm.COMMAND  # re-record them when the query changes
    assert doc["slurm"] in ("22.05", "24.11") and name.startswith(doc["slurm"])


def test_both_versions_are_recorded_for_every_case():
    names = {p.stem for p in FIXTURES.glob("2*.json")}
    assert {n.split("-", 1)[1] for n in names if n.startswith("22.05")} == \
        {n.split("-", 1)[1] for n in names if n.startswith("24.11")}


@pytest.mark.parametrize("name", ["22.05-slurmctld-down", "24.11-slurmctld-down"])
def test_slurmctld_down_is_said_with_its_own_error_and_no_node(name):
    found = view(name)
    assert not found.answered and found.nodes == {}
    assert found.error == ("slurmctld did not answer sinfo on ctl01: slurm_load_partitions: Unable to contact slurm "
                           "controller (connect failure)")


def test_a_query_that_did_not_run_says_why():
    found = slurm.parse("", "sudo: a password is required\n", asked="ctl01")
    assert not found.answered and found.error == "the query did not run on ctl01: sudo: a password is required"
    timed_out = slurm.parse(f"{slurm.END} 124\n", "", asked="ctl01")
    assert timed_out.error == f"slurmctld did not answer sinfo on ctl01: no answer within {slurm.QUERY_TIMEOUT_S} s"


def test_a_node_listed_in_two_partitions_is_one_record():
    text = "c1|idle|Unknown|Unknown|none\nc1|idle|Unknown|Unknown|none\n" + f"{slurm.END} 0\n"
    assert list(slurm.parse(text).nodes) == ["c1"]


def test_a_line_that_is_not_a_node_is_skipped():
    assert slurm.parse_line("") is None and slurm.parse_line("garbage") is None
    assert slurm.parse_line("c1|mixed+drain|bob|2026-01-01T00:00:00|a|b|c") == SlurmNode(
        "c1", "mixed", ("drain",), "a|b|c", "bob", "2026-01-01T00:00:00")


CLUSTER = ClusterInfo(name="c", provider="sandbox", nodes=(
    NodeInfo(name="ctl01", group="ctl", roles=("controller",), address="10.0.0.10", state="running"),
    NodeInfo(name="compute01", group="compute", roles=("compute",), address="10.0.0.11", state="running")))


def test_one_query_from_the_controller_for_all_nodes(monkeypatch):
    asked = []

    def run_on(cluster, node, command, timeout):
        asked.append((node.name, command))
        doc = recorded("22.05-drain-held-health")
        return CommandResult(node.name, doc["rc"], doc["stdout"], doc["stderr"])
    monkeypatch.setattr(slurm, "run_on", run_on)
    found = slurm.read(CLUSTER)
    assert [name for name, _ in asked] == ["ctl01"] and len(found.nodes) == 3
    command = asked[0][1]
    assert command.count(f"timeout {slurm.QUERY_TIMEOUT_S} sinfo") == 1 and " -N " in command
    assert "compute0" not in command  # no node is named: sinfo lists them all


def test_an_unreachable_controller_is_said_and_not_raised(monkeypatch):
    def run_on(cluster, node, command, timeout):
        raise ConnectionFailure("ctl01 (10.0.0.10:22): connection refused", hint="is sshd running?")
    monkeypatch.setattr(slurm, "run_on", run_on)
    found = slurm.read(CLUSTER)
    assert not found.answered and found.nodes == {} and found.asked == "ctl01"
    assert found.error.startswith("cannot reach the controller ctl01: ") and "connection refused" in found.error
