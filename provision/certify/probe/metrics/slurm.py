"""The Slurm collector: on the controller, Slurm's view of the cluster as the catalogue's slurm_* series.

Four commands, each bounded by the timeout and run from PATH (never a shell): sinfo (per node: state, drain reason,
CPUs, memory, GPUs), squeue (jobs by state, partition, user and account; pending jobs by reason), sdiag (slurmctld's
threads, agent queue and its schedulers' last cycles) and, with accounting, sacctmgr (slurmdbd answers). A command
that fails, overruns or says what does not read gives slurm_collector_command_ok{command} 0 and none of its series;
the others are still reported. slurm_controller_up is 0 when sdiag got no answer; slurm_dbd_up is written only with
accounting. The commands run side by side; one that overruns is killed and abandoned (nodehealth.run), so a run
ends within about its timeout whatever Slurm does, and holds nothing of Slurm's.
"""
from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from provision.certify.probe.metrics import slurm_output
from provision.certify.probe.metrics.catalogue import TEXTFILES
from provision.certify.probe.metrics.slurm_output import JobRow, NodeRow, Scheduler
from provision.certify.probe.metrics.textfile import Sample, sample, write
from provision.certify.probe.nodehealth.run import Deadline, Done, run

MIB = 1024 * 1024
# the short options of the recorded commands (tests/fixtures/slurm/status), the same in Slurm 22.05 and 24.11
SINFO = ["sinfo", "-h", "-N", "-a", "-O",
         ",".join(f"{f}:|" for f in slurm_output.SINFO_FIELDS[:-1]) + f",{slurm_output.SINFO_FIELDS[-1]}:"]
SQUEUE = ["squeue", "-h", "-a", "-o", "|".join(slurm_output.SQUEUE_FIELDS)]
SDIAG = ["sdiag"]
SACCTMGR = ["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"]


@dataclass
class Collection:
    """One run's series, which commands answered, and what did not read."""

    samples: list[Sample] = field(default_factory=list)
    ok: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def answered(command: str, done: Done, collection: Collection) -> str | None:
    """The command's output when it ended with exit 0 in time; otherwise None, with a note."""
    if done.ok:
        return done.stdout
    collection.notes.append(f"{command}: {done.first_error()}")
    return None


def node_samples(row: NodeRow) -> list[Sample]:
    """A node's series: its state, its drain, its CPUs, memory and GPUs."""
    node = row.name
    return [sample("slurm_node_state", 1, node=node, state=row.state),
            sample("slurm_node_drained", int(row.drained), node=node, reason=row.reason),
            sample("slurm_node_cpus", row.cpus_total, node=node, status="total"),
            sample("slurm_node_cpus", row.cpus_allocated, node=node, status="allocated"),
            sample("slurm_node_cpus", row.cpus_idle, node=node, status="idle"),
            sample("slurm_node_memory_bytes", row.memory_mb * MIB, node=node, status="total"),
            sample("slurm_node_memory_bytes", row.memory_allocated_mb * MIB, node=node, status="allocated"),
            sample("slurm_node_gpus", row.gpus, node=node, status="total"),
            sample("slurm_node_gpus", row.gpus_allocated, node=node, status="allocated")]


def job_samples(rows: list[JobRow]) -> list[Sample]:
    """Jobs counted by state, partition, user and account; pending ones by partition and reason."""
    by_kind = Counter((r.state, r.partition, r.user, r.account) for r in rows)
    pending = Counter((r.partition, r.reason) for r in rows if r.state == "pending")
    return ([sample("slurm_jobs", n, state=s, partition=p, user=u, account=a) for (s, p, u, a), n in by_kind.items()]
            + [sample("slurm_jobs_pending", n, partition=p, reason=r) for (p, r), n in pending.items()])


