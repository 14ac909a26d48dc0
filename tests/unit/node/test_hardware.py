"""Each node's recorded hardware: the reserve rule, the state document, what the inventory renders from it."""
from __future__ import annotations

import pytest
import yaml

from provision import inventory
from provision.cluster import lifecycle
from provision.node import hardware
from provision.node.hardware import NodeHardware
from provision.records import ClusterInfo, NodeInfo
from provision.slurm import layout
from provision.spec.loader import load_spec
from provision.state import ClusterState

SPEC = """\
name: hw
provider: {type: sandbox, subnet: 10.99.0.0/24}
node_groups:
  - {name: ctl, roles: [controller], count: 1}
  - {name: compute, roles: [compute], count: 3}
"""


@pytest.mark.parametrize("memory, reserve", [(2048, 1024), (24105, 1205), (515_000, 16384), (1500, 750)])
def test_reserve_is_five_percent_between_one_and_sixteen_gib_never_half_the_node(memory, reserve):
    assert hardware.memory_reserve_mb(memory) == reserve
    assert NodeHardware(2, 1, 1, 2, 1, memory).real_memory_mb == memory - reserve


def test_from_facts_needs_every_figure_positive():
    facts = {"cpus": "8", "boards": "1", "sockets_per_board": "2", "cores_per_socket": "2", "threads_per_core": "2",
             "memory_mb": "64000"}
    assert NodeHardware.from_facts(facts) == NodeHardware(8, 1, 2, 2, 2, 64000)
    assert NodeHardware.from_facts({**facts, "cores_per_socket": ""}) is None
    assert NodeHardware.from_facts({**facts, "memory_mb": "0"}) is None


def test_record_merges_and_forget_drops(tmp_path):
    state = ClusterState(tmp_path, "hw")
    a, b = NodeHardware(2, 1, 1, 2, 1, 24105), NodeHardware(4, 1, 1, 4, 1, 48000)
    hardware.record(state, {"n1": a})
    hardware.record(state, {"n2": b})
    assert hardware.load(state) == {"n1": a, "n2": b}
    assert oct((state.path / "hardware.json").stat().st_mode & 0o777) == "0o600"
    hardware.forget(state, ["n1"])
    assert hardware.load(state) == {"n2": b}


def test_spec_values_above_the_hardware_are_excesses():
    hw = NodeHardware(2, 1, 1, 2, 1, 24105)
    node = NodeInfo(name="n1", group="g", roles=("compute",), cpus=4, real_memory_mb=24105)
    assert [(e.field, e.asked, e.found) for e in hardware.excesses(node, hw)] == [("cpus", 4, 2)]


def test_identical_nodes_share_a_line_and_different_ones_get_their_own():
    nodes = tuple(NodeInfo(name=f"n{i}", group="g", roles=("compute",), partition="p") for i in range(1, 5))
    cluster = ClusterInfo(name="c", provider="static", nodes=nodes)
    small, big = NodeHardware(2, 1, 1, 2, 1, 24105), NodeHardware(4, 1, 1, 4, 1, 24105)
    entries = layout.node_entries(cluster, {"n1": small, "n2": small, "n3": big, "n4": small})
    assert [(e["names"], e["cpus"]) for e in entries] == [("n[1-2,4]", 2), ("n3", 4)]
    [partition] = layout.partition_entries(cluster, {"n1": small, "n2": small, "n3": big, "n4": small})
    assert partition["def_mem_per_cpu"] == big.real_memory_mb // 4  # the smallest share of the partition


def test_inventory_renders_slurm_lines_from_the_recorded_hardware(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "hw.yaml"
    path.write_text(SPEC)
    spec = load_spec(path)
    cluster = lifecycle.planned_cluster(spec)
    state = ClusterState(tmp_path / "state", "hw")
    before = yaml.safe_load(inventory.render(spec, cluster)["group_vars/all/cluster.yml"].replace("!unsafe ", ""))
    assert before["slurm_nodes"] == [{"names": "compute[01-03]"}]  # nothing recorded: only what the spec says
    hardware.record(state, {f"compute0{i}": NodeHardware(2, 1, 1, 2, 1, 24105) for i in (1, 2, 3)})
    after = yaml.safe_load(inventory.render(spec, cluster)["group_vars/all/cluster.yml"].replace("!unsafe ", ""))
    assert after["slurm_nodes"] == [{"names": "compute[01-03]", "cpus": 2, "boards": 1, "sockets_per_board": 1,
                                     "cores_per_socket": 2, "threads_per_core": 1, "real_memory": 22900}]
    assert after["slurm_partitions"][0]["def_mem_per_cpu"] == 11450
