"""Jobs shaped like users', the controller's view against the hardware, and configuration consistency:
commands, recorded outputs and the verdicts they give (the runner's fake cluster covers the wiring)."""
from __future__ import annotations

import dataclasses

import shlex
from pathlib import Path

import pytest

from provision.certify.control import consistency, node_definition as nd, user_jobs
from provision.certify.control.bisect import Bisection, Trial
from provision.certify.control.srun import NODE_MARK, parse
from provision.certify.probe.document import ProbeDocument

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
RANK = "mpi rank={r} size={n} host=h{r} errors={e} small_us=40.0 large_ms=12.500 bytes=8388608"


def labelled(task: int, node: str, text: str) -> str:
    return "\n".join(f"{task}: {line}" for line in [NODE_MARK + node, *text.splitlines()])


def test_controller_view_parses_real_scontrol_output_with_spaces_in_values():
    view = nd.parse_controller((FIXTURES / "scontrol_show_node_22.05_sandbox.txt").read_text())
    assert view == {f"compute0{i}": nd.Definition(2, 22900, 0) for i in (1, 2, 3)}


@pytest.mark.parametrize("gres, gpus", [("(null)", 0), ("gpu:h100:8", 8), ("gpu:h100:8(S:0-1)", 8),
                                        ("gpu:a100:4,gpu:l40s:2", 6), ("gpu:2,shard:8", 2), ("shard:8", 0)])
def test_gres_gpu_count(gres, gpus):
    assert nd.gres_gpus(gres) == gpus


@pytest.mark.parametrize("configured, hardware, found, verdict, detail", [
    (nd.Definition(2, 22900), nd.Definition(2, 24105), 0, "pass", ""),
    (nd.Definition(2, 30000), nd.Definition(2, 24105), 0, "fail",
     "slurm.conf claims RealMemory=30000 MiB; the node has 24105 MiB"),
    (nd.Definition(64, 22900), nd.Definition(2, 24105), 0, "fail", "slurm.conf gives it 64 CPUs; the node has 2"),
    (nd.Definition(2, 22900, 8), nd.Definition(2, 24105), 7, "fail", "gres gives it 8 GPUs; NVML finds 7"),
    (None, nd.Definition(2, 24105), 0, "fail", "the controller has no definition for this node"),
    (nd.Definition(2, 22900), None, 0, "fail", "`slurmd -C` gave no hardware line"),
])
def test_node_definition_verdicts(configured, hardware, found, verdict, detail):
    check = nd.judge("n1", configured, hardware, found, "NVML")
    assert check.check == "slurm.node_definition" and check.verdict == verdict and detail in check.detail


def test_node_report_and_gpu_count_sources():
    text = "slurmd=active\nslurmd_c|NodeName=n1 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 " \
           "ThreadsPerCore=1 RealMemory=24105\ngpu_device_files=8\n"
    assert nd.parse_node(text) == nd.Definition(2, 24105)
    assert nd.parse_node("slurmd_c|\n") is None  # no slurmd on the node
    assert nd.gpus_found(ProbeDocument("probe", nvml={"available": True, "gpus": [{}, {}]}), "8") == (2, "NVML")
    assert nd.gpus_found(ProbeDocument("probe", nvml={"available": False}), "8") == (8, "/dev/nvidiaN")
    assert nd.gpus_found(None, None) == (None, "nothing")


def test_whole_node_steps_ask_each_size_of_node_for_all_of_it():
    view = {"a1": nd.Definition(2, 22900), "a2": nd.Definition(2, 22900), "b1": nd.Definition(96, 1_900_000)}
    steps = {one.nodes: one for one in user_jobs.whole_node_steps(["a1", "a2", "b1", "gone"], view, "j")}
    assert set(steps) == {("a1", "a2"), ("b1",)}
    argv = shlex.split(steps[("b1",)].shell())
    assert {"--exclusive", "--cpus-per-task=96", "--mem=1710000M", "--immediate=60"} <= set(argv)


