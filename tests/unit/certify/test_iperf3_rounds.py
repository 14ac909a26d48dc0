"""The iperf3 matrix's rounds through Slurm (control/iperf3_rounds.py): the program every task of a round's step runs,
run for real by bash on local stand-in "nodes" with a stand-in iperf3 (tests/fixtures/fake_iperf3), and the matrix
built from those steps. The real path (srun on sandbox nodes) is run by the certify e2e tests."""
from __future__ import annotations

import shlex
import zlib
from pathlib import Path

import pytest

from provision.certify.control import iperf3_rounds, network, schedule, srun
from provision.certify.judging import netmatrix

from local_steps import run_tasks
from test_run_network import FakeFleet


class FakeSlurm:
    """Runs each step's program on every node of the step at once, as local bash processes (the node's name in
    $SLURMD_NODENAME, the stand-in iperf3 and ss first on PATH); `lost` nodes print nothing and srun names them."""

    def __init__(self, folder: Path, lost: tuple[str, ...] = ()) -> None:
        self.folder, self.lost, self.steps = folder, set(lost), []

    def run(self, one: srun.Step) -> srun.StepOutput:
        self.steps.append(one)
        argv = shlex.split(one.command)
        assert argv[:2] == ["bash", "-c"] and len(argv) == 3
        texts = run_tasks(argv[2], one.nodes, self.folder, one.timeout_s)
        errors = {node: "Node failure" for node in self.lost}
        return srun.StepOutput(0, {n: t for n, t in texts.items() if n not in self.lost}, errors)

    def calls(self) -> list[tuple[str, str, str]]:
        path = self.folder / "calls"
        lines = path.read_text().splitlines() if path.exists() else []
        return [(line.split(" ", 1)[0], *line.split(" ", 1)[1].rsplit(" ", 1)) for line in lines]


def write_rates(folder: Path, addresses: dict[str, str], slow=(), noise=False) -> None:
    """Every node to every address: 1 Gb/s (give or take 1 % with `noise`), 0.02 through a `slow` node."""
    lines = []
    for node in addresses:
        for peer, address in addresses.items():
            if peer == node:
                continue

            def rate(src, dst):
                jitter = (zlib.crc32(f"{src}>{dst}".encode()) % 21 - 10) / 1000 if noise else 0.0
                return 0.02 if {src, dst} & set(slow) else round(1.0 + jitter, 3)
            lines.append(f"{node} {address} {rate(node, peer)} {rate(peer, node)}")
    (folder / "rates").write_text("\n".join(lines) + "\n")
    (folder / "refuse").mkdir(exist_ok=True)


@pytest.fixture
def fake(tmp_path) -> FakeSlurm:
    return FakeSlurm(tmp_path)


def round_of(fake: FakeSlurm, nodes, clients, seconds=1):
    step = iperf3_rounds.step(nodes, clients, 25000, seconds, "1G", "certify-net-r1")
    output = fake.run(step)
    return {node: iperf3_rounds.results(text) for node, text in output.texts.items()}


def test_each_client_measures_its_peer_both_ways_and_a_server_prints_nothing(fake):
    addresses = {"a": "10.0.0.1", "b": "10.0.0.2", "c": "10.0.0.3", "ctl": "10.0.0.9"}
    write_rates(fake.folder, addresses, slow={"ctl"})
    clients = [iperf3_rounds.Client("a", "10.0.0.2"), iperf3_rounds.Client("c", "10.0.0.9")]  # ctl: a daemon
    found = round_of(fake, ["a", "c", "b"], clients)
    assert found["b"] == {}
    assert {d: rc for d, (rc, _) in found["a"].items()} == {"forward": 0, "reverse": 0}
    assert network.Iperf3.parse(found["a"]["forward"][1]) == 1.0
    assert network.Iperf3.parse(found["c"]["reverse"][1]) == 0.02
    assert sorted(fake.calls()) == [("a", "10.0.0.2", "forward"), ("a", "10.0.0.2", "reverse"),
                                    ("c", "10.0.0.9", "forward"), ("c", "10.0.0.9", "reverse")]
    step = fake.steps[0]
    assert step.nodes == ("a", "c", "b") and step.ntasks_per_node == 1 and step.job_name == "certify-net-r1"
    assert "--mem=256M" in shlex.split(step.shell())  # not all of each node's memory: certify's sbatch runs beside


@pytest.mark.parametrize("exit_status", ["1", "0"])  # 0: iperf3 3.12 (Debian 12) with -J, when it cannot connect
def test_a_refused_connection_is_tried_again_until_the_server_answers(fake, monkeypatch, exit_status):
    monkeypatch.setenv("FAKE_IPERF3_ERROR_EXIT", exit_status)
    write_rates(fake.folder, {"a": "10.0.0.1", "b": "10.0.0.2"})
    (fake.folder / "refuse" / "a-10.0.0.2").write_text("2")
    found = round_of(fake, ["a", "b"], [iperf3_rounds.Client("a", "10.0.0.2")])
    assert found["a"]["forward"][0] == 0 and found["a"]["reverse"][0] == 0
    assert network.Iperf3.parse(found["a"]["forward"][1]) == 1.0
    assert [c[2] for c in fake.calls()] == ["forward"] * 3 + ["reverse"]


