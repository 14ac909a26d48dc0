"""Pairwise node-to-node bandwidth, in rounds of disjoint pairs: the pairs of a schedule (control.schedule).

At `full` the schedule is every pair (the circle method: N-1 rounds); at quick and standard a ring and a few random
matchings, a constant number of rounds whatever N (4 and 6 for even N). No node is in two pairs of a round; each
pair measures both directions, one after the other. The doubtful pairs of that matrix (netmatrix.measure_again) are then measured
again, both directions, in rounds of disjoint pairs, so a verdict of fail is a fault seen twice.
iperf3 (TCP) runs everywhere. Given the compute nodes that take Slurm steps (`SlurmRounds`), a round's pairs among
them run as one srun step (control/iperf3_rounds.py): the control machine then opens no session per node for them.
Every other node (the controller, other roles, a partial run's peers; every node without `SlurmRounds`) gets one
iperf3 daemon for the whole matrix over SSH, stopped by its PID; a pair of two such nodes is measured over SSH.
ib_write_bw is used instead where every node has an active RDMA port: a one-shot server per measurement, over SSH.
"""
from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from provision.certify.control import iperf3_rounds, schedule, srun
from provision.certify.control.fleet import Fleet, Outcome
from provision.certify.control.schedule import Schedule
from provision.certify.control.slurm_checks import run_dir
from provision.certify.judging import netmatrix
from provision.certify.judging.netmatrix import PairResult
from provision.certify.parsers import ib_write_bw, iperf3
from provision.certify.probe.document import ProbeDocument

IPERF3_SECONDS = 1
RDMA_SERVER_WAIT_S = 1.0
BUSY_RETRY_S = 0.5