def test_whole_node_checks_pass_fail_and_busy():
    [one] = user_jobs.whole_node_steps(["a1", "a2", "a3"], {n: nd.Definition(2, 1000) for n in ("a1", "a2", "a3")},
                                       "j")
    out = "\n".join([labelled(0, "a1", "job_cpus=2\njob_cpus_per_task=2"), labelled(1, "a2", "job_cpus=1")])
    checks = {c.node: c for c in user_jobs.whole_node_checks(one, parse(1, out, ""))}
    assert (checks["a1"].verdict, checks["a1"].value) == ("pass", 2)
    assert checks["a2"].verdict == "fail" and "got 1 CPUs of the 2 asked" in checks["a2"].detail
    assert checks["a3"].verdict == "fail" and "did not run" in checks["a3"].detail
    busy = parse(1, "", "srun: error: Unable to allocate resources: Immediate execution impossible\n")
    assert {c.verdict for c in user_jobs.whole_node_checks(one, busy)} == {"warn"}


def _mpi_out(nodes, per_node=2, errors=0):
    size = len(nodes) * per_node
    return "\n".join(labelled(r, node, RANK.format(r=r, n=size, e=errors))
                     for i, node in enumerate(nodes) for r in range(i * per_node, (i + 1) * per_node))


def test_mpi_job_passes_with_every_rank_right_and_reports_times():
    one = user_jobs.mpi_step(["n1", "n2", "n3"], 2, "/opt/mpi-check", "j")
    assert {"--mpi=pmix", "--ntasks-per-node=2", "--kill-on-bad-exit=1"} <= set(shlex.split(one.shell()))
    checks = user_jobs.mpi_checks(one, parse(0, _mpi_out(["n1", "n2", "n3"]), ""), 1.234)
    assert [(c.check, c.node, c.verdict) for c in checks] == [
        ("mpi.start", "n1", "pass"), ("mpi.start", "n2", "pass"), ("mpi.start", "n3", "pass"),
        ("mpi.allreduce", None, "pass")]
    assert checks[-1].value == 1.23 and "6 ranks on 3 nodes" in checks[-1].detail and "0.67 GB/s" in checks[-1].detail


def test_every_mpi_step_bounds_slurms_pmix_exchanges_well_inside_its_own_limit():
    # a broken path between two nodes stalls Slurm's PMIx exchanges until PMIxTimeout (300 s by default), past the
    # step's limit; every MPI step sets the plugin's timeout for itself, growing with the nodes
    for nodes, expected in ((2, 16), (8, 16), (64, 22), (1000, 90), (4000, 90)):
        one = user_jobs.mpi_step([f"n{i}" for i in range(nodes)], 2, "/opt/mpi-check", "j",
                                 env=(("SLURM_RESERVATION", "hold"),))
        argv = shlex.split(one.shell())
        assert argv[:3] == ["env", "SLURM_RESERVATION=hold", f"SLURM_PMIX_TIMEOUT={expected}"], argv[:4]
        assert expected <= user_jobs.MPI_TIMEOUT_S // 2
    # the relaunches and bisection's subsets are the same step on fewer nodes: they keep the bound
    subset = dataclasses.replace(user_jobs.mpi_step(["a", "b", "c"], 2, "/x", "j"), nodes=("a", "b"))
    assert "SLURM_PMIX_TIMEOUT=16" in subset.shell()


def test_a_wrong_sum_fails_the_node_that_computed_it():
    one = user_jobs.mpi_step(["n1", "n2"], 1, "/opt/mpi-check", "j")
    out = labelled(0, "n1", RANK.format(r=0, n=2, e=0)) + "\n" + labelled(1, "n2", RANK.format(r=1, n=2, e=17))
    assert user_jobs.mpi_failed(one, parse(1, out, ""))
    checks = {(c.check, c.node): c for c in user_jobs.mpi_checks(one, parse(1, out, ""), 1.0)}
    assert checks[("mpi.start", "n1")].verdict == "pass"
    assert checks[("mpi.start", "n2")].verdict == "fail" and "17 wrong elements" in checks[("mpi.start", "n2")].detail
    assert checks[("mpi.allreduce", None)].verdict == "fail"


def test_when_every_node_starts_alone_the_fault_is_between_nodes():
    one = user_jobs.mpi_step(["n1", "n2"], 1, "/opt/mpi-check", "j")
    failed = parse(1, "", "srun: error: n1: task 0: Killed\nsrun: error: n2: task 1: Killed\n")
    alone = {n: parse(0, labelled(0, n, RANK.format(r=0, n=1, e=0)), "") for n in ("n1", "n2")}
    assert user_jobs.alone_step(one, "n2") == dataclasses.replace(one, nodes=("n2",))  # the same step, one node
    assert user_jobs.started_alone(one, alone)
    first = user_jobs.failure_summary(one, failed)
    assert first == "n1: Killed; n2: Killed"
    checks = user_jobs.mpi_checks(one, failed, 5.0, alone, first)  # the second launch failed too
    assert [c.verdict for c in checks] == ["pass", "pass", "fail"]
    assert "every node starts MPI alone: the fault is between the nodes" in checks[-1].detail