@pytest.mark.parametrize("exit_status", ["1", "0"])
def test_a_link_that_never_connects_fails_both_ways_after_the_window_and_reverse_is_tried_once(fake, monkeypatch,
                                                                                              exit_status):
    monkeypatch.setattr(iperf3_rounds, "CONNECT_WINDOW_S", 1)
    monkeypatch.setenv("FAKE_IPERF3_ERROR_EXIT", exit_status)
    write_rates(fake.folder, {"a": "10.0.0.1", "b": "10.0.0.2"})
    (fake.folder / "refuse" / "a-10.0.0.2").write_text("always")
    found = round_of(fake, ["a", "b"], [iperf3_rounds.Client("a", "10.0.0.2")])
    assert found["a"]["forward"][0] == found["a"]["reverse"][0] == int(exit_status)
    with pytest.raises(ValueError, match="Connection refused"):
        network.Iperf3.parse(found["a"]["forward"][1])
    directions = [c[2] for c in fake.calls()]
    assert directions.count("forward") >= 2 and directions.count("reverse") == 1


def test_names_and_addresses_reach_the_program_as_data_not_as_shell(fake):
    write_rates(fake.folder, {"a": "10.0.0.1"})
    hostile = f"10.0.0.2$(touch {fake.folder}/pwned);`touch {fake.folder}/pwned2`"
    found = round_of(fake, ["a", "b"], [iperf3_rounds.Client("a", hostile)])
    assert not (fake.folder / "pwned").exists() and not (fake.folder / "pwned2").exists()
    assert ("a", hostile, "forward") in fake.calls() and set(found["a"]) == {"forward", "reverse"}


def test_the_program_stays_under_linux_limit_for_one_argument_at_4000_nodes():
    clients = [iperf3_rounds.Client(f"gpu{i:04d}", f"10.{i // 62500}.{i // 250 % 250}.{i % 250 + 1}")
               for i in range(2000)]
    assert len(iperf3_rounds.step([c.node for c in clients], clients, 25000, 1, None, "j").command) < 128 * 1024


def test_a_pair_with_a_node_outside_slurm_is_measured_from_the_node_inside():
    in_slurm = {"ctl": False, "n1": True, "n2": True, "store": False}
    assert iperf3_rounds.orient(("ctl", "n1"), in_slurm) == ("n1", "ctl")
    assert iperf3_rounds.orient(("n1", "ctl"), in_slurm) == ("n1", "ctl")
    assert iperf3_rounds.orient(("n1", "n2"), in_slurm) == ("n1", "n2")
    assert iperf3_rounds.orient(("ctl", "store"), in_slurm) == ("ctl", "store")


def fleet_of(n: int) -> dict[str, str]:
    return {"ctl01": "10.1.9.1", **{f"gpu{i:04d}": f"10.1.{i // 250}.{i % 250 + 1}" for i in range(n)}}


def test_at_quick_a_slow_node_of_16_is_named_by_steps_alone_one_step_per_round(fake):
    addresses = fleet_of(16)
    culprit = "gpu0008"
    write_rates(fake.folder, addresses, slow={culprit}, noise=True)
    compute = frozenset(n for n in addresses if n != "ctl01")
    plan = schedule.plan(list(addresses), "quick", seed=35)
    fleet = FakeFleet(addresses)
    slurm = network.SlurmRounds(compute, fake.run, "certify-net-r1")
    pairs = network.measure_iperf3(fleet, addresses, "r1", network.Iperf3(port=25000), plan, slurm)
    # the control machine ran a daemon on the controller only, and no client: every pair ran in a step
    assert list(fleet.started) == ["ctl01"] and fleet.killed == [("ctl01", 1000)] and fleet.clients == []
    first = len(plan.rounds)
    assert len(fake.steps) > first and all(set(s.nodes) <= compute for s in fake.steps)
    assert all(len(s.nodes) == len(set(s.nodes)) for s in fake.steps)
    assert len({frozenset((p.src, p.dst)) for p in pairs}) == plan.pairs
    _, node_checks = netmatrix.judge_network(list(addresses), pairs, None)
    assert {c.node for c in node_checks if c.verdict != "pass"} == {culprit}


def test_a_node_lost_during_a_round_fails_its_pairs_with_srun_s_reason(tmp_path):
    addresses = {"ctl01": "10.0.0.9", "n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3", "n4": "10.0.0.4"}
    fake = FakeSlurm(tmp_path, lost=("n2",))
    write_rates(fake.folder, addresses)
    slurm = network.SlurmRounds(frozenset(addresses) - {"ctl01"}, fake.run, "j")
    pairs = network.measure_iperf3(FakeFleet(addresses), addresses, "r1", network.Iperf3(port=25000), None, slurm)
    lost = [p for p in pairs if p.value_gbps is None]
    assert lost and all("n2" in (p.src, p.dst) and p.error.startswith("Node failure") for p in lost)
    assert all(p.value_gbps == 1.0 for p in pairs if "n2" not in (p.src, p.dst))