def disjoint_rounds(pairs: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Rounds in which no node is in two pairs (greedy, in the given order): for measuring a few pairs again."""
    out: list[list[tuple[str, str]]] = []
    busy: list[set[str]] = []
    for a, b in pairs:
        index = next((i for i, nodes in enumerate(busy) if a not in nodes and b not in nodes), len(out))
        if index == len(out):
            out.append([])
            busy.append(set())
        out[index].append((a, b))
        busy[index] |= {a, b}
    return out


def with_second_look(nodes: list[str], first: list[PairResult],
                     measure: Callable[[list[list[tuple[str, str]]]], list[PairResult]]) -> list[PairResult]:
    """The first figures, with the doubtful pairs measured again by `measure` (rounds of disjoint pairs)."""
    again = netmatrix.measure_again(nodes, first)
    if not again:
        return first
    return netmatrix.with_retests(first, measure(disjoint_rounds(again)))


@dataclass(frozen=True)
class Iperf3:
    """iperf3 TCP test; `bitrate` paces the sender (used on the sandbox, whose veth speed is just CPU)."""

    port: int
    seconds: int = IPERF3_SECONDS
    bitrate: str | None = None
    name: str = "iperf3"

    def server(self, run_id: str) -> str:
        """Start a daemon server, wait until it listens, print its PID."""
        folder = run_dir(run_id)
        return (f"mkdir -p -m 0700 {folder} && iperf3 -s -D -p {self.port} -I {folder}/iperf3.pid "
                f"--logfile {folder}/iperf3.log && for i in $(seq 50); do "
                f"ss -Hltn 'sport = :{self.port}' | grep -q . && break; sleep 0.1; done && cat {folder}/iperf3.pid")

    def stop(self, pid: int, run_id: str) -> str:
        """Stop the server started by `server` (by its PID) and remove the run's scratch folder."""
        return f"kill {int(pid)} 2>/dev/null; rm -rf {run_dir(run_id)}"

    def client(self, address: str, reverse: bool) -> str:
        """Measure to the server at address (reverse: the server sends); JSON output."""
        argv = ["timeout", str(self.seconds + 15), "iperf3", "-c", address, "-p", str(self.port), "-t",
                str(self.seconds), "-J", "--connect-timeout", "3000"]
        if self.bitrate:
            argv += ["-b", self.bitrate]
        if reverse:
            argv.append("-R")
        return " ".join(shlex.quote(a) for a in argv)

    @staticmethod
    def parse(text: str) -> float:
        """Received Gb/s; ValueError on a failed run."""
        return iperf3.parse(text).received_gbps


@dataclass(frozen=True)
class IbWriteBw:
    """perftest ib_write_bw between the first active RDMA devices of two nodes."""

    port: int
    device: str | None = None
    name: str = "ib_write_bw"

    def _base(self) -> list[str]:
        argv = ["ib_write_bw", "--report_gbits", "-F", "-p", str(self.port)]
        return argv + (["-d", self.device] if self.device else [])

    def one_shot_server(self) -> str:
        """A server that serves one test and exits."""
        return "timeout 60 " + " ".join(shlex.quote(a) for a in self._base())

    def client(self, address: str) -> str:
        """Write to the server at address."""
        return "timeout 60 " + " ".join(shlex.quote(a) for a in [*self._base(), address])

    @staticmethod
    def parse(text: str) -> float:
        """Average Gb/s; ValueError on a failed run."""
        return ib_write_bw.parse(text).average_gbps


def _pair_result(src: str, dst: str, tool: str, outcome: Outcome, parse: Callable[[str], float]) -> PairResult:
    if outcome.rc is None:
        return PairResult(src, dst, None, tool, outcome.error)
    try:
        return PairResult(src, dst, round(parse(outcome.stdout), 4), tool)
    except ValueError as exc:
        return PairResult(src, dst, None, tool, f"{exc} (exit {outcome.rc})")


@dataclass(frozen=True)
class SlurmRounds:
    """The compute nodes whose pairs run as one srun step per round, and how to run a step."""

    nodes: frozenset[str]
    run: Callable[[srun.Step], srun.StepOutput]
    job_name: str


def measure_iperf3(fleet: Fleet, addresses: Mapping[str, str], run_id: str, tool: Iperf3,
                   plan: Schedule | None = None, slurm: SlurmRounds | None = None) -> list[PairResult]:
    """Run the rounds of `plan` (default: every pair), measure the doubtful pairs again; one PairResult per
    direction. A daemon server per node outside `slurm`, each stopped by its PID at the end."""
    nodes = list(addresses)
    plan = plan or schedule.plan(nodes, "full")
    in_slurm = {n: slurm is not None and n in slurm.nodes for n in nodes}
    started = fleet.run_many({n: tool.server(run_id) for n in nodes if not in_slurm[n]}, timeout=30)
    pids = {n: int(o.stdout.strip()) for n, o in started.items() if o.ok and o.stdout.strip().isdigit()}
    broken = {n: o.error or (o.stderr.strip() or "iperf3 server did not start")[-200:]
              for n, o in started.items() if n not in pids}

    def measure(rounds: list[list[tuple[str, str]]]) -> list[PairResult]:
        results: list[PairResult] = []
        for pairs in rounds:
            oriented = [iperf3_rounds.orient(p, in_slurm) for p in pairs]
            stepped = [(a, b) for a, b in oriented if in_slurm[a]]
            over_ssh = [(a, b) for a, b in oriented if not in_slurm[a]]
            with ThreadPoolExecutor(max_workers=max(len(over_ssh), 1) + 1) as pool:
                in_step = pool.submit(_step_round, slurm, addresses, tool, broken, stepped) if stepped else None
                for chunk in pool.map(lambda p: _iperf3_pair(fleet, addresses, tool, broken, *p), over_ssh):
                    results += chunk
                results += in_step.result() if in_step else []
        return results

    try:
        return with_second_look(nodes, measure(plan.as_lists()), measure)
    finally:
        fleet.run_many({n: tool.stop(pid, run_id) for n, pid in pids.items()}, timeout=30)


def _step_round(slurm: SlurmRounds, addresses: Mapping[str, str], tool: Iperf3, broken: Mapping[str, str],
                pairs: list[tuple[str, str]]) -> list[PairResult]:
    """One round's pairs whose client takes a step (its server: a node of the step, or a daemon): one srun step."""
    out: list[PairResult] = []
    live = []
    for a, b in pairs:
        if b in broken:  # a daemon that did not start
            out += [PairResult(a, b, None, tool.name, f"{b}: {broken[b]}"), PairResult(b, a, None, tool.name,
                                                                                    f"{b}: {broken[b]}")]
        else:
            live.append((a, b))
    if not live:
        return out
    clients = [iperf3_rounds.Client(a, addresses[b]) for a, b in live]
    nodes = [a for a, _ in live] + [b for _, b in live if b in slurm.nodes]
    output = slurm.run(iperf3_rounds.step(nodes, clients, tool.port, tool.seconds, tool.bitrate, slurm.job_name))
    missing = output.missing([a for a, _ in live])
    for a, b in live:
        found = iperf3_rounds.results(output.texts.get(a, ""))
        for src, dst, direction in ((a, b, "forward"), (b, a, "reverse")):
            if direction in found:
                rc, text = found[direction]
                out.append(_pair_result(src, dst, tool.name, Outcome(a, rc, text), tool.parse))
            else:
                why = missing.get(a) or f"{a}'s task printed no {direction} result"
                out.append(PairResult(src, dst, None, tool.name, why))
    return out


def _iperf3_pair(fleet: Fleet, addresses: Mapping[str, str], tool: Iperf3, broken: Mapping[str, str],
                 a: str, b: str) -> list[PairResult]:
    """a -> b and b -> a, both run from a against b's server (-R for the reverse)."""
    if a in broken or b in broken:
        why = "; ".join(f"{n}: {broken[n]}" for n in (a, b) if n in broken)
        return [PairResult(a, b, None, tool.name, why), PairResult(b, a, None, tool.name, why)]
    forward = _iperf3_client(fleet, a, tool, addresses[b], reverse=False)
    backward = _iperf3_client(fleet, a, tool, addresses[b], reverse=True)
    return [_pair_result(a, b, tool.name, forward, tool.parse), _pair_result(b, a, tool.name, backward, tool.parse)]


def _iperf3_client(fleet: Fleet, node: str, tool: Iperf3, address: str, reverse: bool) -> Outcome:
    """One client run; once more after a pause if the server was still closing the previous test."""
    outcome = fleet.run(node, tool.client(address, reverse), tool.seconds + 30)
    if outcome.rc not in (0, None) and "busy" in outcome.stdout:
        time.sleep(BUSY_RETRY_S)
        outcome = fleet.run(node, tool.client(address, reverse), tool.seconds + 30)
    return outcome


def measure_rdma(fleet: Fleet, addresses: Mapping[str, str], tool: IbWriteBw,
                 plan: Schedule | None = None) -> list[PairResult]:
    """Each direction of the pairs of `plan` (default: every pair) with a one-shot ib_write_bw server on the
    receiver; the doubtful pairs again."""
    plan = plan or schedule.plan(list(addresses), "full")

    def measure(schedule: list[list[tuple[str, str]]]) -> list[PairResult]:
        results: list[PairResult] = []
        for pairs in schedule:
            with ThreadPoolExecutor(max_workers=max(2 * len(pairs), 1)) as pool:
                for chunk in pool.map(lambda p: [_rdma_one(fleet, addresses, tool, p[0], p[1], pool),
                                                 _rdma_one(fleet, addresses, tool, p[1], p[0], pool)], pairs):
                    results += chunk
        return results

    return with_second_look(list(addresses), measure(plan.as_lists()), measure)


def _rdma_one(fleet: Fleet, addresses: Mapping[str, str], tool: IbWriteBw, src: str, dst: str,
              pool: ThreadPoolExecutor) -> PairResult:
    server = pool.submit(fleet.run, dst, tool.one_shot_server(), 90)
    time.sleep(RDMA_SERVER_WAIT_S)
    client = fleet.run(src, tool.client(addresses[dst]), 90)
    server.result()
    return _pair_result(src, dst, tool.name, client, tool.parse)


def rdma_device(probes: Mapping[str, ProbeDocument], nodes: Sequence[str]) -> tuple[bool, str | None]:
    """(every node has an active RDMA port, the device name they share if one) from the probe documents."""
    devices = []
    for node in nodes:
        active = probes[node].active_rdma_ports() if node in probes else []
        if not active:
            return False, None
        devices.append(active[0].device)
    return bool(nodes), (devices[0] if len(set(devices)) == 1 else None)
