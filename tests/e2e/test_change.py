"""Changing a running cluster (issue: plan shows the difference, up grows and shrinks it while jobs run).

One sandbox cluster of its own (1 controller + 2 compute -> 4 compute -> 1 compute -> 2 with an interrupted grow),
with a user job on compute01 from before the first change to after the last, and a queue of small user jobs that
would take any free node the moment it appears.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from provision.cluster import lifecycle
from provision.spec.loader import load_spec
from provision.state import ClusterState

import prometheus
from conftest import PROVISION, LiveCluster, provision

pytestmark = pytest.mark.e2e

SPEC = """\
name: grow
provider: {{type: sandbox, subnet: 10.97.5.0/24}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: compute, roles: [compute], count: {count}}}
"""
FINISH = "/tmp/finish-long-job"


@pytest.fixture(scope="module")
def grow(tmp_path_factory):
    """The cluster at 1 + 2, certified; `down` at the end."""
    path = tmp_path_factory.mktemp("grow") / "grow.yaml"
    path.write_text(SPEC.format(count=2))
    provision("down", str(path), check=False)
    try:
        provision("up", str(path), "--quiet", timeout=1500)
        yield path
    finally:
        provision("down", str(path), check=False)


def _cluster(path: Path) -> LiveCluster:
    return LiveCluster(path, lifecycle.current_cluster(load_spec(path)))


def _on(path: Path, node: str, command: str) -> str:
    return _cluster(path).ssh(node, command).stdout


def _plan(path: Path) -> tuple[int, dict]:
    result = provision("plan", str(path), "--json", check=False)
    assert result.returncode in (0, 4), result.stderr
    return result.returncode, json.loads(result.stdout)["change"]


def _actions(change: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in change["nodes"]:
        out.setdefault(node["action"], []).append(node["name"])
    return out


def _check_cluster_matches(path: Path, compute: list[str]) -> None:
    """sinfo lists exactly the spec's compute nodes with their real CPUs and memory; slurm.conf is one file."""
    cluster = _cluster(path)
    assert sorted(cluster.compute) == compute
    listed = _on(path, "ctl01", "sinfo -h -N -o '%N %c %m'").split("\n")
    rows = {line.split()[0]: line.split()[1:] for line in listed if line.strip()}
    assert sorted(rows) == compute, rows
    for node in compute:
        cpus = int(_on(path, node, "nproc --all").strip())
        assert rows[node][0] == str(cpus) and int(rows[node][1]) > 1024, (node, rows[node])
    digests = {n.name: _on(path, n.name, "md5sum /etc/slurm/slurm.conf").split()[0] for n in cluster.info.nodes}
    assert len(set(digests.values())) == 1, digests
    # Prometheus's node targets follow the node set: each node by its host name, at its address
    wanted = {n.name: f"http://{n.address}:9100/metrics" for n in cluster.info.nodes}
    # (Prometheus restarted for its new targets a moment ago: it lists them once it has read its configuration)
    deadline = time.monotonic() + 30
    while (targets := _node_targets(cluster)) != wanted and time.monotonic() < deadline:
        time.sleep(1)
    assert targets == wanted


def _node_targets(cluster: LiveCluster) -> dict[str, str]:
    """node -> scrape URL of Prometheus's node exporter targets."""
    targets = prometheus.api(cluster.info, "targets", state="active")["activeTargets"]
    return {t["labels"]["node"]: t["scrapeUrl"] for t in targets if t["labels"]["job"] == "node"}


def _long_job_running(path: Path, job: str) -> None:
    state = _on(path, "ctl01", f"squeue -h -j {job} -o '%T %N'").split()
    assert state == ["RUNNING", "compute01"], state


