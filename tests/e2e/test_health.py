"""Keeping the cluster healthy, end to end on its own sandbox cluster (1 controller + 8 compute, health passes every
5 s): certify locates a fault that breaks MPI between exactly two of the 8 nodes by bisection (and the health
program drains nothing for it); the node health program drains and resumes through Slurm (the failed check named
within `sinfo -R`'s 20 characters), leaves other drains alone and ends when slurmctld is down; `provision health
--now` runs a pass on every node at once; `deploy --rolling 2` changes two nodes at a time, and a fault in batch 2
stops the roll with batches 3 and 4 as they were.
"""
from __future__ import annotations

import json
import math
import re
import shlex
import time

import pytest

from provision import hostlist
from provision.cluster import lifecycle
from provision.providers.sandbox import faults
from provision.spec.loader import load_spec

from conftest import LiveCluster, provision
from test_certify import checks, failed_nodes, report, seconds
from test_deploy_faults import faults_target

pytestmark = pytest.mark.e2e

INTERVAL = 5
SPEC = """\
name: health
provider: {{type: sandbox, subnet: 10.93.0.0/24}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: compute, roles: [compute], count: 8}}
health: {{interval_s: {interval}}}
"""
MARK = " (gpu-provision-health)"  # how the program's drain reasons end; they start with "hc:<check>: "
# Samples once a second on the controller: the held nodes (hold reservation) and the drained or down ones.
SAMPLER = ("while :; do r=$(scontrol -o show reservation gpu_provision_certify 2>/dev/null | grep -o 'Nodes=[^ ]*'); "
           "d=$(sinfo -h -N -t drain,drained,draining,down,fail -o %N | sort -u | paste -sd, -); "
           "echo \"$(date +%s)|${r#Nodes=}|$d\"; sleep 1; done")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> LiveCluster:
    """The cluster, up and certified; `down` at the end."""
    path = tmp_path_factory.mktemp("health") / "health.yaml"
    path.write_text(SPEC.format(interval=INTERVAL))
    provision("down", str(path), check=False)
    try:
        provision("up", str(path), "--quiet", timeout=1500)
        yield LiveCluster(path, lifecycle.current_cluster(load_spec(path)))
    finally:
        provision("down", str(path), check=False)


def _reasons(cluster: LiveCluster) -> dict[str, str]:
    """node -> drain reason, for the drained nodes."""
    out = cluster.ssh(cluster.controller, "sinfo -h -N -t drain,drained,draining -o '%N|%E'").stdout
    return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)


def _wait_for(what, seconds: float, every: float = 1.0):
    """Poll until `what()` is truthy; its last value."""
    end = time.monotonic() + seconds
    while not (value := what()) and time.monotonic() < end:
        time.sleep(every)
    return value


def _sinfo_r(cluster: LiveCluster) -> dict[str, str]:
    """node -> the REASON column of plain `sinfo -R` (its default width: 20 characters)."""
    out = cluster.ssh(cluster.controller, "sinfo -R -h").stdout
    return {line.split()[-1]: line[:20] for line in out.splitlines() if line.strip()}


def _connect(cluster: LiveCluster, node: str) -> str:
    """A TCP connection to the node's sshd, from the node the command runs on."""
    return f"timeout 5 bash -c '</dev/tcp/{cluster.info.node(node).address}/22'"


def _idle(cluster: LiveCluster) -> bool:
    states = cluster.ssh(cluster.controller, "sinfo -h -N -o '%N %T'").stdout
    table = dict(line.split() for line in states.splitlines() if line.strip())
    return all(table.get(n) == "idle" for n in cluster.compute)


def test_mpi_broken_between_two_of_eight_nodes_is_bisected_to_that_pair(cluster, capsys):
    pair = ("compute03", "compute06")
    root, name = faults_target(cluster)
    faults.cut_pair(root, name, *pair)
    try:
        assert cluster.ssh(pair[0], _connect(cluster, pair[1]), check=False).returncode  # refused at once
        assert cluster.ssh(pair[0], _connect(cluster, "compute04")).returncode == 0  # every other path works
        done = provision("certify", str(cluster.spec_path), "--json", check=False, timeout=1200)
        rc, doc = done.returncode, json.loads(done.stdout)
        drained = _reasons(cluster)
    finally:
        faults.restore_pair(root, name, *pair)
    assert rc == 1 and failed_nodes(doc) == set(pair), failed_nodes(doc)
    assert drained == {}  # the health program's passes never looked between nodes
    found = next(c for c in doc["checks"] if c["check"] == "mpi.bisect")
    assert found["verdict"] == "fail" and found["subject"] == "compute03<->compute06", found
    assert found["detail"].startswith("the fault is between compute03 and compute06: a job on the two of them alone "
                                      "fails"), found["detail"]
    path = re.findall(r"(\d+)\. (half|across|pair) (\S+): (pass|fail)", found["detail"])
    assert 3 <= len(path) <= 2 * math.log2(8) + 2, found["detail"]
    assert [int(p[0]) for p in path] == list(range(1, len(path) + 1)) and path[-1][2:] == ("compute[03,06]", "fail")
    assert all(p[3] == "pass" for p in path if not {"compute03", "compute06"} <= set(hostlist.expand(p[2])))
    assert {c["node"]: c["verdict"] for c in checks(doc) if c["check"] == "mpi.start"} == dict.fromkeys(
        cluster.compute, "pass")  # each node alone
    assert {(c["node"], c["subject"]) for c in checks(doc) if c["check"] == "mpi.pair"} == {
        ("compute03", "compute03<->compute06"), ("compute06", "compute06<->compute03")}
    allreduce = next(c for c in doc["checks"] if c["check"] == "mpi.allreduce")
    assert "bisection: the fault is between compute03 and compute06" in allreduce["detail"]
    report(capsys, f"pair cut {pair[0]}-{pair[1]}: certify took {seconds(doc):.1f} s; mpi.bisect: {found['value']} "
                   f"jobs; {found['detail']}")
    assert _wait_for(lambda: _idle(cluster), 120)


