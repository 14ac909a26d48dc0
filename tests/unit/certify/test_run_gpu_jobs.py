"""GPU work through Slurm (cannot run here): commands, and recorded outputs turned into checks."""
from __future__ import annotations

import shlex

from provision.certify.control import gpu_jobs
from provision.certify.control.srun import NODE_MARK, parse
from provision.certify.judging.nccl import Fabric, judge_jobs
from provision.records import NodeInfo

H100 = Fabric("H100-SXM", 8, "infiniband", 8, 400.0)


def labelled(task: int, node: str, text: str) -> str:
    return "\n".join(f"{task}: {line}" for line in [NODE_MARK + node, *text.splitlines()])


def _gpu(name: str, count: int) -> NodeInfo:
    return NodeInfo(name=name, group="gpu", roles=("compute",), gpu_model="H100-SXM", gpu_count=count)


def test_gres_steps_ask_each_node_for_all_its_gpus_one_step_per_count():
    steps = gpu_jobs.gres_steps([_gpu("g1", 8), _gpu("g2", 8), _gpu("l1", 4)], "certify-gres-r1")
    argvs = {one.gres: shlex.split(one.shell()) for one in steps}
    assert set(argvs) == {"gpu:8", "gpu:4"}
    assert "--gres=gpu:8" in argvs["gpu:8"] and "-N2" in argvs["gpu:8"] and "--ntasks-per-node=1" in argvs["gpu:8"]
    assert "-w" in argvs["gpu:4"] and argvs["gpu:4"][argvs["gpu:4"].index("-w") + 1] == "l1"


def test_single_gpu_step_asks_each_node_for_one_gpu():
    argv = shlex.split(gpu_jobs.gres_single_step(["g1", "g2"], "certify-gres-r1").shell())
    assert "--gres=gpu:1" in argv and "-N2" in argv and "--ntasks-per-node=1" in argv


def test_gres_check_wants_every_gpu_asked_for_each_seen_once():
    [step] = gpu_jobs.gres_steps([_gpu(n, 8) for n in ("g1", "g2", "g3", "g4", "g5")], "j")
    out = "\n".join([labelled(0, "g1", "gres_visible=0,1,2,3,4,5,6,7\ngres_count=8"),
                     labelled(1, "g2", "gres_visible=0,1,2,3\ngres_count=4"),
                     labelled(2, "g3", "gres_visible=0,1,2,3,4,5,6,6\ngres_count=8"),
                     labelled(3, "g4", "gres_visible=0,1,2,3,4,5,6,7")])  # no nvidia-smi: the sandbox's stand-ins
    checks = {c.node: c for c in gpu_jobs.gres_checks(step, parse(0, out, ""))}
    assert checks["g1"].verdict == "pass" and checks["g1"].value == 8
    assert checks["g2"].verdict == "fail" and checks["g2"].value == 4
    assert checks["g3"].verdict == "fail"  # an index twice is not eight GPUs
    assert checks["g4"].verdict == "pass" and "no nvidia-smi" in checks["g4"].detail
    assert checks["g5"].verdict == "fail" and "did not run" in checks["g5"].detail


def test_single_gpu_check_fails_a_node_whose_job_sees_every_gpu():
    step = gpu_jobs.gres_single_step(["g1", "g2"], "j")
    out = "\n".join([labelled(0, "g1", "gres_visible=3\ngres_count=1"),
                     labelled(1, "g2", "gres_visible=0\ngres_count=8")])
    checks = {c.node: c for c in gpu_jobs.gres_checks(step, parse(0, out, ""), "slurm.gres_single")}
    assert checks["g1"].verdict == "pass" and checks["g1"].check == "slurm.gres_single"
    assert checks["g2"].verdict == "fail" and "nvidia-smi lists 8" in checks["g2"].detail


def test_node_nccl_steps_drive_every_gpu_of_each_size_of_node():
    steps = gpu_jobs.node_nccl_steps([_gpu("g1", 8), _gpu("g2", 8), _gpu("l1", 4)], "standard", "j")
    assert {(one.nodes, one.gres) for one in steps} == {(("g1", "g2"), "gpu:8"), (("l1",), "gpu:4")}
    assert all(shlex.split(one.shell())[-1].endswith(f"-g {one.gres[-1]}") for one in steps)


def test_node_nccl_step_drives_all_gpus_of_each_node_in_one_task():
    argv = shlex.split(gpu_jobs.node_nccl_step(["g1", "g2"], 8, "standard", "j").shell())
    assert "--gres=gpu:8" in argv and "--ntasks-per-node=1" in argv
    assert argv[-1].endswith("/opt/nccl-tests/bin/all_reduce_perf -b 1G -e 8G -f 2 -n 20 -g 8")


def test_recorded_per_node_runs_become_node_busbw_checks(fixtures_dir):
    table = (fixtures_dir / "nccl_allreduce_h100_2node.txt").read_text()
    out = "\n".join([labelled(0, "g1", table), labelled(1, "g2", table)])
    jobs = gpu_jobs.node_nccl_jobs(parse(0, out, ""), ["g1", "g2", "g3"])
    assert [(j.nodes, j.error is None) for j in jobs] == [(("g1",), True), (("g2",), True), (("g3",), False)]
    checks = {c.node: c for c in judge_jobs(jobs, H100)}
    assert checks["g1"].check == "nccl.node_busbw" and checks["g1"].value == 338.82
    assert checks["g3"].verdict == "fail"


def test_cluster_step_places_one_rank_per_gpu_and_forces_ring_for_two_nodes():
    two = shlex.split(gpu_jobs.cluster_nccl_step(["g1", "g2"], 8, "standard", "j").shell())
    assert two[:2] == ["env", "NCCL_ALGO=RING"]
    assert {"--ntasks-per-node=8", "--gres=gpu:8", "--mpi=pmix", "--kill-on-bad-exit=1"} <= set(two)
    assert two[-1].endswith("-g 1")
    four = gpu_jobs.cluster_nccl_step(["g1", "g2", "g3", "g4"], 8, "full", "j").shell()
    assert "NCCL_ALGO" not in four and "-e 16G -f 2 -n 100" in four


def test_recorded_cluster_run_and_a_failed_one(fixtures_dir):
    table = (fixtures_dir / "nccl_allreduce_h100_2node.txt").read_text()
    stdout = "\n".join(f"0: {line}" for line in table.splitlines())
    good = gpu_jobs.cluster_nccl_job(0, stdout, parse(0, stdout, ""), ["g1", "g2"])
    assert good.algo == "RING" and good.error is None
    [check] = judge_jobs([good], H100)
    assert check.check == "nccl.cluster_busbw" and check.node is None
    failed = gpu_jobs.cluster_nccl_job(1, "", parse(1, "", "srun: error: g2: task 9: Exited with exit code 1\n"),
                                       ["g1", "g2"])
    assert failed.error == "g2: Exited with exit code 1"


def test_not_applicable_without_gpus_or_at_quick_level():
    no_gpu = {c.check: c for c in gpu_jobs.not_applicable("standard", has_gpus=False)}
    assert set(no_gpu) == {"nccl.node_busbw", "nccl.cluster_busbw", "slurm.gres", "slurm.gres_single"}
    assert all(c.verdict == "na" and "no GPU nodes" in c.detail for c in no_gpu.values())
    quick = gpu_jobs.not_applicable("quick", has_gpus=True)
    assert {c.check for c in quick} == {"nccl.node_busbw", "nccl.cluster_busbw"}
    assert gpu_jobs.not_applicable("standard", has_gpus=True) == []