def test_plan_grow_and_shrink_while_a_job_runs(grow):
    code, change = _plan(grow)
    assert code == 0 and not change["changed"] and "no changes" in change["summary"]
    job = _on(grow, "ctl01", f"sbatch --parsable -w compute01 -N1 -J long-user-job "
                              f"--wrap 'while [ ! -e {FINISH} ]; do sleep 1; done'").strip()
    # enough 2-second jobs to outlast the grow on a loaded machine (one node takes them until the new ones join)
    queue = _on(grow, "ctl01", "sbatch --parsable -N1 --exclusive -J queued-user-job --array=1-200 "
                               "--wrap 'sleep 2'").strip()
    time.sleep(2)
    _long_job_running(grow, job)

    grow.write_text(SPEC.format(count=4))
    code, change = _plan(grow)
    assert code == 4 and _actions(change)["add"] == ["compute03", "compute04"] and "remove" not in _actions(change)
    assert any(line.startswith("+") and "compute03" in line for line in change["files"]["/etc/hosts"])
    provision("up", str(grow), "--quiet", timeout=1500)
    _check_cluster_matches(grow, ["compute01", "compute02", "compute03", "compute04"])
    _long_job_running(grow, job)
    assert _plan(grow)[0] == 0
    _no_user_job_before_certify(grow, ["compute03", "compute04"])
    _certified_against_peers(grow, ["compute03", "compute04"], ["compute01", "compute02"])

    grow.write_text(SPEC.format(count=1))
    code, change = _plan(grow)
    assert code == 4 and _actions(change)["remove"] == ["compute02", "compute03", "compute04"]
    provision("up", str(grow), "--quiet", "--drain-timeout", "300", timeout=1500)
    _check_cluster_matches(grow, ["compute01"])
    _long_job_running(grow, job)
    assert _plan(grow)[0] == 0
    nodes = lifecycle.status(load_spec(grow)).nodes
    assert [n.name for n in nodes] == ["ctl01", "compute01"]

    _on(grow, "ctl01", f"scancel {queue}")
    _on(grow, "compute01", f"touch {FINISH}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = _on(grow, "ctl01", f"sacct -n -X -P -j {job} -o State,NodeList").strip()
        if state.startswith("COMPLETED"):
            break
        time.sleep(1)
    assert state == "COMPLETED|compute01"


def _jobs_on(path: Path, nodes: list[str]) -> list[list[str]]:
    """sacct rows (id, name, nodes, start, end) of the last hour's jobs that ran on any of these nodes."""
    text = _on(path, "ctl01", "sacct -a -n -X -P -S now-1hour -o JobID,JobName,NodeList,Start,End")
    jobs = [line.split("|") for line in text.splitlines() if line.count("|") == 4]
    return [j for j in jobs if any(node in _expand(j[2]) for node in nodes)]


def _no_user_job_before_certify(path: Path, new: list[str]) -> None:
    """On the new nodes, every job before the end of their certify jobs is a certify job; the queued user jobs
    reach them after their release."""
    deadline = time.monotonic() + 60
    while True:
        on_new = _jobs_on(path, new)
        users = [j for j in on_new if not j[1].startswith("certify-") and j[3] != "Unknown"]
        if users or time.monotonic() > deadline:
            break
        time.sleep(2)
    certify = [j for j in on_new if j[1].startswith("certify-")]
    assert certify, f"no certify job ran on {new}: {on_new}"
    certified = max(datetime.fromisoformat(j[4]) for j in certify)
    assert users, "the queued user jobs never reached the new nodes after their release"
    early = [j for j in users if datetime.fromisoformat(j[3]) < certified]
    assert not early, f"user jobs started on new nodes before certify passed ({certified}): {early}"


def _certified_against_peers(path: Path, new: list[str], peers: list[str]) -> None:
    """The grow's certify run is partial: the new nodes measured against the nodes in service (network pairs both
    ways, the MPI job), judged alone; `list` shows the full run's verdict and the partial one after it."""
    reports = ClusterState.for_spec(load_spec(path)).reports_dir
    report = json.loads((max(reports.glob("*-quick")) / "report.json").read_text())
    assert report["scope"]["kind"] == "partial" and report["scope"]["nodes"] == new, report["scope"]
    assert report["scope"]["peers"] == peers, report["scope"]
    assert [n["name"] for n in report["nodes"]] == ["ctl01", *new]  # a peer is measured, never judged
    pairs = {c["subject"]: c["verdict"] for c in report["checks"] if c["check"] == "net.pairwise_bw"}
    assert {f"{a}->{b}" for a in new for b in peers} | {f"{b}->{a}" for a in new for b in peers} <= set(pairs), pairs
    assert "fail" not in pairs.values() and report["verdict"] != "fail"
    mpi = [c for n in report["nodes"] for c in n["checks"] if c["check"] == "mpi.peers"]
    assert [c["node"] for c in mpi] == new and {c["verdict"] for c in mpi} <= {"pass", "na"}, mpi
    listed = json.loads(provision("list", "--json").stdout)["clusters"]
    certified = next(c["certified"] for c in listed if c["name"] == "grow")
    assert certified.startswith("pass (quick); newer: ") and f"partial: {', '.join(new)})" in certified, certified


def _expand(nodelist: str) -> list[str]:
    from provision import hostlist
    return hostlist.expand(nodelist) if nodelist and nodelist != "None assigned" else []


def test_removing_the_controller_is_refused_and_changes_nothing(grow):
    before = (Path(lifecycle.get_provider(load_spec(grow)).state.path) / "applied.json").read_text()
    grow.write_text(SPEC.format(count=1).replace("name: ctl,", "name: head,"))  # ctl01 would go, head01 come
    result = provision("up", str(grow), check=False)
    grow.write_text(SPEC.format(count=1))
    assert result.returncode == 2 and "controller" in result.stderr and "Traceback" not in result.stderr
    assert (Path(lifecycle.get_provider(load_spec(grow)).state.path) / "applied.json").read_text() == before


def test_an_interrupted_grow_is_finished_by_the_next_up(grow):
    grow.write_text(SPEC.format(count=2))
    up = subprocess.Popen([*PROVISION, "up", str(grow)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True)
    try:
        for line in up.stdout:
            if "stage deploy" in line:
                break
        time.sleep(8)  # inside the deploy of the new node
    finally:
        os.killpg(up.pid, signal.SIGKILL)  # the process group this test started
        up.wait()
    assert up.returncode == -signal.SIGKILL
    code, change = _plan(grow)
    assert code == 4 and _actions(change)["add"] == ["compute02"], change
    provision("up", str(grow), "--quiet", timeout=1500)
    _check_cluster_matches(grow, ["compute01", "compute02"])
    assert "No reservations" in _on(grow, "ctl01", "scontrol show reservation")
    assert _plan(grow)[0] == 0
