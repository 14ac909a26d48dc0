"""Judge nccl-tests all_reduce runs: one per node (NVLink/PCIe) and one across all nodes (the fabric)."""
from __future__ import annotations

from dataclasses import dataclass

from provision.certify.judging import thresholds
from provision.certify.judging.judge import Sample, judge
from provision.certify.parsers import nccl_tests
from provision.certify.probe.records import CheckResult

MIN_JUDGED_BYTES = 8 * 1024**3  # the published busbw figures hold at 8-16 GiB messages
NODE_CHECK, CLUSTER_CHECK = "nccl.node_busbw", "nccl.cluster_busbw"


@dataclass(frozen=True)
class NcclJob:
    """One all_reduce_perf run as the runner saw it: its scope, nodes, raw output or failure."""

    scope: str  # "node" (one node, all its GPUs) or "cluster" (all nodes)
    nodes: tuple[str, ...]
    output: str | None = None
    error: str | None = None
    algo: str | None = None  # NCCL_ALGO used; two-node runs must use RING


@dataclass(frozen=True)
class Fabric:
    """What the floors depend on."""

    gpu_model: str | None
    gpu_count: int
    interconnect: str
    nics: int
    nic_rate_gbps: float | None


def judge_jobs(jobs: list[NcclJob], fabric: Fabric) -> list[CheckResult]:
    """A check per job: node jobs also judged against each other (fleet), cluster jobs against the fabric floor."""
    out: list[CheckResult] = []
    samples: list[Sample] = []
    unjudged: set[str] = set()  # nodes whose floor could not be applied: at best a warning
    for job in jobs:
        check = NODE_CHECK if job.scope == "node" else CLUSTER_CHECK
        node = job.nodes[0] if job.scope == "node" else None
        run, problem = _parse(job)
        if problem:
            out.append(CheckResult(check, "fail", node=node, unit="GB/s", source="nccl-tests all_reduce_perf",
                                   detail=problem))
            continue
        floor, note, applicable = _floor(job, run, fabric)
        if not applicable:
            unjudged.add(node or "cluster")
        sample = Sample(check, node or "cluster", run.busbw_at_largest(), "GB/s", fabric.gpu_model or "unknown",
                        subject=f"{len(run.ranks) or '?'} ranks, {run.largest.size_bytes} B", floor=floor,
                        detail=note)
        if job.scope == "node":
            samples.append(sample)
        else:
            out.append(_at_least_warn(_cluster_result(sample, job), "cluster" in unjudged))
    return out + [_at_least_warn(r, r.node in unjudged) for r in judge(samples)]


def _at_least_warn(result: CheckResult, demote: bool) -> CheckResult:
    """A run whose floor could not be applied cannot pass outright."""
    if demote and result.verdict == "pass":
        return CheckResult(**{**result.to_dict(), "verdict": "warn"})
    return result


def _parse(job: NcclJob) -> tuple[nccl_tests.NcclRun | None, str | None]:
    if job.error:
        return None, f"all_reduce_perf did not finish: {job.error}"
    try:
        run = nccl_tests.parse(job.output or "")
    except ValueError as exc:
        return None, str(exc)
    if run.separate_runs > 1:
        return None, (f"{run.separate_runs} separate all_reduce_perf runs, one per process, instead of one "
                      "across them: nccl-tests was built without MPI (make MPI=1) or started without PMI")
    if run.wrong:
        return None, f"{run.wrong} wrong results (#wrong column): data corruption in the collective"
    if run.out_of_bounds:
        return None, f"{run.out_of_bounds} out-of-bounds values reported"
    return run, None


def _floor(job: NcclJob, run: nccl_tests.NcclRun,
           fabric: Fabric) -> tuple[thresholds.Threshold | None, str, bool]:
    """(floor or None, why not, whether the run could be judged against a floor at all)."""
    if run.largest.size_bytes < MIN_JUDGED_BYTES:
        return None, f"largest message {run.largest.size_bytes} B < 8 GiB: floor not applied (run with -e 8G)", False
    if job.scope == "node":
        floor = thresholds.nccl_node_floor(fabric.gpu_model, len(run.ranks) or fabric.gpu_count)  # GPUs it ran on
        return floor, "" if floor else "no published single-node figure for this model and GPU count", True
    if len(job.nodes) == 2 and (job.algo or "").upper() != "RING":
        return None, "two-node run without NCCL_ALGO=RING: tree inflates busbw, floor not applied", False
    floor = thresholds.nccl_cluster_floor(fabric.gpu_model, fabric.gpu_count, fabric.interconnect, fabric.nics,
                                          fabric.nic_rate_gbps, nodes=len(job.nodes))
    return floor, "" if floor else f"no fabric floor for interconnect '{fabric.interconnect}'", True


def _cluster_result(sample: Sample, job: NcclJob) -> CheckResult:
    result = judge([sample])[0]
    extra = f"{len(job.nodes)} nodes" + (f", NCCL_ALGO={job.algo}" if job.algo else "")
    return CheckResult(**{**result.to_dict(), "node": None, "detail": "; ".join(filter(None, [result.detail, extra]))})