def scheduler_samples(figures: Scheduler) -> list[Sample]:
    """sdiag's figures that it printed; cycles in seconds."""
    pairs = [("slurm_scheduler_threads", figures.threads), ("slurm_scheduler_agent_queue", figures.agent_queue),
             ("slurm_scheduler_last_cycle_seconds", _seconds(figures.last_cycle_us)),
             ("slurm_scheduler_backfill_last_cycle_seconds", _seconds(figures.backfill_last_cycle_us))]
    return [sample(name, value) for name, value in pairs if value is not None]


def _seconds(microseconds: int | None) -> float | None:
    return None if microseconds is None else microseconds / 1e6


def collect_sinfo(timeout: float, collection: Collection) -> None:
    """sinfo's nodes; not ok when it failed, or printed lines and none read."""
    _collect_rows("sinfo", SINFO, slurm_output.nodes, lambda rows: [s for r in rows for s in node_samples(r)],
                  timeout, collection)


def collect_squeue(timeout: float, collection: Collection) -> None:
    """squeue's jobs; not ok when it failed, or printed lines and none read."""
    _collect_rows("squeue", SQUEUE, slurm_output.jobs, job_samples, timeout, collection)


def _collect_rows(name: str, argv, parse, to_samples, timeout: float, collection: Collection) -> None:
    """One command whose output is rows: its samples, its notes, and whether it answered and was read."""
    text = answered(name, run(argv, Deadline(timeout), cap_s=timeout), collection)
    rows, notes = parse(text or "")
    collection.notes += notes
    collection.ok[name] = text is not None and not (notes and not rows)
    if collection.ok[name]:
        collection.samples += to_samples(rows)


def collect_sdiag(timeout: float, collection: Collection) -> None:
    """sdiag's figures and whether slurmctld answered; not ok when it failed or its thread count did not read."""
    text = answered("sdiag", run(SDIAG, Deadline(timeout), cap_s=timeout), collection)
    figures = slurm_output.scheduler(text or "")
    collection.samples.append(sample("slurm_controller_up", int(text is not None)))
    collection.ok["sdiag"] = text is not None and figures.threads is not None
    if text is not None and figures.threads is None:
        collection.notes.append("sdiag: no 'Server thread count' in its output")
    collection.samples += scheduler_samples(figures)


def collect_sacctmgr(timeout: float, collection: Collection) -> None:
    """Whether slurmdbd answers: sacctmgr lists at least one cluster."""
    text = answered("sacctmgr", run(SACCTMGR, Deadline(timeout), cap_s=timeout), collection)
    up = bool(text and text.strip())
    collection.ok["sacctmgr"] = up
    collection.samples.append(sample("slurm_dbd_up", int(up)))


def collect(timeout: float, accounting: bool, clock=time.time) -> Collection:
    """Every command's series: the commands run side by side, each bounded by `timeout` seconds, so a run ends within
    about `timeout` whatever Slurm does; each writes its own part, merged in the commands' order."""
    began = time.monotonic()
    steps = (collect_sinfo, collect_squeue, collect_sdiag) + ((collect_sacctmgr,) if accounting else ())
    parts = [Collection() for _ in steps]
    with ThreadPoolExecutor(max_workers=len(steps)) as pool:
        for future in [pool.submit(step, timeout, part) for step, part in zip(steps, parts)]:
            future.result()
    collection = Collection()
    for part in parts:
        collection.samples += part.samples
        collection.ok.update(part.ok)
        collection.notes += part.notes
    collection.samples += [sample("slurm_collector_command_ok", int(ok), command=command)
                           for command, ok in collection.ok.items()]
    collection.samples += [sample("slurm_collector_duration_seconds", round(time.monotonic() - began, 3)),
                           sample("slurm_collector_last_run_timestamp_seconds", round(clock(), 3))]
    return collection


def collect_to(directory: Path, timeout: float, accounting: bool) -> tuple[Path, Collection]:
    """Collect and replace the Slurm textfile in `directory` (OSError when it cannot be written)."""
    collection = collect(timeout, accounting)
    return write(directory, TEXTFILES["slurm"], collection.samples), collection
