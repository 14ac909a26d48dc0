"""Keeping the cluster healthy, end to end on its own sandbox cluster (1 controller + 6 compute, health passes every
5 s): the node health program drains and resumes through Slurm (the failed check named within `sinfo -R`'s 20
characters), leaves other drains alone and ends when slurmctld is down; `provision health --now` runs a pass on every
node at once; `deploy --rolling 2` changes two nodes at a time, and a fault in batch 2 stops the roll with batch 3 as
it was.
"""
from __future__ import annotations

import json
import re
import shlex
import time

import pytest

from provision import hostlist
from provision.cluster import lifecycle
from provision.providers.sandbox import faults
from provision.spec.loader import load_spec
from provision.state import ClusterState

import prometheus
from conftest import LiveCluster, provision
from test_deploy_faults import faults_target

pytestmark = pytest.mark.e2e

INTERVAL = 5
SPEC = """\
name: health
provider: {{type: sandbox, subnet: 10.93.0.0/24}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: compute, roles: [compute], count: 6}}
health: {{interval_s: {interval}{active}}}
# scraped and evaluated every 5 s: the munge alert goes pending within seconds of the drain (its `for` is 1 minute)
monitoring: {{scrape_interval_s: 5}}
"""
ACTIVE = ", active: {interval_s: 10}"  # the active checks' test turns them on (last: they keep every node busy)
MARK = " (gpu-provision-health)"  # how the program's drain reasons end; they start with "hc:<check>: "
# Samples once a second on the controller: the held nodes (hold reservation) and the drained or down ones.
SAMPLER = ("while :; do r=$(scontrol -o show reservation gpu_provision_certify 2>/dev/null | grep -o 'Nodes=[^ ]*'); "
           "d=$(sinfo -h -N -t drain,drained,draining,down,fail -o %N | sort -u | paste -sd, -); "
           "echo \"$(date +%s)|${r#Nodes=}|$d\"; sleep 1; done")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> LiveCluster:
    """The cluster, up and certified; `down` at the end."""
    path = tmp_path_factory.mktemp("health") / "health.yaml"
    path.write_text(SPEC.format(interval=INTERVAL, active=""))
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
        # Prometheus (queried from this machine) fires the alert naming the node and the check (the rule's `for`:
        # 1 minute, under one pass at the default interval of 300 s), and `provision status` shows it
        firing = prometheus.wait_for("the munge alert firing", lambda: _alerts(cluster, "compute02", "firing"), 180)
        assert {(a["labels"]["alertname"], a["labels"].get("check")) for a in firing} >= {
            ("NodeHealthCheckFailing", "health.munge")}, firing
        shown = json.loads(provision("status", str(cluster.spec_path), "--json").stdout)["alerts"]
        assert any(a["name"] == "NodeHealthCheckFailing" and a["node"] == "compute02" and a["state"] == "firing"
                   for a in shown["alerts"]), shown
    finally:
        cluster.ssh("compute02", "systemctl start munge")
    assert _wait_for(lambda: "compute02" not in _reasons(cluster), 2 * INTERVAL + 10), _reasons(cluster)
    health = json.loads(provision("health", str(cluster.spec_path), "--json").stdout)
    by_node = {n["node"]: n for n in health["nodes"]}
    assert set(by_node) == set(cluster.compute) and all(n["ok"] for n in by_node.values())
    # the passing pass reaches Prometheus at the next scrape: the node's alerts resolve
    prometheus.wait_for("the node's alerts resolved", lambda: not _alerts(cluster, "compute02"), 90)


