"""Measure the GPU benchmarks again on the nodes where a figure of the first run failed (judging.confirm judges).

Right after the probe, while the GPUs are still idle and warm: one srun over those nodes only runs the probe with
--bench-again (the benchmarks alone, no burn-in). Nodes without a failed figure, and clusters without GPUs (the
sandbox), cost nothing: no step runs.
"""
from __future__ import annotations

from provision.certify.control import slurm_checks, srun
from provision.certify.control.fleet import Fleet
from provision.certify.control.session import GPUBENCH, PROBE, Session, step
from provision.certify.judging.assemble import benchmark_fails, parse_probe_output
from provision.certify.probe.document import ProbeDocument
from provision.errors import CertifyError

TIMEOUT_S = 900  # the benchmarks alone, without burn-in: minutes on 8 GPUs


def measure_again(run: Session, fleet: Fleet, answered: list[str]) -> None:
    """Fill run.again with the second benchmark documents of the nodes whose first figures fail (a node whose
    second run gives no document gets an error document: its first figures stand, "then no figure")."""
    nodes = benchmark_fails({n: run.probes[n] for n in answered if n in run.probes})
    if not nodes:
        return
    run.progress(f"GPU benchmarks again on {len(nodes)} node(s) whose figures failed: {', '.join(nodes)}")
    command = (f"{PROBE} --bench-again --level {run.options.level} "
               f"--expect-json @{slurm_checks.expect_path(run.run_id)} --gpubench {GPUBENCH}")
    output, _, _ = step(run, fleet, srun.Step(tuple(nodes), command, run.job("bench-again"), TIMEOUT_S))
    for node in nodes:
        try:
            run.again[node] = parse_probe_output(output.texts.get(node, ""), node)
        except CertifyError as exc:
            run.again[node] = ProbeDocument.failed(str(exc), node)  # its fails stand: "then no figure"
