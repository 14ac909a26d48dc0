"""The pairwise matrix: the round schedule covers every ordered pair, servers are stopped by PID, a slow
node is localised."""
from __future__ import annotations

import itertools
from dataclasses import replace
import json
import re
import shlex
import zlib

import pytest

from provision.certify.control import network, schedule
from provision.certify.control.fleet import Outcome
from provision.certify.judging import netmatrix
from provision.certify.probe import PROBE_VERSION
from provision.certify.probe.document import ProbeDocument


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9])
def test_rounds_meet_every_pair_once_with_disjoint_pairs_per_round(n):
    nodes = [f"n{i}" for i in range(n)]
    schedule = network.schedule.circle(nodes)
    assert len(schedule) == (n - 1 if n % 2 == 0 else n)
    met = [frozenset(pair) for round_ in schedule for pair in round_]
    assert sorted(met, key=sorted) == sorted({frozenset(p) for p in itertools.combinations(nodes, 2)}, key=sorted)
    for round_ in schedule:
        ends = [node for pair in round_ for node in pair]
        assert len(ends) == len(set(ends))


def test_one_node_has_no_rounds():
    assert network.schedule.circle(["only"]) == []


def test_iperf3_commands():
    tool = network.Iperf3(port=23456, seconds=2, bitrate="1G")
    client = shlex.split(tool.client("10.0.0.5", reverse=True))
    assert client[:2] == ["timeout", "17"] and "-J" in client and client[-1] == "-R"
    assert client[client.index("-c") + 1] == "10.0.0.5" and client[client.index("-b") + 1] == "1G"
    assert "-b" not in network.Iperf3(port=1).client("h", reverse=False)
    assert "-D" in tool.server("r1") and "/run/gpu-provision-certify/r1/iperf3.pid" in tool.server("r1")
    assert tool.stop(4242, "r1").startswith("kill 4242")


def iperf3_json(gbps: float) -> str:
    bits = gbps * 1e9
    return json.dumps({"start": {"test_start": {"num_streams": 1}},
                       "end": {"sum_sent": {"bits_per_second": bits, "retransmits": 0},
                               "sum_received": {"bits_per_second": bits, "seconds": 1.0}}})


class FakeFleet:
    """Nodes that run iperf3: links through `slow` nodes and the `slow_pairs` run at 0.02 Gb/s, others at 1.0 (give
    or take 1 % per direction with `noise`); `dead` servers never start."""

    def __init__(self, addresses, slow=(), dead=(), busy_once=(), dip_once=(), slow_pairs=(), noise=False):
        self.by_address = {a: n for n, a in addresses.items()}
        self.slow, self.dead, self.busy, self.dip = set(slow), set(dead), set(busy_once), set(dip_once)
        self.slow_pairs, self.noise = {frozenset(p) for p in slow_pairs}, noise
        self.started, self.killed, self.clients = {}, [], []

    def run(self, name, command, timeout=60.0):
        if "iperf3 -s" in command:
            if name in self.dead:
                return Outcome(name, 1, "", "iperf3: error - unable to start listener for connections")
            self.started[name] = 1000 + len(self.started)
            return Outcome(name, 0, f"{self.started[name]}\n")
        if command.startswith("kill "):
            self.killed.append((name, int(command.split()[1])))
            return Outcome(name, 0)
        argv = shlex.split(command)
        dst = self.by_address[argv[argv.index("-c") + 1]]
        src, to = (dst, name) if "-R" in argv else (name, dst)
        if (src, to) in self.busy:
            self.busy.discard((src, to))
            return Outcome(name, 1, json.dumps({"error": "the server is busy running a test. try again later"}))
        self.clients.append((src, to))
        if (src, to) in self.dip:  # another job's traffic for one measurement: 12 % down, then gone
            self.dip.discard((src, to))
            return Outcome(name, 0, iperf3_json(0.88))
        slow = {src, to} & self.slow or frozenset((src, to)) in self.slow_pairs
        jitter = (zlib.crc32(f"{src}>{to}".encode()) % 21 - 10) / 1000 if self.noise else 0.0
        return Outcome(name, 0, iperf3_json(0.02 if slow else round(1.0 + jitter, 3)))

    def run_many(self, commands, timeout=60.0):
        return {n: self.run(n, c, timeout) for n, c in commands.items()}


ADDRESSES = {"ctl01": "10.0.0.10", "node01": "10.0.0.11", "store01": "10.0.0.12", "store02": "10.0.0.13"}


def test_every_ordered_pair_is_measured_once_and_every_server_is_stopped_by_its_pid():
    fleet = FakeFleet(ADDRESSES)
    pairs = network.measure_iperf3(fleet, ADDRESSES, "r1", network.Iperf3(port=25000))
    ordered = [(p.src, p.dst) for p in pairs]
    assert sorted(ordered) == sorted(itertools.permutations(ADDRESSES, 2))
    assert all(p.value_gbps == 1.0 and p.tool == "iperf3" for p in pairs)
    assert sorted(fleet.killed) == sorted(fleet.started.items())