def _alerts(cluster: LiveCluster, node: str, state: str | None = None) -> list[dict]:
    """The alerts Prometheus holds about a node (in one state)."""
    return [a for a in prometheus.alerts(cluster.info) if a["labels"].get("node") == node
            and (state is None or a["state"] == state)]


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
            # the service's own pass may hold the lock (with slurmctld down, up to its 8 s deadline, every 5 s): then
            # this one skips at once, and tries again a second later
            for _ in range(20):
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
    cluster.spec_path.write_text(SPEC.format(interval=interval, active=""))
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
    assert result["batches"] == [["compute01", "compute02"], ["compute03", "compute04"], ["compute05", "compute06"]]
    assert [o["stage"] for o in result["outcomes"]] == ["released"] * 3
    assert len(samples) > 10 and max(len(s) for s in samples) == 2  # the sampler saw the batches, never more
    for batch in result["batches"]:
        assert any(s == set(batch) for s in samples), batch
    assert {_interval_on(cluster, n) for n in [cluster.controller, *cluster.compute]} == {
        f"HealthCheckInterval={INTERVAL + 1}"}
    assert "gpu_provision_certify" not in cluster.ssh(cluster.controller, "scontrol show reservation").stdout


def test_a_fault_in_batch_two_stops_the_roll_and_leaves_batch_three_as_it_was(cluster):
    # certify cannot make its scratch folder on compute03 (a file stands there); no role and no health check minds
    scratch = "/run/gpu-provision-certify"
    cluster.ssh("compute03", f"rm -rf {scratch} && touch {scratch}")
    try:
        rc, result, samples = _rolled(cluster, INTERVAL + 2)
        assert rc == 1, result
        assert [(o["stage"], o["ok"]) for o in result["outcomes"]] == [("released", True), ("certify", False)]
        assert result["untouched"] == ["compute05", "compute06"]
        assert max(len(s) for s in samples) <= 2
        assert {_interval_on(cluster, n) for n in ["compute05", "compute06"]} == {f"HealthCheckInterval={INTERVAL + 1}"}
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


ACTIVE_MARK = " (gpu-provision-active)"
# Every second on the controller: a user's job (root's, in the users' partition) onto a node where an active check's
# job runs at that moment; each line: the node, the active job, and the user job's id
COLLIDE = ("n=0; for i in $(seq {tries}); do l=$(squeue -a -h -p gp-active -t R -o '%N %i' | head -1); "
           "if [ -n \"$l\" ]; then set -- $l; j=$(sbatch --parsable -w $1 -N1 --exclusive -o /dev/null "
           "--wrap=true); echo \"$1 $2 $j\"; n=$((n+1)); [ $n -ge {wanted} ] && break; sleep 3; fi; sleep 1; done")


def _collisions(cluster: LiveCluster, tries: int, wanted: int = 3) -> list[tuple[str, str, str]]:
    """Users' jobs sent onto nodes an active check held: (node, the active job, the user's job)."""
    out = cluster.ssh(cluster.controller, COLLIDE.format(tries=tries, wanted=wanted), timeout=tries * 6 + 60).stdout
    return [tuple(line.split()) for line in out.splitlines() if len(line.split()) == 3]


def _sacct(cluster: LiveCluster, jobs: list[str]) -> dict[str, dict[str, str]]:
    """job -> State, Submit and Start (epoch seconds) from the accounting database."""
    out = cluster.ssh(cluster.controller, f"sacct -X -n -P -j {','.join(jobs)} -o JobID,State,Submit,Start "
                      "--noconvert").stdout
    found = {}
    for line in out.splitlines():
        job, state, submit, start = line.split("|")
        epoch = lambda t: time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%S")) if "T" in t else None  # noqa: E731
        found[job] = {"state": state.split()[0], "submit": epoch(submit), "start": epoch(start)}
    return found


def _started(accounted: dict[str, dict[str, str]], users: list[str]) -> dict[str, dict[str, str]] | None:
    """The accounting records once every one of the users' jobs has started, else None."""
    return accounted if all(accounted.get(user, {}).get("start") for user in users) else None


