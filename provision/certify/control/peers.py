"""Peers of a partial certification: a few compute nodes already in service that the nodes being certified (a grow,
a release, a rolling batch) are measured against.

A run of the new nodes with the controller alone proves nothing about the paths users' jobs take between a new node
and the others, and gives the fleet comparison nothing to compare with. So up to MAX_PEERS compute nodes in service
join the run: they take part in the network pairs, the MPI job (peer_mpi) and the package comparison, and are never
judged (no check in the report is about a peer, nothing drains one). Which nodes:
- in service: Slurm lists them idle, mixed or allocated, without a flag (not drained, down, not responding, in a
  reservation such as the hold reservation, powered down); the nodes certified are never their own peers;
- best first: nodes of the certified nodes' own group (their package versions are the reference), then idle before
  mixed before allocated (an idle peer takes the MPI job's ranks at once), then the most idle CPUs, then by name;
- reachable over SSH: one that is not is passed over for the next.
Fewer than MAX_PEERS when the cluster has fewer in service; the report's scope says how they were chosen.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from provision.certify.control import consistency
from provision.certify.control.fleet import Fleet
from provision.certify.control.session import Session
from provision.certify.records import RunScope, names
from provision.records import ClusterInfo, NodeInfo

MAX_PEERS = 3
STATES_COMMAND = "sinfo -h -N -o '%N|%T|%C'"  # node|state|allocated/idle/other/total CPUs
IN_SERVICE = ("idle", "mixed", "allocated")  # best first


@dataclass(frozen=True)
class Standing:
    """What Slurm says about one node now: its state (with any flag suffix) and how many of its CPUs are idle."""

    state: str
    idle_cpus: int = 0

    @property
    def in_service(self) -> bool:
        """Takes user jobs now: idle, mixed or allocated, with no suffix (*, ~, #, %, $, @, ...)."""
        return self.state in IN_SERVICE


def parse_states(text: str) -> dict[str, Standing]:
    """`sinfo -h -N -o '%N|%T|%C'` -> {node: Standing}; a node listed in several partitions once."""
    out: dict[str, Standing] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3 or not parts[0]:
            continue
        cpus = parts[2].split("/")
        idle = int(cpus[1]) if len(cpus) == 4 and cpus[1].isdigit() else 0
        out.setdefault(parts[0], Standing(parts[1].strip().lower(), idle))
    return out


def ranked(candidates: Sequence[NodeInfo], standing: Mapping[str, Standing], groups: set[str]) -> list[str]:
    """The candidates in service, best peer first (see the module's docstring)."""
    usable = [n for n in candidates if n.name in standing and standing[n.name].in_service]

    def key(node: NodeInfo) -> tuple:
        found = standing[node.name]
        return node.group not in groups, IN_SERVICE.index(found.state), -found.idle_cpus, node.name

    return [n.name for n in sorted(usable, key=key)]


def join(run: Session, fleet: Fleet, cluster: ClusterInfo, limit: int = MAX_PEERS) -> None:
    """Choose the peers of a partial run, connect to them and read their package versions (into the session)."""
    certified = [n.name for n in run.compute if n.name in run.options.nodes]  # not a controller that computes too
    inside = {n.name for n in run.cluster.nodes}
    candidates = [n for n in cluster.with_role("compute") if n.name not in inside]
    groups = {n.group for n in run.compute if n.name in certified}
    listed = fleet.run(run.controller, STATES_COMMAND, 30)
    standing = parse_states(listed.stdout) if listed.ok else {}
    order = ranked(candidates, standing, groups)
    chosen, passed_over = _connect(fleet, {n.name: n for n in candidates}, order, limit)
    run.peers = [n for n in candidates if n.name in chosen]
    run.peer_idle = {name: standing[name].idle_cpus for name in chosen}
    outcomes = fleet.run_many({name: consistency.command() for name in chosen}, timeout=30)
    run.peer_precheck = {name: o.stdout for name, o in outcomes.items() if o.ok}
    note = _note(len(chosen), len(order), len(candidates), passed_over, limit,
                 listed.error or listed.stderr.strip() if not listed.ok else "")
    run.scope = RunScope("partial", tuple(certified), tuple(n.name for n in run.peers), note)
    run.progress(f"partial certification of {names(certified)} against "
                 f"{('peers ' + names(chosen)) if chosen else 'no peer'} ({note})")


def _connect(fleet: Fleet, nodes: Mapping[str, NodeInfo], order: list[str], limit: int) -> tuple[list[str], list[str]]:
    """Connect to the best peers, the next ones standing in for any that cannot be reached; (chosen, passed over)."""
    chosen: list[str] = []
    passed_over: list[str] = []
    queue = list(order)
    while queue and len(chosen) < limit:
        batch, queue = queue[:limit - len(chosen)], queue[limit - len(chosen):]
        fleet.connect([nodes[name] for name in batch])
        chosen += [name for name in batch if fleet.reachable(name)]
        passed_over += [name for name in batch if not fleet.reachable(name)]
    return chosen, passed_over


def _note(chosen: int, in_service: int, others: int, passed_over: list[str], limit: int, error: str) -> str:
    """How the peers were chosen, and why there are fewer than `limit`."""
    if error:
        return f"no peer: the controller could not list the nodes' states ({error[:120]})"
    if not others:
        return "no peer: the cluster has no other compute node"
    parts = [f"{chosen} of {in_service} compute nodes in service (up to {limit}; the certified nodes' group, idle "
             "ones first)"]
    if in_service < others:
        parts.append(f"{others - in_service} other(s) drained, down, held or reserved")
    if passed_over:
        parts.append(f"unreachable over SSH: {names(passed_over)}")
    return "; ".join(parts)