def test_a_slowed_node_is_localised_to_that_node():
    pairs = network.measure_iperf3(FakeFleet(ADDRESSES, slow={"store02"}), ADDRESSES, "r1",
                                   network.Iperf3(port=25000))
    pair_checks, node_checks = netmatrix.judge_network(list(ADDRESSES), pairs, None)
    verdicts = {c.node: c.verdict for c in node_checks}
    assert verdicts == {"ctl01": "pass", "node01": "pass", "store01": "pass", "store02": "fail"}
    failed = {c.subject for c in pair_checks if c.verdict == "fail"}
    assert failed == {f"{a}->{b}" for a, b in itertools.permutations(ADDRESSES, 2) if "store02" in (a, b)}


def test_a_slowed_node_is_measured_again_and_its_fail_is_confirmed_with_both_figures():
    fleet = FakeFleet(ADDRESSES, slow={"store02"})
    pairs = network.measure_iperf3(fleet, ADDRESSES, "r1", network.Iperf3(port=25000))
    twice = {pair for pair in set(fleet.clients) if fleet.clients.count(pair) == 2}
    assert twice == {(a, b) for a, b in itertools.permutations(ADDRESSES, 2) if "store02" in (a, b)}
    assert len(fleet.clients) == 12 + 6  # every direction once, store02's six directions again
    pair_checks, node_checks = netmatrix.judge_network(list(ADDRESSES), pairs, None)
    assert {c.node: c.verdict for c in node_checks}["store02"] == "fail"
    slow = [c for c in pair_checks if "store02" in c.subject]
    assert all(c.verdict == "fail" and c.detail.startswith("confirmed: 0.02 then 0.02 Gb/s") for c in slow)


def test_a_dip_in_one_measurement_is_a_warning_naming_both_figures_not_a_fail():
    fleet = FakeFleet(ADDRESSES, dip_once={("ctl01", "node01")})
    pairs = network.measure_iperf3(fleet, ADDRESSES, "r1", network.Iperf3(port=25000))
    first_alone = [replace(p, retested=False, again_gbps=None) for p in pairs]
    assert "fail" in {c.verdict for c in netmatrix.judge_network(list(ADDRESSES), first_alone, None)[0]}
    pair_checks, node_checks = netmatrix.judge_network(list(ADDRESSES), pairs, None)
    dipped = next(c for c in pair_checks if c.subject == "ctl01->node01")
    assert dipped.verdict == "warn" and dipped.detail.startswith("not confirmed: 0.88 then 1 Gb/s measured again")
    assert [c.verdict for c in pair_checks].count("warn") == 1 and "fail" not in {c.verdict for c in pair_checks}
    assert {c.verdict for c in node_checks} == {"pass"}
    assert network.netmatrix.build(list(ADDRESSES), pairs).values[0][1] == 1.0  # the matrix shows the better


def test_a_node_whose_server_does_not_start_fails_its_pairs_and_the_others_are_still_stopped():
    fleet = FakeFleet(ADDRESSES, dead={"node01"})
    pairs = network.measure_iperf3(fleet, ADDRESSES, "r1", network.Iperf3(port=25000))
    broken = [p for p in pairs if p.value_gbps is None]
    assert {(p.src, p.dst) for p in broken} == {(a, b) for a, b in itertools.permutations(ADDRESSES, 2)
                                                 if "node01" in (a, b)}
    assert all("unable to start listener" in p.error for p in broken)
    assert {n for n, _ in fleet.killed} == {"ctl01", "store01", "store02"}


def test_a_busy_server_is_retried_once(monkeypatch):
    monkeypatch.setattr(network, "BUSY_RETRY_S", 0)
    fleet = FakeFleet(ADDRESSES, busy_once={("node01", "store01"), ("store01", "node01")})
    pairs = network.measure_iperf3(fleet, ADDRESSES, "r1", network.Iperf3(port=25000))
    assert all(p.value_gbps == 1.0 for p in pairs)


def test_servers_are_stopped_even_when_a_round_raises():
    class Exploding(FakeFleet):
        def run(self, name, command, timeout=60.0):
            if " -c " in f" {command} ":
                raise RuntimeError("connection lost")
            return super().run(name, command, timeout)

    fleet = Exploding(ADDRESSES)
    with pytest.raises(RuntimeError):
        network.measure_iperf3(fleet, ADDRESSES, "r1", network.Iperf3(port=25000))
    assert sorted(fleet.killed) == sorted(fleet.started.items())