def test_munge_stopped_drains_the_node_and_started_again_resumes_it(cluster):
    cluster.ssh("compute02", "systemctl stop munge")
    try:
        began = time.monotonic()
        reason = _wait_for(lambda: _reasons(cluster).get("compute02", "").endswith(MARK)
                           and _reasons(cluster)["compute02"], 2 * INTERVAL + 5)
        assert reason and reason.startswith("hc:munge: "), _reasons(cluster)
        assert time.monotonic() - began <= 2 * INTERVAL + 5
        assert "munge" in reason.removeprefix("hc:munge: ")  # the evidence: munge's own error
        assert _sinfo_r(cluster)["compute02"].startswith("hc:munge: ")  # the check, in sinfo -R's default width
    finally:
        cluster.ssh("compute02", "systemctl start munge")
    assert _wait_for(lambda: "compute02" not in _reasons(cluster), 2 * INTERVAL + 10), _reasons(cluster)
    health = json.loads(provision("health", str(cluster.spec_path), "--json").stdout)
    by_node = {n["node"]: n for n in health["nodes"]}
    assert set(by_node) == set(cluster.compute) and all(n["ok"] for n in by_node.values())


def _health_now(cluster: LiveCluster) -> tuple[int, dict[str, dict], float]:
    """`provision health SPEC --now --json`: (exit status, node -> its pass, seconds it took)."""
    began = time.monotonic()
    done = provision("health", str(cluster.spec_path), "--now", "--json", check=False, timeout=300)
    return done.returncode, {n["node"]: n for n in json.loads(done.stdout)["nodes"]}, time.monotonic() - began


def test_health_now_runs_a_pass_on_every_node_and_shows_the_failed_one(cluster):
    cluster.ssh("compute04", "systemctl stop munge")
    try:
        rc, passes, took = _health_now(cluster)
        assert rc == 1 and set(passes) == set(cluster.compute), passes
        assert passes["compute04"]["ok"] is False and passes["compute04"]["failed"] == ["health.munge"], passes
        assert passes["compute04"]["action"] in ("drained", "still drained")  # the service may have been first
        assert passes["compute04"]["reason"].startswith("hc:munge: ") and passes["compute04"]["trigger"] == "once"
        assert all(passes[n]["ok"] for n in cluster.compute if n != "compute04"), passes
        assert took < 60, took  # one pass on every node at once, not one after another
        assert _sinfo_r(cluster)["compute04"].startswith("hc:munge: ")
        table = provision("health", str(cluster.spec_path), "--now", check=False, timeout=300)
        assert table.returncode == 1 and "compute04" in table.stdout and "health.munge" in table.stdout
    finally:
        cluster.ssh("compute04", "systemctl start munge")
    rc, passes, _ = _health_now(cluster)
    assert rc == 0 and all(p["ok"] for p in passes.values()), passes
    assert _wait_for(lambda: "compute04" not in _reasons(cluster), 2 * INTERVAL + 10), _reasons(cluster)


def test_a_drain_with_another_reason_is_never_resumed(cluster):
    # an admin's, and one in the program's own shorthand written by hand: neither is the program's to resume
    hand = {"compute03": "admin: bad fan", "compute05": "hc:munge: swapped the key by hand"}
    for node, reason in hand.items():
        cluster.ssh(cluster.controller, f"scontrol update nodename={node} state=drain reason={shlex.quote(reason)}")
    try:
        time.sleep(4 * INTERVAL)
        assert {n: _reasons(cluster).get(n) for n in hand} == hand
    finally:
        cluster.ssh(cluster.controller, "scontrol update nodename=compute03,compute05 state=resume")


