"""bench/false_alarms.py: how runs are counted per check, what counts as detected, and the table it prints."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "false_alarms.py"
_spec = importlib.util.spec_from_file_location("false_alarms", SCRIPT)
false_alarms = importlib.util.module_from_spec(_spec)
sys.modules["false_alarms"] = false_alarms  # its dataclasses look their module up
_spec.loader.exec_module(false_alarms)


def check(name: str, verdict: str, node: str | None = None, detail: str = "") -> dict:
    return {"check": name, "verdict": verdict, "node": node, "detail": detail}


def doc(node_checks: dict[str, list[dict]], cluster: list[dict] = ()) -> dict:
    return {"verdict": "pass", "nodes": [{"name": n, "checks": c} for n, c in node_checks.items()],
            "checks": list(cluster)}


def test_a_check_failing_on_two_nodes_of_one_run_counts_one_run_and_a_fail_outweighs_a_warning():
    one = doc({"a": [check("net.node_bw", "fail", "a")], "b": [check("net.node_bw", "fail", "b")]},
              [check("net.pairwise_bw", "warn"), check("net.pairwise_bw", "fail")])
    two = doc({"a": [check("net.node_bw", "warn", "a"), check("slurm.srun", "pass", "a")]})
    assert false_alarms.tally([one, two]) == {"net.node_bw": {"fail": 1, "warn": 1},
                                               "net.pairwise_bw": {"fail": 1, "warn": 0}}


def test_a_clean_run_counts_nothing():
    assert false_alarms.tally([doc({"a": [check("slurm.srun", "pass", "a"), check("gpu.gemm_bf16", "na", "a")]})]) \
        == {}


def test_detected_needs_the_expected_check_failed_on_the_expected_node():
    run = doc({"a": [check("fs.mount", "fail", "a")], "b": [check("fs.mount", "warn", "b")]})
    assert false_alarms.detected(run, "a", "fs.mount")
    assert not false_alarms.detected(run, "b", "fs.mount")
    assert not false_alarms.detected(run, "a", "slurm.slurmd")


def test_the_table_gives_each_check_its_fraction_of_runs_and_each_fault_its_detection():
    table = false_alarms.markdown(20, {"mpi.allreduce": {"fail": 0, "warn": 1}},
                                  [{"fault": "slurmd stopped on b", "node": "b", "check": "slurm.slurmd",
                                    "runs": 3, "detected": 3}], "2 busy loops")
    assert "| `mpi.allreduce` | 0/20 | 1/20 |" in table
    assert "| slurmd stopped on b | `slurm.slurmd` on b | 3/3 |" in table
    assert table.startswith("Healthy cluster, certify quick, 20 runs; load: 2 busy loops")


def test_a_bench_without_any_alarm_says_so():
    assert "| every check | 0/5 | 0/5 |" in false_alarms.markdown(5, {}, [], "none")


def test_a_run_that_gave_no_report_counts_as_a_false_alarm():
    assert false_alarms.tally([false_alarms.crashed("no report (exit 2): boom")]) == {
        "certify.run": {"fail": 1, "warn": 0}}
