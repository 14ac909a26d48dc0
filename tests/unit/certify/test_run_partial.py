"""A partial run end to end against the fake sandbox (test_run_collect's, at the SSH boundary): store02 is certified
inside the hold reservation against node01 and store01, which are in service and never judged."""
from __future__ import annotations

import json
import shlex

import pytest
from test_run_collect import CLUSTER, SPEC, FakeSandbox, failures, install_fleet

from provision.certify.control import consistency, run as runner
from provision.certify.control.fleet import Outcome
from provision.certify.control.srun import NODE_MARK

HOLD = "gpu_provision_certify"
OPTIONS = runner.CertifyOptions(reservation=HOLD, nodes=("store02",))


class PartialSandbox(FakeSandbox):
    """The fake sandbox with store02 held: sinfo with CPUs, the hold reservation; faults: busy (node -> allocated,
    no idle CPU), drained (node -> drained), no_iperf (iperf3 to or from the node fails)."""

    def run(self, name, command, timeout=60.0):
        if name not in self.clients:
            return super().run(name, command, timeout)
        if command.startswith("sinfo -h -N -o '%N|%T|%C'"):
            self.log.append((name, command))
            return self._states(name)
        if command.startswith("scontrol -o show reservation"):
            self.log.append((name, command))
            return self._outcome(name, f"ReservationName={HOLD} Nodes=store02 Flags=MAINT,IGNORE_JOBS,SPEC_NODES\n")
        if command == consistency.command():  # a peer's package versions
            self.log.append((name, command))
            slurmd = "22.05.8-1" if name in self.faults.get("old_slurmd", ()) else "22.05.8-4"
            return self._outcome(name, f"pkg|munge|0.5.15-2|ii \npkg|slurm-client|22.05.8-4|ii \n"
                                       f"pkg|slurmd|{slurmd}|ii \n")
        if "iperf3 -c" in command and self._touches_broken(name, command):
            self.log.append((name, command))
            return self._outcome(name, json.dumps({"error": "unable to connect to server: Connection refused"}), 1)
        return super().run(name, command, timeout)

    def _srun(self, name, command):
        argv = shlex.split(command)
        if "--mpi=pmix" not in argv or "--ntasks-per-node=1" not in argv:
            return super()._srun(name, command)
        nodes = argv[argv.index("-w") + 1].split(",")  # the job with the peers: one rank a node
        broken = [n for n in nodes if n in self.faults.get("mpi_broken", ())]
        if broken:
            return Outcome(name, 1, "", "".join(f"srun: error: {n}: task {i}: " + (
                "Exited with exit code 127\n" if n in broken else "Killed\n") for i, n in enumerate(nodes)))
        return Outcome(name, 0, "".join(f"{i}: {NODE_MARK}{n}\n{i}: mpi rank={i} size={len(nodes)} host={n} errors=0 "
                                        "small_us=41.0 large_ms=12.500 bytes=8388608\n" for i, n in enumerate(nodes)))

    def _states(self, name):
        rows = []
        for node in ("node01", "store01", "store02"):
            state, cpus = ("maint", "0/2/0/2") if node == "store02" else ("idle", "0/2/0/2")
            if node in self.faults.get("busy", ()):
                state, cpus = "allocated", "2/0/0/2"
            if node in self.faults.get("drained", ()):
                state = "drained"
            rows.append(f"{node}|{state}|{cpus}")
        return self._outcome(name, "\n".join(rows) + "\n")

    def _refused(self, node, peer):
        return bool({node, peer} & set(self.faults.get("no_iperf", ())))

    def _touches_broken(self, name, command):
        broken = self.faults.get("no_iperf", ())
        addresses = {n.address for n in CLUSTER.nodes if n.name in broken}
        return name in broken or any(f"-c {a} " in command for a in addresses)

    @staticmethod
    def _outcome(name, stdout, rc=0):
        return Outcome(name, rc, stdout)


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    return install_fleet(PartialSandbox, tmp_path, monkeypatch)


def mpi_launches(log):
    return [shlex.split(c) for n, c in log if n == "ctl01" and "--mpi=pmix" in c]


