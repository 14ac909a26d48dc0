"""Issue 14 end to end: GPU gres scheduled by a real slurmctld and slurmd, without GPUs.

A cluster of its own (gres on 10.95.0.0/24): a controller and one compute node of a group with
`gpu: {model: H100-SXM, count: 8}`. The sandbox gives that node eight stand-in device files (/dev/nvidia0-7, a
TEST HOOK of the sandbox provider, never made on real hosts) and gres.conf names them, so:
- sinfo shows gpu:h100:8; a job asking for all eight sees CUDA_VISIBLE_DEVICES=0..7;
- one-GPU jobs each get exactly one index, eight run at once, the ninth waits for a GPU;
- certify's gres jobs and the node definition check pass against the device files, and its batch job is judged
  from slurmctld (the cluster has no accounting).

The node has the host's 2 CPUs, so eight one-GPU jobs could never hold a core each: the test lets jobs share
CPUs (OverSubscribe=YES on the partition, --oversubscribe on each job). GPUs are what is under test, and Slurm
never oversubscribes gres.
"""
from __future__ import annotations

import json
import time

import pytest

from conftest import cluster_of_its_own, provision

pytestmark = pytest.mark.e2e

SPEC = """\
name: gres
provider:
  type: sandbox
  subnet: 10.95.0.0/24
node_groups:
  - name: ctl
    roles: [controller]
    count: 1
  - name: gpu
    roles: [compute]
    count: 1
    gpu: {model: H100-SXM, count: 8}
software:
  slurm: {accounting: false}
"""
JOB = "sbatch --parsable -p gpu --gres=gpu:1 --oversubscribe --mem=64M -o /tmp/gres-%j.out --wrap " \
      "'echo $CUDA_VISIBLE_DEVICES; sleep 600'"


@pytest.fixture(scope="module")
def gres_cluster(tmp_path_factory):
    with cluster_of_its_own(tmp_path_factory.mktemp("gres"), SPEC) as cluster:
        yield cluster


def test_sinfo_shows_eight_gpus_and_a_job_asking_for_all_sees_them(gres_cluster):
    ctl = gres_cluster.controller
    assert gres_cluster.ssh(ctl, "sinfo -h -N -o '%N %G'").stdout.split() == ["gpu01", "gpu:h100:8"]
    seen = gres_cluster.ssh(ctl, "srun -p gpu --gres=gpu:8 sh -c 'echo $CUDA_VISIBLE_DEVICES'").stdout.strip()
    assert seen == "0,1,2,3,4,5,6,7"


def _jobs(cluster) -> dict[str, tuple[str, str]]:
    out = cluster.ssh(cluster.controller, "squeue -h -o '%i %T %r'").stdout
    return {job: (state, reason) for job, state, reason in (line.split() for line in out.splitlines())}


def test_one_gpu_jobs_get_one_index_each_eight_run_and_the_ninth_waits(gres_cluster):
    ctl = gres_cluster.controller
    gres_cluster.ssh(ctl, "scontrol update partitionname=gpu oversubscribe=yes")
    jobs = [gres_cluster.ssh(ctl, JOB).stdout.strip() for _ in range(9)]
    try:
        deadline = time.monotonic() + 90
        states = _jobs(gres_cluster)
        while sum(s == "RUNNING" for s, _ in states.values()) < 8 and time.monotonic() < deadline:
            time.sleep(1)
            states = _jobs(gres_cluster)
        time.sleep(3)  # the ninth has had its scheduling passes
        states = _jobs(gres_cluster)
        running = [j for j in jobs if states[j][0] == "RUNNING"]
        assert len(running) == 8 and states[jobs[8]] == ("PENDING", "Resources"), states
        indices = [gres_cluster.ssh("gpu01", f"cat /tmp/gres-{job}.out").stdout.strip() for job in running]
        assert sorted(indices) == [str(i) for i in range(8)]
    finally:
        gres_cluster.ssh(ctl, f"scancel {' '.join(jobs)}; scontrol update partitionname=gpu oversubscribe=no")


def test_certify_gres_jobs_and_node_definition_pass_on_the_stand_ins(gres_cluster):
    result = provision("certify", str(gres_cluster.spec_path), "--json", check=False, timeout=600)
    doc = json.loads(result.stdout)
    checks = {c["check"]: c for c in next(n for n in doc["nodes"] if n["name"] == "gpu01")["checks"]}
    assert checks["slurm.gres"]["verdict"] == "pass" and checks["slurm.gres"]["value"] == 8
    assert checks["slurm.gres_single"]["verdict"] == "pass" and checks["slurm.gres_single"]["value"] == 1
    definition = checks["slurm.node_definition"]
    assert definition["verdict"] == "pass" and "8 GPUs" in definition["value"]
    sbatch = next(c for c in doc["checks"] if c["check"] == "slurm.sbatch")  # this cluster has no accounting
    assert sbatch["verdict"] == "pass" and sbatch["source"] == "sbatch + scontrol show job (no accounting)"
