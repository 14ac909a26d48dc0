"""GPU work the runner places through Slurm: the gres request check and the nccl-tests all_reduce runs.

- slurm.gres: one srun across the GPU nodes asking for one GPU each (`--gres=gpu:1`); each task reports
  how many GPUs it can see (CUDA_VISIBLE_DEVICES and `nvidia-smi -L`), which must be exactly one.
- nccl.node_busbw (standard and full): one srun, one task per GPU node with all its GPUs
  (`all_reduce_perf -g <gpus>`): NVLink/PCIe within each node, all nodes at once.
- nccl.cluster_busbw: one rank per GPU across every GPU node (`--mpi=pmix`, `-g 1`); NCCL_ALGO=RING for
  two nodes, where tree inflates busbw.
Without GPU nodes these checks are n/a; the commands and parsers are exercised with recorded outputs.
"""
from __future__ import annotations

from collections.abc import Sequence

from provision.certify.nccl import NcclJob
from provision.certify.records import CheckResult
from provision.certify.slurm_checks import parse_fields
from provision.certify.srun import Step, StepOutput

NCCL_TESTS_BIN = "/opt/nccl-tests/bin/all_reduce_perf"  # the nccl role's nccl_tests_prefix + /bin
SWEEP = {"standard": ("1G", "8G", 20), "full": ("1G", "16G", 100)}  # min bytes, max bytes, iterations
NCCL_TIMEOUT_S = {"standard": 900, "full": 3600}
GRES_TIMEOUT_S = 120


def gres_step(nodes: Sequence[str], job_name: str) -> Step:
    """Ask each GPU node for exactly one GPU and report what the task sees."""
    report = ("echo gres_visible=${CUDA_VISIBLE_DEVICES:-}; "
              "echo gres_count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')")
    return Step(tuple(nodes), f"sh -c '{report}'", job_name, GRES_TIMEOUT_S, gres="gpu:1")


def gres_checks(output: StepOutput, nodes: Sequence[str]) -> list[CheckResult]:
    """slurm.gres per GPU node: the task saw exactly the one GPU it asked for."""
    missing = output.missing(nodes)
    out = []
    for node in nodes:
        base = dict(node=node, threshold="1 GPU", source="srun --gres=gpu:1")
        if node in missing:
            out.append(CheckResult("slurm.gres", "fail", **base, detail=f"the gres step did not run: {missing[node]}"))
            continue
        fields = parse_fields(output.texts[node])
        visible = [d for d in fields.get("gres_visible", "").split(",") if d]
        count = int(fields["gres_count"]) if fields.get("gres_count", "").isdigit() else None
        seen = count if count is not None else len(visible)
        ok = len(visible) == 1 and seen == 1
        out.append(CheckResult("slurm.gres", "pass" if ok else "fail", **base, value=seen, unit="GPUs",
                               detail=f"CUDA_VISIBLE_DEVICES={','.join(visible) or '(unset)'}; nvidia-smi lists "
                                      f"{'?' if count is None else count}" + ("" if ok else
                                      ": the job did not get exactly what it asked for; check gres.conf and "
                                      "cgroup device constraint")))
    return out


def _sweep(binary: str, level: str, gpus_per_task: int) -> str:
    low, high, iters = SWEEP[level]
    return f"{binary} -b {low} -e {high} -f 2 -n {iters} -g {gpus_per_task}"


def node_nccl_step(nodes: Sequence[str], gpus: int, level: str, job_name: str,
                   binary: str = NCCL_TESTS_BIN) -> Step:
    """One task per node driving all its GPUs (single-process all_reduce_perf)."""
    return Step(tuple(nodes), _sweep(binary, level, gpus), job_name, NCCL_TIMEOUT_S[level], gres=f"gpu:{gpus}")


def node_nccl_jobs(output: StepOutput, nodes: Sequence[str]) -> list[NcclJob]:
    """An NcclJob per node: its output, or why it has none."""
    missing = output.missing(nodes)
    return [NcclJob("node", (node,), error=missing[node]) if node in missing
            else NcclJob("node", (node,), output=output.texts[node]) for node in nodes]


def cluster_nccl_step(nodes: Sequence[str], gpus: int, level: str, job_name: str,
                      binary: str = NCCL_TESTS_BIN, mpi: str = "pmix") -> Step:
    """One rank per GPU on every node; RING for two nodes."""
    env = (("NCCL_ALGO", "RING"),) if len(nodes) == 2 else ()
    return Step(tuple(nodes), _sweep(binary, level, 1), job_name, NCCL_TIMEOUT_S[level], ntasks_per_node=gpus,
                gres=f"gpu:{gpus}", env=env, extra=(f"--mpi={mpi}",))


def cluster_nccl_job(rc: int | None, stdout: str, output: StepOutput, nodes: Sequence[str]) -> NcclJob:
    """The all-node job: rank 0 prints the table (labelled 0:); failures name the step's errors."""
    algo = "RING" if len(nodes) == 2 else None
    if rc != 0:
        why = "; ".join([f"{n}: {r}" for n, r in output.errors.items()] + output.general) or f"srun exit {rc}"
        return NcclJob("cluster", tuple(nodes), error=why, algo=algo)
    return NcclJob("cluster", tuple(nodes), output=stdout, algo=algo)


def not_applicable(level: str, has_gpus: bool) -> list[CheckResult]:
    """n/a lines for the GPU checks the runner could not place, saying why."""
    why = "no GPU nodes in this cluster" if not has_gpus else "the quick level runs no NCCL test"
    out = [CheckResult("nccl.node_busbw", "na", source="nccl-tests all_reduce_perf", detail=why),
           CheckResult("nccl.cluster_busbw", "na", source="nccl-tests all_reduce_perf", detail=why)]
    if not has_gpus:
        out.append(CheckResult("slurm.gres", "na", source="srun --gres=gpu:1", detail="no GPU nodes in this cluster"))
    return out if (not has_gpus or level == "quick") else []