def test_a_job_that_fails_once_and_passes_when_launched_again_warns_naming_the_first_failure():
    one = user_jobs.mpi_step(["n1", "n2"], 1, "/opt/mpi-check", "j")
    crashed = parse(139, "", "srun: error: n1: task 0: Segmentation fault\nsrun: error: n2: task 1: Killed\n")
    alone = {n: parse(0, labelled(0, n, RANK.format(r=0, n=1, e=0)), "") for n in ("n1", "n2")}
    again = parse(0, _mpi_out(["n1", "n2"], per_node=1), "")
    checks = user_jobs.mpi_checks(one, again, 1.5, alone, user_jobs.failure_summary(one, crashed))
    assert [c.verdict for c in checks] == ["pass", "pass", "warn"]
    assert checks[-1].detail.startswith("the first launch failed (n1: Segmentation fault; n2: Killed) and a later one "
                                        "passed")
    assert "2 ranks on 2 nodes" in checks[-1].detail


def test_a_node_that_fails_alone_is_not_launched_again():
    one = user_jobs.mpi_step(["n1", "n2"], 1, "/opt/mpi-check", "j")
    alone = {"n1": parse(0, labelled(0, "n1", RANK.format(r=0, n=1, e=0)), ""),
             "n2": parse(127, "", "srun: error: n2: task 0: Exited with exit code 127\n")}
    assert not user_jobs.started_alone(one, alone)
    assert not user_jobs.started_alone(one, {"n1": alone["n1"]})  # a node that could not be asked counts too


def _config(slurm="a" * 64, hosts="b" * 64, packages=None):
    packages = packages or {"slurmd": "22.05.8-4", "munge": "0.5.15-2"}
    lines = [f"cfg|/etc/slurm/slurm.conf|{slurm}", f"cfg|/etc/hosts|{hosts}", "cfg|/etc/slurm/gres.conf|-"]
    lines += [f"pkg|{name}|{version}|ii " for name, version in packages.items()] + ["pkg|cuda-toolkit|12.8|un "]
    return consistency.parse("\n".join(lines))


def test_files_are_compared_with_the_controllers_copies():
    configs = {"ctl": _config(), "n1": _config(), "n2": _config(slurm="c" * 64), "n3": _config(hosts="d" * 64)}
    configs["n4"] = consistency.NodeConfig(files={"/etc/hosts": "b" * 64}, packages={})
    checks = {c.node: c for c in consistency.file_checks(configs, "ctl")}
    assert {n: c.verdict for n, c in checks.items()} == {"ctl": "pass", "n1": "pass", "n2": "fail", "n3": "fail",
                                                         "n4": "fail"}
    assert "/etc/slurm/slurm.conf differs (cccccccccccc against aaaaaaaaaaaa)" in checks["n2"].detail
    assert "/etc/hosts (the gpu-provision block) differs" in checks["n3"].detail
    assert "/etc/slurm/slurm.conf is missing" in checks["n4"].detail
    assert configs["ctl"].packages == {"slurmd": "22.05.8-4", "munge": "0.5.15-2"}  # not-installed rows dropped


def test_package_versions_are_judged_within_the_group():
    old = {"slurmd": "22.05.8-1", "munge": "0.5.15-2"}
    configs = {"a1": _config(), "a2": _config(), "a3": _config(packages=old), "b1": _config(packages=old),
               "c1": _config(), "c2": _config(packages={"munge": "0.5.15-2"})}
    groups = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "c1": "c", "c2": "c"}
    checks = {c.node: c for c in consistency.package_checks(configs, groups)}
    assert {n: c.verdict for n, c in checks.items()} == {"a1": "pass", "a2": "pass", "a3": "fail", "b1": "pass",
                                                         "c1": "fail", "c2": "fail"}
    assert "slurmd 22.05.8-1 (the group has 22.05.8-4)" in checks["a3"].detail
    assert "nothing to compare" in checks["b1"].detail
    assert "slurmd absent (others: 22.05.8-4)" in checks["c2"].detail  # a tie names both sides


