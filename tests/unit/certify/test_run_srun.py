"""One srun step across many nodes: its command line, and its output attributed back to each node."""
from __future__ import annotations

import json
import shlex

from provision.certify.control.srun import NODE_MARK, SRUN_CHUNK, Step, node_errors, parse, split_labelled
from provision.certify.judging.assemble import parse_probe_output
from provision.certify.probe.document import ProbeDocument

# Recorded from Slurm 22.05 on the sandbox: slurmd stopped on store02, one srun over three nodes.
STDOUT_SLURMD_DOWN = f"""0: {NODE_MARK}node01
0: node01
1: {NODE_MARK}store01
1: store01
"""
STDERR_SLURMD_DOWN = """srun: error: Task launch for StepId=2.0 failed on node store02: Communication connection failure
srun: error: Application launch failed: Communication connection failure
srun: Job step aborted
"""


def labelled(task: int, text: str) -> list[str]:
    """What `srun --label` prints for one line of a task: pieces of SRUN_CHUNK characters, each labelled."""
    pieces = [text[i:i + SRUN_CHUNK] for i in range(0, len(text), SRUN_CHUNK)] or [""]
    return [f"{task}: {piece}" for piece in pieces]


def test_step_runs_one_task_per_node_on_exactly_the_named_nodes_under_a_timeout():
    step = Step(("node01", "store01", "store02"), "/opt/probe --level quick", "certify-probe-r1", 120)
    argv = shlex.split(step.shell())
    assert argv[:4] == ["timeout", "-k", "10", "120"]
    assert "srun" in argv and "-N3" in argv and "--ntasks-per-node=1" in argv and "--label" in argv
    assert "--kill-on-bad-exit=0" in argv  # one node's failure leaves the others' answers whole
    assert argv[argv.index("-w") + 1] == "node01,store01,store02"
    assert argv[-3:-1] == ["bash", "-c"]
    assert argv[-1] == f"echo {NODE_MARK}$SLURMD_NODENAME; exec /opt/probe --level quick"


def test_step_with_gres_environment_and_mpi():
    step = Step(("g1", "g2"), "all_reduce_perf -g 1", "j", 60, ntasks_per_node=8, gres="gpu:8",
                env=(("NCCL_ALGO", "RING"),), extra=("--mpi=pmix",))
    argv = shlex.split(step.shell())
    assert argv[:2] == ["env", "NCCL_ALGO=RING"]
    assert {"--ntasks-per-node=8", "--gres=gpu:8", "--mpi=pmix"} <= set(argv)


def test_output_is_attributed_by_the_node_each_task_names_not_by_task_number():
    out = "\n".join([f"1: {NODE_MARK}store01", f"0: {NODE_MARK}node01", "0: from node01", "1: from store01"])
    assert split_labelled(out) == {"node01": "from node01", "store01": "from store01"}


def test_a_long_json_line_cut_by_srun_comes_back_whole_even_when_tasks_interleave():
    docs = {node: ProbeDocument.failed("x" * 5000 + node, node) for node in ("node01", "store01")}
    a = labelled(0, NODE_MARK + "node01") + labelled(0, json.dumps(docs["node01"].to_dict()))
    b = labelled(1, NODE_MARK + "store01") + labelled(1, json.dumps(docs["store01"].to_dict()))
    mixed = [line for pair in zip(a, b) for line in pair] + a[len(b):] + b[len(a):]
    texts = split_labelled("\n".join(mixed))
    assert {node: parse_probe_output(text, node) for node, text in texts.items()} == docs


def test_lines_shorter_than_a_chunk_stay_separate():
    out = "\n".join(labelled(0, NODE_MARK + "n1") + labelled(0, "first") + labelled(0, "second"))
    assert split_labelled(out) == {"n1": "first\nsecond"}


def test_task_launch_failure_is_pinned_on_the_node_srun_names():
    step = parse(1, STDOUT_SLURMD_DOWN, STDERR_SLURMD_DOWN)
    assert step.texts == {"node01": "node01", "store01": "store01"}
    assert step.missing(["node01", "store01", "store02"]) == {"store02": "Communication connection failure"}


def test_error_lines_that_name_nodes():
    stderr = "\n".join([
        "srun: error: node07: task 3: Exited with exit code 2",
        "0: slurmstepd: error: *** STEP 41.0 ON node09 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***",
        "srun: error: Node failure on node11",
        "srun: error: Unable to create step for job 41: Invalid generic resource (gres) specification",
    ])
    named, general = node_errors(stderr)
    assert named["node07"] == "Exited with exit code 2"
    assert named["node09"].startswith("CANCELLED AT") and "node11" in named
    assert general == ["srun: error: Unable to create step for job 41: Invalid generic resource (gres) specification"]


def test_a_node_with_no_output_and_no_named_error_gets_the_general_reason_or_the_timeout():
    step = parse(1, "", "srun: error: Unable to allocate resources: Invalid node name specified\n")
    assert step.missing(["n1"]) == {"n1": "srun: error: Unable to allocate resources: Invalid node name specified"}
    timed = parse(124, f"0: {NODE_MARK}n1\n0: {{}}\n", "")
    assert timed.timed_out and timed.missing(["n1", "n2"]) == {
        "n2": "the srun step timed out before this node answered"}
    assert parse(0, "", "").missing(["n3"]) == {"n3": "no output from this node's task"}