def test_a_partial_run_measures_the_new_node_against_peers_and_judges_only_it(sandbox):
    report = runner.collect(SPEC, CLUSTER, OPTIONS)
    assert report.verdict == "pass" and failures(report) == set()
    assert report.scope.partial and report.scope.nodes == ("store02",)
    assert report.scope.peers == ("node01", "store01") and "2 of 2 compute nodes in service" in report.scope.note
    assert [n.name for n in report.nodes] == ["ctl01", "store02"]
    assert not [c for c in report.all_checks() if c.node in ("node01", "store01")]
    assert report.network.nodes == ("ctl01", "store02", "node01", "store01")
    subjects = {c.subject for c in report.checks if c.check == "net.pairwise_bw"}
    assert {"store02->node01", "node01->store02", "store02->store01"} <= subjects
    assert all("store02" in s for s in subjects)  # the peers' pairs with each other are the reference, unjudged
    own, with_peers = mpi_launches(sandbox.log)  # the new node's own job as in a full run, then with the peers
    assert own[own.index("-w") + 1] == "store02" and "--ntasks-per-node=2" in own
    assert with_peers[with_peers.index("-w") + 1] == "store02,store01,node01"  # its group first
    assert {"--ntasks-per-node=1", "--immediate=20"} <= set(with_peers)
    peers = next(c for c in report.all_checks() if c.check == "mpi.peers")
    assert peers.node == "store02" and peers.verdict == "pass" and "store01, node01" in peers.detail
    updates = [c for n, c in sandbox.log if c.startswith("scontrol update ReservationName")]
    assert updates == [f"scontrol update ReservationName={HOLD} Flags=FLEX",
                       f"scontrol update ReservationName={HOLD} Flags=-FLEX"]  # only while the MPI job runs
    others = [shlex.split(c) for n, c in sandbox.log if " srun " in c and "--mpi=pmix" not in c]
    assert {s[s.index("-w") + 1] for s in others} == {"store02"}  # every other job on the held node only


def test_a_bad_peer_does_not_fail_the_new_node(sandbox):
    sandbox.faults = {"no_iperf": {"node01"}}
    report = runner.collect(SPEC, CLUSTER, OPTIONS)
    assert failures(report) == set() and report.verdict == "warn"
    node_bw = next(c for c in report.all_checks() if c.check == "net.node_bw")
    assert node_bw.node == "store02" and node_bw.verdict != "fail"
    assert "judged by its pairs in aggregate: passes with ctl01, store01" in node_bw.detail
    warned = {c.subject for c in report.checks if c.verdict == "warn"}
    assert warned == {"store02->node01", "node01->store02"}


def test_a_new_node_that_fails_with_most_of_its_partners_fails(sandbox):
    sandbox.faults = {"no_iperf": {"store02"}}
    result = runner.certify(SPEC, CLUSTER, runner.CertifyOptions(reservation=HOLD, nodes=("store02",),
                                                                 drain_failed=True))
    assert result.failed_nodes == ["store02"] and ("store02", "net.node_bw") in failures(result.report)
    assert list(result.drained) == ["store02"]


def test_a_peer_that_cannot_run_mpi_warns_and_the_new_node_is_judged_by_its_runs_with_each_peer(sandbox):
    sandbox.faults = {"mpi_broken": {"node01"}}
    report = runner.collect(SPEC, CLUSTER, OPTIONS)
    assert failures(report) == set() and report.verdict == "warn"
    peers = next(c for c in report.all_checks() if c.check == "mpi.peers")
    assert peers.verdict == "warn" and "fails with node01 and passes with store01" in peers.detail
    assert "node01 fails with another peer too: not this node's fault" in peers.detail
    launches = [s[s.index("-w") + 1] for s in mpi_launches(sandbox.log)]
    assert launches == ["store02", "store02,store01,node01", "store02,store01", "store02,node01", "node01,store01"]
    assert all(s[:6] == ["runuser", "-u", "gp-certify", "--", "env", f"SLURM_RESERVATION={HOLD}"]
               for s in mpi_launches(sandbox.log))


def test_a_new_node_that_cannot_run_mpi_with_its_peers_fails_it(sandbox):
    sandbox.faults = {"mpi_broken": {"node01", "store01"}}
    report = runner.collect(SPEC, CLUSTER, OPTIONS)
    assert failures(report) == {("store02", "mpi.peers")}


def test_busy_or_drained_nodes_are_no_peers_and_a_busy_peer_takes_no_ranks(sandbox):
    sandbox.faults = {"drained": {"node01"}, "busy": {"store01"}}
    report = runner.collect(SPEC, CLUSTER, OPTIONS)
    assert report.scope.peers == ("store01",) and "1 other(s) drained" in report.scope.note
    assert [s[s.index("-w") + 1] for s in mpi_launches(sandbox.log)] == ["store02"]
    peers = next(c for c in report.all_checks() if c.check == "mpi.peers")
    assert peers.verdict == "na" and peers.detail == "no peer had an idle CPU: no MPI job with peers"
    assert not [c for _, c in sandbox.log if c.startswith("scontrol update ReservationName")]


def test_the_peers_packages_are_the_reference_for_the_new_nodes_group(sandbox):
    sandbox.faults = {"old_slurmd": {"store02"}}
    report = runner.collect(SPEC, CLUSTER, OPTIONS)
    assert failures(report) == {("store02", "config.packages")}  # alone in its group it would have passed


def test_a_name_that_is_no_compute_node_is_refused():
    with pytest.raises(runner.UsageError, match="ctl02"):
        runner.certified(CLUSTER, ("ctl02",))