def test_rdma_is_used_only_when_every_node_has_an_active_port():
    port = {"device": "mlx5_0", "port": 1, "state": "ACTIVE", "rate_gbps": 400.0, "link_layer": "InfiniBand"}
    probes = {name: ProbeDocument.from_dict({"probe_version": PROBE_VERSION, "mode": "probe", "rdma": ports})
              for name, ports in (("a", [port]), ("b", [port]), ("c", [{**port, "state": "DOWN"}]))}
    assert network.rdma_device(probes, ["a", "b"]) == (True, "mlx5_0")
    assert network.rdma_device(probes, ["a", "b", "c"]) == (False, None)
    assert network.rdma_device(probes, []) == (False, None)


def test_ib_write_bw_commands_and_parse(fixtures_dir):
    tool = network.IbWriteBw(port=18515, device="mlx5_0")
    assert re.search(r"ib_write_bw --report_gbits -F -p 18515 -d mlx5_0 10\.0\.0\.2$", tool.client("10.0.0.2"))
    assert "10.0.0.2" not in tool.one_shot_server()
    assert tool.parse((fixtures_dir / "ib_write_bw_4qp_gbits.txt").read_text()) > 0


def fleet_of(n):
    return {f"gpu{i:04d}": f"10.1.{i // 250}.{i % 250 + 1}" for i in range(n)}


@pytest.mark.parametrize("n", [16, 64])
def test_a_slow_node_at_quick_is_named_and_no_other_though_only_a_sample_of_its_pairs_is_measured(n):
    addresses = fleet_of(n)
    culprit = f"gpu{n // 2:04d}"
    plan = schedule.plan(list(addresses), "quick", seed=35)
    fleet = FakeFleet(addresses, slow={culprit}, noise=True)
    pairs = network.measure_iperf3(fleet, addresses, "r1", network.Iperf3(port=25000), plan)
    assert len({frozenset((p.src, p.dst)) for p in pairs}) == plan.pairs < n * (n - 1) // 2
    pair_checks, node_checks = netmatrix.judge_network(list(addresses), pairs, None)
    failed = {c.node: c.detail for c in node_checks if c.verdict != "pass"}
    assert list(failed) == [culprit] and "check its NIC" in failed[culprit]
    peers = {p.dst for p in pairs if p.src == culprit}
    assert len(peers) >= 3
    slow = [c for c in pair_checks if culprit in c.subject.split("->")]
    assert len(slow) == 2 * len(peers) and all(c.verdict == "fail" and c.detail.startswith("confirmed:")
                                               for c in slow)
    assert {c.verdict for c in pair_checks if culprit not in c.subject.split("->")} == {"pass"}


def test_a_single_slow_pair_at_quick_fails_as_that_pair_and_localises_to_no_node():
    addresses = fleet_of(16)
    plan = schedule.plan(list(addresses), "quick", seed=7)
    a, b = plan.rounds[-1][0]  # a pair of a random matching
    fleet = FakeFleet(addresses, slow_pairs={(a, b)}, noise=True)
    pairs = network.measure_iperf3(fleet, addresses, "r1", network.Iperf3(port=25000), plan)
    pair_checks, node_checks = netmatrix.judge_network(list(addresses), pairs, None)
    failed = {c.subject for c in pair_checks if c.verdict == "fail"}
    assert failed == {f"{a}->{b}", f"{b}->{a}"}
    nodes = {c.node: c for c in node_checks}
    assert {nodes[a].verdict, nodes[b].verdict} == {"warn"} and "not localised" in nodes[a].detail
    assert {c.verdict for c in node_checks if c.node not in (a, b)} == {"pass"}


def test_a_dip_in_one_sampled_measurement_at_quick_is_a_warning_not_a_fail():
    addresses = fleet_of(16)
    plan = schedule.plan(list(addresses), "quick", seed=7)
    a, b = plan.rounds[0][0]
    pairs = network.measure_iperf3(FakeFleet(addresses, dip_once={(a, b)}), addresses, "r1",
                                   network.Iperf3(port=25000), plan)
    pair_checks, node_checks = netmatrix.judge_network(list(addresses), pairs, None)
    dipped = next(c for c in pair_checks if c.subject == f"{a}->{b}")
    assert dipped.verdict == "warn" and dipped.detail.startswith("not confirmed: 0.88 then 1 Gb/s")
    assert "fail" not in {c.verdict for c in [*pair_checks, *node_checks]}


def test_two_slow_nodes_that_share_a_peer_are_named_and_the_peer_between_them_is_not():
    addresses = fleet_of(64)
    plan = schedule.plan(list(addresses), "quick", seed=35)
    middle = "gpu0010"
    culprits = {b if a == middle else a for a, b in plan.rounds[-1] + plan.rounds[-2] if middle in (a, b)}
    assert len(culprits) == 2  # two of the four peers of `middle`: half of its links slow
    pairs = network.measure_iperf3(FakeFleet(addresses, slow=culprits, noise=True), addresses, "r1",
                                   network.Iperf3(port=25000), plan)
    _, node_checks = netmatrix.judge_network(list(addresses), pairs, None)
    assert {c.node for c in node_checks if c.verdict != "pass"} == culprits
