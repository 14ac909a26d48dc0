"""Debian 12 keeps working: its own small sandbox cluster (Slurm 22.05, Open MPI 4.1) brought up and certified
(quick) from nothing, a job through srun with --mem and -c and over PMIx, accounting answers, and `provision status`
shows the release and the Slurm version on every node. The rest of the e2e suite runs on Debian 13."""
from __future__ import annotations

import json

import pytest

from provision.cluster import lifecycle
from provision.spec.loader import load_spec
from provision.state import ClusterState

from conftest import LiveCluster, provision

pytestmark = pytest.mark.e2e

SPEC = """\
name: bookworm
provider: {type: sandbox, subnet: 10.92.0.0/24, os: debian-12}
node_groups:
  - {name: ctl, roles: [controller], count: 1}
  - {name: compute, roles: [compute], count: 2, partition: batch, default_partition: true}
health: {enabled: false}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> LiveCluster:
    """The Debian 12 cluster, up and certified (quick); `down` at the end."""
    path = tmp_path_factory.mktemp("bookworm") / "bookworm.yaml"
    path.write_text(SPEC)
    provision("down", str(path), check=False)
    try:
        up = provision("up", str(path), "--quiet", "--json", timeout=1500)
        cluster = LiveCluster(path, lifecycle.current_cluster(load_spec(path)))
        cluster.up_result = json.loads(up.stdout)
        yield cluster
    finally:
        provision("down", str(path), check=False)


def test_up_certifies_a_debian_12_cluster(cluster):
    assert "certify" in cluster.up_result["ran"]
    latest = max(ClusterState.for_spec(load_spec(cluster.spec_path)).reports_dir.glob("*-quick"))
    report = json.loads((latest / "report.json").read_text())
    assert report["verdict"] == "pass", [c for c in report["checks"] if c.get("verdict") == "fail"]
    # the report shows each probed node's Slurm (the probe runs on the compute nodes)
    slurm = {n["name"]: (n.get("inventory") or {}).get("slurm") for n in report["nodes"]}
    assert {slurm.get(node, "").rsplit(".", 1)[0] for node in cluster.compute} == {"22.05"}, slurm


def test_status_shows_debian_12_and_slurm_22_05_on_every_node(cluster):
    status = json.loads(provision("status", str(cluster.spec_path), "--json").stdout)
    software = status["software"]
    assert set(software) == {n.name for n in cluster.info.nodes}
    assert {s["os"] for s in software.values()} == {"Debian 12"}
    assert {s["slurm"].rsplit(".", 1)[0] for s in software.values()} == {"22.05"}


def test_a_user_job_runs_with_memory_cores_and_pmix_and_is_accounted(cluster):
    job = cluster.ssh(cluster.controller, "srun -N2 -n2 --mem=200 -c1 --mpi=pmix hostname | sort", timeout=120)
    assert job.stdout.split() == sorted(cluster.compute)
    accounted = cluster.ssh(cluster.controller, "sleep 2; sacct -n -X -o JobID,State,AllocCPUS -P", timeout=60)
    assert "COMPLETED" in accounted.stdout, accounted.stdout