def test_active_checks_drain_a_slow_node_return_it_and_never_make_a_user_wait(cluster, capsys):
    """health.active turned on from the spec (up applies it); a node's link shaped to 20 Mbit/s with every daemon
    healthy is drained by the active checks naming the network and the figure, and returned once the shaping is gone;
    users' jobs sent onto nodes while an active check ran there start at once (the check is preempted)."""
    cluster.spec_path.write_text(SPEC.format(interval=INTERVAL + 2, active=ACTIVE))
    done = provision("up", str(cluster.spec_path), "--quiet", check=False, timeout=1500)
    assert done.returncode == 0, done.stdout + done.stderr
    slurm_conf = cluster.ssh(cluster.controller, "cat /etc/slurm/slurm.conf").stdout
    assert "PreemptType=preempt/partition_prio" in slurm_conf and "PartitionName=gp-active" in slurm_conf
    collided = _collisions(cluster, 30)
    assert len(collided) >= 3, collided
    jobs = [j for _, active, user in collided for j in (active, user)]
    users = [user for _, _, user in collided]
    accounted = _wait_for(lambda: _started(_sacct(cluster, jobs), users), 60) or _sacct(cluster, jobs)
    assert all(accounted.get(user, {}).get("start") for user in users), accounted  # every user's job started
    waits = [accounted[user]["start"] - accounted[user]["submit"] for _, _, user in collided]
    assert max(waits) <= 5, waits  # not the check's ~15 s: only the seconds Slurm takes to cancel it
    # each check was preempted, or had just ended by itself when the user's job came; preemption is seen at least once
    ended = [accounted[active]["state"] for _, active, _ in collided]
    assert set(ended) <= {"PREEMPTED", "CANCELLED", "COMPLETED"} and "PREEMPTED" in ended, accounted
    victim = "compute05"
    root, name = faults_target(cluster)
    faults.slow_link(root, name, victim, rate="20mbit")
    began = time.monotonic()
    try:
        reason = _wait_for(lambda: _reasons(cluster).get(victim, "").endswith(ACTIVE_MARK)
                           and _reasons(cluster)[victim], 150, every=2)
        drained_after = time.monotonic() - began
        assert reason and reason.startswith("ac:net: confirmed: "), _reasons(cluster)
        assert "Gb/s (floor 0.25)" in reason  # the figures and the floor
        others = {n: r for n, r in _reasons(cluster).items() if n != victim}
        assert not others, others  # no other node drained: its links to the slow node are one of several
        read = provision("health", str(cluster.spec_path), "--active", "--json", check=False, timeout=120)
        passes = {p["node"]: p for p in json.loads(read.stdout)["nodes"]}
        assert read.returncode == 1 and passes[victim]["ok"] is False, passes  # the failed pass, as the node kept it
        assert any(f.startswith("active.net") for f in passes[victim]["failed"]), passes[victim]
    finally:
        faults.restore_link(root, name, victim)
    back = _wait_for(lambda: victim not in _reasons(cluster), 150, every=2)
    returned_after = time.monotonic() - began - drained_after
    assert back, _reasons(cluster)
    # The report index shows both reads: the node's latest pass (it passed again) and the failed one that drained it.
    assert _wait_for(lambda: provision("health", str(cluster.spec_path), "--active", "--json", check=False,
                                       timeout=120).returncode == 0, 60, every=5)
    page = (ClusterState.for_spec(load_spec(cluster.spec_path)).reports_dir / "index.html").read_text()
    assert f'data-node="{victim}" data-verdict="pass"' in page, page
    assert re.search(f'class="active-pass" data-node="{victim}" data-action="(still )?drained"', page), page
    last = json.loads(cluster.ssh(victim, "cat /var/lib/gpu-provision/health/active.json").stdout)
    with capsys.disabled():
        print(f"\nactive checks: {len(collided)} user jobs onto nodes under a check (the checks: {', '.join(ended)}), "
              f"waits {sorted(waits)} s; "
              f"{victim} at 20 Mbit/s drained after {drained_after:.0f} s: {reason}; returned {returned_after:.0f} s "
              f"after the shaping was removed (last pass: {last['where']}, {last['action']})")