def test_with_slurmctld_down_every_pass_ends_in_bounded_time(cluster):
    cluster.ssh(cluster.controller, "systemctl stop slurmctld")
    try:
        for node in cluster.compute:
            for _ in range(5):  # the service's own pass may hold the lock: then this one skips at once
                began = time.monotonic()
                done = cluster.ssh(node, "timeout 60 /usr/local/sbin/gpu-provision-health --json", check=False,
                                   timeout=90)
                took = time.monotonic() - began
                record = json.loads(done.stdout)
                if "skipped" not in record:
                    break
                time.sleep(1)
            assert took < 12, (node, took)  # the pass's deadline is 8 s; ssh and python start-up on top
            assert record["ok"] is True and record["action"].startswith("slurmctld unreachable"), record
    finally:
        cluster.ssh(cluster.controller, "systemctl start slurmctld")
    assert _wait_for(lambda: "*" not in cluster.ssh(cluster.controller, "sinfo -h -o %t").stdout, 120)


def _rolled(cluster: LiveCluster, interval: int, *args: str) -> tuple[int, dict, list[set[str]]]:
    """Change the spec's health interval (slurm.conf and the health service change on every node), run
    `deploy --rolling 2`, sampling the nodes out of service every second; (exit, result, samples)."""
    cluster.spec_path.write_text(SPEC.format(interval=interval))
    sampler = cluster.ssh(cluster.controller, f"nohup bash -c {shlex.quote(SAMPLER)} >/root/samples 2>&1 & echo $!")
    try:
        done = provision("deploy", str(cluster.spec_path), "--rolling", "2", "--json", "--drain-timeout", "120",
                         *args, check=False, timeout=1500)
    finally:
        cluster.ssh(cluster.controller, f"kill {int(sampler.stdout.strip())}")
    samples = []
    for line in cluster.ssh(cluster.controller, "cat /root/samples").stdout.splitlines():
        _, held, drained = (line.split("|") + ["", ""])[:3]
        samples.append({n for part in (held, drained) if part and part != "(null)"
                        for n in hostlist.expand(part)})
    return done.returncode, json.loads(done.stdout), samples


def _interval_on(cluster: LiveCluster, node: str) -> str:
    return cluster.ssh(node, "grep ^HealthCheckInterval= /etc/slurm/slurm.conf").stdout.strip()


def test_a_rolling_deploy_takes_at_most_two_nodes_out_at_a_time(cluster):
    rc, result, samples = _rolled(cluster, INTERVAL + 1)
    assert rc == 0, result
    assert result["batches"] == [["compute01", "compute02"], ["compute03", "compute04"], ["compute05", "compute06"],
                                 ["compute07", "compute08"]]
    assert [o["stage"] for o in result["outcomes"]] == ["released"] * 4
    assert len(samples) > 10 and max(len(s) for s in samples) == 2  # the sampler saw the batches, never more
    for batch in result["batches"]:
        assert any(s == set(batch) for s in samples), batch
    assert {_interval_on(cluster, n) for n in [cluster.controller, *cluster.compute]} == {
        f"HealthCheckInterval={INTERVAL + 1}"}
    assert "gpu_provision_certify" not in cluster.ssh(cluster.controller, "scontrol show reservation").stdout


def test_a_fault_in_batch_two_stops_the_roll_and_leaves_batches_three_and_four_as_they_were(cluster):
    # certify cannot make its scratch folder on compute03 (a file stands there); no role and no health check minds
    scratch = "/run/gpu-provision-certify"
    cluster.ssh("compute03", f"rm -rf {scratch} && touch {scratch}")
    try:
        rc, result, samples = _rolled(cluster, INTERVAL + 2)
        assert rc == 1, result
        assert [(o["stage"], o["ok"]) for o in result["outcomes"]] == [("released", True), ("certify", False)]
        assert result["untouched"] == ["compute05", "compute06", "compute07", "compute08"]
        assert max(len(s) for s in samples) <= 2
        assert {_interval_on(cluster, n) for n in ["compute05", "compute06", "compute07", "compute08"]} == {
            f"HealthCheckInterval={INTERVAL + 1}"}
        assert _interval_on(cluster, "compute01") == f"HealthCheckInterval={INTERVAL + 2}"
        assert _reasons(cluster).get("compute03", "").startswith("certify:")  # held, the failed checks named
        assert "compute03" in cluster.ssh(cluster.controller,
                                          "scontrol -o show reservation gpu_provision_certify").stdout
    finally:
        cluster.ssh("compute03", f"rm -f {scratch}")
    released = provision("certify", str(cluster.spec_path), "--release", "--quiet", check=False, timeout=600)
    assert released.returncode == 0, released.stdout + released.stderr
    assert "compute03" not in _reasons(cluster)
    assert "gpu_provision_certify" not in cluster.ssh(cluster.controller, "scontrol show reservation").stdout
