"""`lifecycle.status`'s record: what each source says about each node, put together; a source that cannot be read
is said, never raised. SSH is replayed from answers recorded on a Slurm 22.05 sandbox cluster (the boundary);
everything above it is the real code."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision.errors import ConnectionFailure
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult
from provision.status import gather as gather_module, slurm
from provision.status.gather import gather, split_answer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm" / "status"


def _recorded(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


NODES = _recorded("22.05-nodes")


def _cluster(nodes: dict = NODES, **states: str) -> ClusterInfo:
    return ClusterInfo(name="st", provider="sandbox", nodes=tuple(
        NodeInfo(name=n["name"], group=n["group"], roles=tuple(n["roles"]), address=n["address"],
                 state=states.get(n["name"], "running")) for n in nodes["nodes"]))


def _replay(monkeypatch, unreachable: tuple[str, ...] = (), version: str = "22.05") -> list[tuple[str, str]]:
    """Answer every SSH command with what the node answered on the real cluster of that Slurm version; the commands
    asked."""
    asked = []
    nodes, query = _recorded(f"{version}-nodes"), _recorded(f"{version}-drain-held-health")

    def run_on(cluster, node, command, timeout):
        asked.append((node.name, command))
        if node.name in unreachable:
            raise ConnectionFailure(f"{node.name} ({node.address}:22): connection refused")
        if command.startswith("sh -c ") and "sinfo" in command:
            return CommandResult(node.name, query["rc"], query["stdout"], query["stderr"])
        assert command == nodes["command"] or "@@ health" not in command
        answer = nodes["answers"][node.name]
        return CommandResult(node.name, answer["rc"], answer["stdout"], answer["stderr"])
    monkeypatch.setattr(gather_module, "run_on", run_on)
    monkeypatch.setattr(slurm, "run_on", run_on)
    return asked


# version -> (Slurm of every node, health of compute01..03: True healthy, None no record yet)
VERSIONS = {"22.05": ("22.05.8", [True, True, True]),
            "24.11": ("24.11.5", [None, None, True])}  # recorded before the first pass of compute01 and 02


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_every_source_is_joined_per_node(monkeypatch, tmp_path, version):
    _replay(monkeypatch, version=version)
    status = gather(_cluster(_recorded(f"{version}-nodes")), tmp_path / "reports")
    by_name = {n.name: n for n in status.nodes}
    assert [n.name for n in status.nodes] == ["ctl01", "compute01", "compute02", "compute03"]
    assert by_name["ctl01"].slurm is None and by_name["ctl01"].health is None  # not a Slurm node, no health program
    assert by_name["compute01"].slurm.reason.startswith("admin: swap fan") and by_name["compute02"].slurm.held
    assert by_name["compute03"].slurm.reason.startswith("hc:munge: ")
    slurm_version, healthy = VERSIONS[version]
    assert [by_name[n].health.ok for n in ("compute01", "compute02", "compute03")] == healthy
    assert all(by_name[n].health.error in ("", "no health record yet") for n in ("compute01", "compute02"))
    assert {n.software.slurm for n in status.nodes} == {slurm_version} and all(n.certify is None for n in status.nodes)
    assert status.counts() == {"idle": 1, "alloc": 0, "drain": 2, "down": 0, "other": 0, "held": 1,
                               "not_responding": 0, "in_slurm": 3}


def test_an_unreachable_controller_keeps_the_provider_states_and_the_nodes(monkeypatch, tmp_path):
    _replay(monkeypatch, unreachable=("ctl01",))
    status = gather(_cluster(), tmp_path / "reports")
    assert not status.slurm.answered and "cannot reach the controller ctl01" in status.slurm.error
    assert [n.node.state for n in status.nodes] == ["running"] * 4 and all(n.slurm is None for n in status.nodes)
    assert status.nodes[0].software.error and status.nodes[1].health.ok  # the others still answered
    document = status.to_dict()
    assert document["slurm"]["answered"] is False and len(document["nodes"]) == 4


def test_nodes_that_are_not_running_are_not_asked(monkeypatch, tmp_path):
    asked = _replay(monkeypatch)
    status = gather(_cluster(compute03="stopped", ctl01="pending"), tmp_path / "reports")
    assert sorted(name for name, _ in asked) == ["compute01", "compute02"]  # the controller is not up: no query
    assert status.slurm.error == "the controller ctl01 is pending: Slurm was not asked"
    assert status.nodes[3].node.state == "stopped" and status.nodes[3].software is None


def test_with_the_health_program_switched_off_no_record_is_read(monkeypatch, tmp_path):
    asked = _replay(monkeypatch)
    status = gather(_cluster(), tmp_path / "reports", health_enabled=False)
    assert all("last.json" not in command for _, command in asked) and all(n.health is None for n in status.nodes)
    assert not status.health_enabled


def test_a_node_answer_splits_into_software_and_health_record():
    answer = NODES["answers"]["ctl01"]
    software, record = split_answer(CommandResult("ctl01", answer["rc"], answer["stdout"], answer["stderr"]))
    assert software.stdout == "os Debian 12\nslurm slurm-wlm 22.05.8\n"
    assert record.rc == 1 and "No such file" in record.stderr
    gone = CommandResult("c9", 255, "", "c9 (10.0.0.9:22): timed out\n")
    assert split_answer(gone) == (gone, CommandResult("c9", 255, "", "c9 (10.0.0.9:22): timed out\n"))
