"""GPU work the runner places through Slurm: the gres request check and the nccl-tests all_reduce runs.

- slurm.gres: one srun per GPU count across the GPU nodes asking for all of each node's GPUs
  (`--gres=gpu:<n>`), as a user taking whole GPU nodes does; each task must see n distinct GPUs
  (CUDA_VISIBLE_DEVICES, and `nvidia-smi -L` where it exists).
- slurm.gres_single: one srun asking each GPU node for one GPU (`--gres=gpu:1`); the task must see exactly
  one (the device isolation a shared node relies on).
- nccl.node_busbw (standard and full): one srun per GPU count, one task per GPU node with all its GPUs
  (`all_reduce_perf -g <gpus>`): NVLink/PCIe within each node, all nodes of a size at once.
- nccl.cluster_busbw: one rank per GPU across every GPU node (`--mpi=pmix`, `-g 1`); NCCL_ALGO=RING for
  two nodes, where tree inflates busbw.
Without GPU nodes these checks are n/a; the commands and parsers are exercised with recorded outputs.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from provision.certify.control.slurm_checks import parse_fields
from provision.certify.control.srun import Step, StepOutput
from provision.certify.judging.nccl import NcclJob
from provision.certify.probe.records import CheckResult
from provision.records import NodeInfo

NCCL_TESTS_BIN = "/opt/nccl-tests/bin/all_reduce_perf"  # the nccl role's nccl_tests_prefix + /bin
SWEEP = {"standard": ("1G", "8G", 20), "full": ("1G", "16G", 100)}  # min bytes, max bytes, iterations
NCCL_TIMEOUT_S = {"standard": 900, "full": 3600}
GRES_TIMEOUT_S = 120


_GRES_REPORT = ("echo gres_visible=${CUDA_VISIBLE_DEVICES:-}; "
                "if command -v nvidia-smi >/dev/null; then echo gres_count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU '); fi")


def gres_steps(nodes: Sequence[NodeInfo], job_name: str) -> list[Step]:
    """slurm.gres: one step per GPU count, each node asked for all of its GPUs."""
    buckets: dict[int, list[str]] = defaultdict(list)
    for node in nodes:
        buckets[node.gpu_count].append(node.name)
    return [Step(tuple(names), f"sh -c {_quoted(_GRES_REPORT)}", job_name, GRES_TIMEOUT_S, gres=f"gpu:{count}")
            for count, names in buckets.items()]


def gres_single_step(nodes: Sequence[str], job_name: str) -> Step:
    """slurm.gres_single: each GPU node asked for one GPU."""
    return Step(tuple(nodes), f"sh -c {_quoted(_GRES_REPORT)}", job_name, GRES_TIMEOUT_S, gres="gpu:1")


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def gres_checks(step: Step, output: StepOutput, check: str = "slurm.gres") -> list[CheckResult]:
    """One check per node of a gres step: the task saw exactly the GPUs it asked for, each once."""
    wanted = int((step.gres or "gpu:1").rsplit(":", 1)[1])
    missing = output.missing(step.nodes)
    out = []
    for node in step.nodes:
        base = dict(node=node, threshold=f"{wanted} GPU{'s' if wanted != 1 else ''}", unit="GPUs",
                    source=f"srun --gres={step.gres}")
        if node in missing:
            out.append(CheckResult(check, "fail", **base, detail=f"the gres step did not run: {missing[node]}"))
            continue
        fields = parse_fields(output.texts[node])
        visible = [d for d in fields.get("gres_visible", "").split(",") if d]
        count = int(fields["gres_count"]) if fields.get("gres_count", "").isdigit() else None
        ok = len(set(visible)) == len(visible) == wanted and count in (None, wanted)
        smi = "no nvidia-smi on the node" if count is None else f"nvidia-smi lists {count}"
        out.append(CheckResult(check, "pass" if ok else "fail", **base, value=len(visible),
                               detail=f"CUDA_VISIBLE_DEVICES={','.join(visible) or '(unset)'}; {smi}" + ("" if ok else
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


def node_nccl_steps(nodes: Sequence[NodeInfo], level: str, job_name: str,
                    binary: str = NCCL_TESTS_BIN) -> list[Step]:
    """One node step per GPU count, so each node drives every one of its GPUs in a mixed cluster."""
    buckets: dict[int, list[str]] = defaultdict(list)
    for node in nodes:
        buckets[node.gpu_count].append(node.name)
    return [node_nccl_step(names, count, level, job_name, binary) for count, names in buckets.items()]


def node_nccl_jobs(output: StepOutput, nodes: Sequence[str]) -> list[NcclJob]:
    """An NcclJob per node: its output, or why it has none."""
    missing = output.missing(nodes)
    return [NcclJob("node", (node,), error=missing[node]) if node in missing
            else NcclJob("node", (node,), output=output.texts[node]) for node in nodes]


def cluster_nccl_step(nodes: Sequence[str], gpus: int, level: str, job_name: str,
                      binary: str = NCCL_TESTS_BIN, mpi: str = "pmix") -> Step:
    """One rank per GPU on every node; RING for two nodes. A rank that fails ends the job (the others would wait for
    it in the collective until the timeout)."""
    env = (("NCCL_ALGO", "RING"),) if len(nodes) == 2 else ()
    return Step(tuple(nodes), _sweep(binary, level, 1), job_name, NCCL_TIMEOUT_S[level], ntasks_per_node=gpus,
                gres=f"gpu:{gpus}", env=env, extra=(f"--mpi={mpi}",), kill_on_bad_exit=True)


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
        out += [CheckResult(check, "na", source=f"srun --gres={gres}", detail="no GPU nodes in this cluster")
                for check, gres in (("slurm.gres", "gpu:<n>"), ("slurm.gres_single", "gpu:1"))]
    return out if (not has_gpus or level == "quick") else []