def test_the_node_command_sends_digests_never_contents():
    command = consistency.command()
    assert "sha256sum < /etc/munge/munge.key" in command and "cat " not in command


def _bisected(culprit, localised):
    path = (Trial(("n1", "n2"), "half"), Trial(("n3", "n4"), "half", ("Segmentation fault",)),
            Trial(("n1", "n3", "n4"), "across", ("n3: Killed", "n3: Killed")))
    return Bisection(("n1", "n2", "n3", "n4"), culprit, localised, path)


def test_bisection_fails_the_cluster_and_each_node_of_the_pair_and_names_it_in_the_allreduce():
    allreduce = user_jobs.CheckResult("mpi.allreduce", "fail", detail="0 of 8 ranks")
    checks = user_jobs.bisect_checks(_bisected(("n1", "n3"), True), [allreduce])
    assert [(c.check, c.node, c.verdict) for c in checks] == [
        ("mpi.allreduce", None, "fail"), ("mpi.bisect", None, "fail"), ("mpi.pair", "n1", "fail"),
        ("mpi.pair", "n3", "fail")]
    assert checks[0].detail.startswith("0 of 8 ranks; bisection: the fault is between n1 and n3")
    assert checks[1].value == 5 and checks[1].subject == "n1<->n3"
    assert checks[1].detail.endswith("5 jobs on 3 subsets: 1. half n[1-2]: pass; 2. half n[3-4]: pass (the first "
                                     "launch failed: Segmentation fault); 3. across n[1,3-4]: fail (n3: Killed)")
    assert "and n3" in checks[2].detail and checks[3].subject == "n3<->n1"


def test_a_fault_bisection_cannot_put_on_a_pair_fails_the_cluster_only_naming_the_smallest_failing_set():
    checks = user_jobs.bisect_checks(_bisected(("n1", "n3", "n4"), False), [])
    assert [(c.check, c.node) for c in checks] == [("mpi.bisect", None)] and checks[0].subject is None
    assert checks[0].detail.startswith("not localised to a pair: the smallest set of nodes whose job fails is n[1,3-4]")


def test_a_job_stopped_at_its_limit_says_so_first():
    one = user_jobs.mpi_step(["node01", "store01"], 2, "/opt/mpi-check", "certify-mpi-bisect-x")
    one = dataclasses.replace(one, timeout_s=26)
    stopped = parse(124, "", "slurmstepd-node01: error: *** STEP 7.0 ON node01 CANCELLED AT 2026-11-28T21:34:31 ***\n"
                             "srun: error: node01: tasks 0-1: Killed\n")
    assert user_jobs.failure_summary(one, stopped, reasons=1) == "did not finish within 26 s"
    assert "node01: " in user_jobs.failure_summary(one, stopped)  # srun's own words follow
    crashed = parse(1, "", "srun: error: node01: task 1: Exited with exit code 1\n")
    assert not user_jobs.failure_summary(one, crashed).startswith("did not finish")


def test_a_failed_launch_is_summed_up_by_the_rank_that_failed_not_by_the_tasks_srun_then_killed():
    # srun's words when mpi-check gave up on a broken path on compute05 (exit 3): the step was cancelled on the first
    # node, then every other task was killed; the reason that says why must come first
    one = user_jobs.mpi_step(["compute03", "compute05", "compute06"], 2, "/opt/mpi-check", "certify-mpi-bisect-x")
    text = ("slurmstepd-compute03: error: *** STEP 52.0 ON compute03 CANCELLED AT 2026-11-29T12:36:15 ***\n"
            "srun: error: compute06: tasks 4-5: Killed\n"
            "srun: error: compute05: task 2: Exited with exit code 3\n"
            "srun: error: compute03: tasks 0-1: Killed\n")
    summary = user_jobs.failure_summary(one, parse(143, "", text))
    assert summary.startswith("compute05: Exited with exit code 3; "), summary
    assert user_jobs.failure_summary(one, parse(143, "", text), reasons=1) == "compute05: Exited with exit code 3"
    # with nothing but consequences, they are still the summary
    killed = parse(143, "", "srun: error: compute06: tasks 4-5: Killed\n")
    assert user_jobs.failure_summary(one, killed) == "compute06: Killed"
