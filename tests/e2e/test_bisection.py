"""Bisection on real Slurm and Open MPI: MPI broken between exactly two of eight compute nodes (each node alone
passes) is located to that pair by `provision certify --level quick`, and the report shows the jobs it ran.

Its own cluster (one controller, eight compute nodes, no shared filesystem, health program off), brought up without
certify and taken down at the end. The pair is cut with the sandbox's fault: each node's network namespace refuses
the other's address, and both keep talking to every other node, so Slurm, munge and every other pair work. The cut
pair is across the halves the search splits first (compute03 and compute06), its longest path: both halves pass,
then each side is narrowed against the other."""
from __future__ import annotations

import json

import pytest

from provision.providers.sandbox import faults
from provision.spec.loader import load_spec
from provision.state import ClusterState

from conftest import LiveCluster, cluster_of_its_own, provision, report_checks

pytestmark = pytest.mark.e2e

SPEC = """\
name: bisect
provider: {type: sandbox, subnet: 10.86.0.0/24}
node_groups:
  - {name: ctl, roles: [controller], count: 1}
  - {name: compute, roles: [compute], count: 8}
health: {enabled: false}
"""
CUT = ("compute03", "compute06")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> LiveCluster:
    """The 1+8 cluster, up without certify; `down` at the end."""
    with cluster_of_its_own(tmp_path_factory.mktemp("bisect"), SPEC) as live:
        yield live


@pytest.fixture(scope="module")
def cut_report(cluster) -> dict:
    """`certify --level quick --json` with the pair cut (restored after, whatever happens)."""
    faults.cut_pair(None, "bisect", *CUT)
    try:
        done = provision("certify", str(cluster.spec_path), "--level", "quick", "--json", check=False,
                         timeout=2400)
    finally:
        faults.restore_pair(None, "bisect", *CUT)
    assert done.stdout.strip(), f"certify gave no report (exit {done.returncode}): {done.stderr[-3000:]}"
    return json.loads(done.stdout)


def reaches(cluster: LiveCluster, node: str, other: str) -> bool:
    """Whether `node` opens a TCP connection to `other`'s sshd."""
    address = cluster.info.node(other).address
    return cluster.ssh(node, f"timeout 5 bash -c '</dev/tcp/{address}/22'", check=False).returncode == 0


def test_the_cut_really_breaks_that_pair_and_only_that_pair(cluster):
    faults.cut_pair(None, "bisect", *CUT)
    try:
        cut = [reaches(cluster, *CUT), reaches(cluster, *reversed(CUT))]
        others = [reaches(cluster, CUT[0], "compute04"), reaches(cluster, CUT[1], "compute01")]
    finally:
        faults.restore_pair(None, "bisect", *CUT)
    assert cut == [False, False] and others == [True, True], (cut, others)
    assert reaches(cluster, *CUT)


def test_bisection_names_the_cut_pair_and_only_it(cut_report):
    checks = report_checks(cut_report)
    assert cut_report["verdict"] == "fail"
    starts = {c["node"]: c["verdict"] for c in checks if c["check"] == "mpi.start"}
    assert set(starts) == {f"compute{i:02d}" for i in range(1, 9)} and set(starts.values()) == {"pass"}, starts
    pair = sorted(c["node"] for c in checks if c["check"] == "mpi.pair" and c["verdict"] == "fail")
    assert pair == sorted(CUT), [c for c in checks if c["check"] == "mpi.pair"]
    allreduce = next(c for c in checks if c["check"] == "mpi.allreduce")
    assert allreduce["verdict"] == "fail" and all(n in allreduce["detail"] for n in CUT), allreduce
    # nothing else failed: what fails is on the cut pair's nodes or their link (iperf3 cannot cross the cut either)
    others = [c for c in checks if c["verdict"] == "fail"
              and c["check"] not in ("mpi.pair", "mpi.allreduce", "mpi.bisect")]
    elsewhere = [f"{c.get('node') or c.get('subject')}: {c['check']}" for c in others
                 if c.get("node") not in CUT and not (c.get("subject") and all(n in c["subject"] for n in CUT))]
    assert not elsewhere, elsewhere


def test_the_report_shows_the_jobs_bisection_ran(cluster, cut_report):
    bisection = next(c for c in report_checks(cut_report) if c["check"] == "mpi.bisect")
    jobs = int(bisection["value"])
    # a pair of 8: at most 2 ceil(log2 8) + 1 = 7 subsets, each launched at most twice
    assert 2 <= jobs <= 14, bisection
    detail = bisection["detail"]
    assert "half compute[01-04]: pass" in detail and "half compute[05-08]: pass" in detail, detail
    assert "pair compute[03,06]: fail" in detail or "compute[03,06]: fail" in detail, detail
    # the same path is in the report written to disk, where an operator reads it later
    latest = max(ClusterState.for_spec(load_spec(cluster.spec_path)).reports_dir.glob("*-quick"))
    saved = json.loads((latest / "report.json").read_text())
    assert any(c["check"] == "mpi.bisect" and c["detail"] == detail for c in report_checks(saved))
    assert "mpi.bisect" in (latest / "report.html").read_text()
