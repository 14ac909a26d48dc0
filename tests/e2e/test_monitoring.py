"""Monitoring on the shared sandbox cluster (on by default): Prometheus on the controller scrapes every node's node
exporter, labelled by host name, and holds Slurm's view of every compute node; every service listens on its node's
cluster address only; promtool accepts the configuration on the node; every series a rule or a dashboard names is
one this cluster's Prometheus holds (or one it cannot hold here, each with the reason). The alert for a stopped munge
is tested where the health program runs (test_health.py); targets after a grow and a shrink in test_change.py.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from provision.certify.probe.metrics import catalogue
from provision.monitoring import monitoring_node
from provision.spec.loader import load_spec

from conftest import provision
from prometheus import api, query, wait_for

REPO = Path(__file__).resolve().parents[2]
FILES = REPO / "playbooks/roles/monitoring/files"
sys.path.insert(0, str(REPO / "tests/unit/monitoring"))
from promql_names import metric_names  # noqa: E402  (the unit tests' extractor)

pytestmark = pytest.mark.e2e

PORTS = (9090, 9093, 9100)


def test_prometheus_scrapes_every_nodes_exporter_and_holds_slurm_series_for_every_compute_node(slurm_cluster):
    info = slurm_cluster.info
    nodes = {n.name for n in info.nodes}
    wait_for("every node exporter up", lambda: _nodes(query(info, 'up{job="node"} == 1')) >= nodes, 90)
    assert _nodes(query(info, 'up{job="node"}')) == nodes
    wait_for("Slurm's state of every compute node",
             lambda: _nodes(query(info, "slurm_node_state == 1")) >= set(slurm_cluster.compute), 120)
    # the controller and the login node are no Slurm nodes
    assert _nodes(query(info, "slurm_node_state == 1")) == set(slurm_cluster.compute)
    # each node's state is sinfo's, once the collector (every 30 s) has seen the last job of an earlier test end
    wait_for("Slurm's states as sinfo shows them", lambda: _states_agree(slurm_cluster), 120)
    cpus = {s["metric"]["node"]: float(s["value"][1]) for s in query(info, 'slurm_node_cpus{status="total"}')}
    assert set(cpus) == set(slurm_cluster.compute) and all(value >= 1 for value in cpus.values()), cpus
    assert [float(s["value"][1]) for s in query(info, "slurm_controller_up")] == [1.0]


def test_every_service_listens_on_its_nodes_cluster_address_only(slurm_cluster):
    info = slurm_cluster.info
    host = monitoring_node(info)
    listening = slurm_cluster.ssh(host.name, "ss -ltnH").stdout
    for port in PORTS:
        bound = [line.split()[3] for line in listening.splitlines() if line.split()[3].endswith(f":{port}")]
        assert bound == [f"{host.address}:{port}"], (port, listening)
    assert ":9094" not in listening  # Alertmanager's gossip is off
    compute = info.node(slurm_cluster.compute[0])
    listening = slurm_cluster.ssh(compute.name, "ss -ltnH").stdout
    assert [line.split()[3] for line in listening.splitlines() if ":9100" in line.split()[3]] == [
        f"{compute.address}:9100"]


def test_promtool_accepts_the_configuration_and_rules_on_the_node(slurm_cluster):
    host = monitoring_node(slurm_cluster.info).name
    checked = slurm_cluster.ssh(host, "promtool check config /etc/prometheus/prometheus.yml")
    assert "SUCCESS" in checked.stdout + checked.stderr
    rules = api(slurm_cluster.info, "rules")["groups"]
    assert sum(len(group["rules"]) for group in rules) >= 10
    assert all(rule["health"] == "ok" for group in rules for rule in group["rules"]), rules


def _states_agree(slurm_cluster) -> bool:
    """Whether each compute node's slurm_node_state is the state sinfo shows now (idle, allocated, drained...)."""
    sinfo = slurm_cluster.ssh(slurm_cluster.controller, "sinfo -N -h -o '%N %T'").stdout.splitlines()
    states = dict(line.split() for line in sinfo if line.strip())
    held = {s["metric"]["node"]: s["metric"]["state"] for s in query(slurm_cluster.info, "slurm_node_state == 1")}
    return set(held) == set(states) and all(held[node] in states[node] for node in states)


def _nodes(samples: list[dict]) -> set[str]:
    return {sample["metric"]["node"] for sample in samples}


def held_names(slurm_cluster) -> set[str]:
    """Every series name the cluster's Prometheus holds now."""
    return set(api(slurm_cluster.info, "label/__name__/values"))


def _used_names() -> set[str]:
    """Every series name the alert rules and the dashboards query."""
    rules = yaml.safe_load((FILES / "rules/gpu-provision.rules.yml").read_text())
    exprs = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    for board in (FILES / "dashboards").glob("*.json"):
        exprs += _exprs(json.loads(board.read_text()))
    return {name for expr in exprs for name in metric_names(expr)}


def _exprs(value) -> list[str]:
    if isinstance(value, dict):
        return [v for k, v in value.items() if k == "expr" and isinstance(v, str)] + [
            e for v in value.values() for e in _exprs(v)]
    return [e for v in value for e in _exprs(v)] if isinstance(value, list) else []


def _absent_here(slurm_cluster) -> dict[str, str]:
    """The series this cluster cannot hold, each with why."""
    spec = load_spec(slurm_cluster.spec_path)
    why = {name: "no GPU on the shared cluster" for name in catalogue.DCGM}
    why["ALERTS"] = "only while an alert is active"
    if not spec.health.enabled:
        why.update({m.name: "health is off on the shared cluster" for m in catalogue.HEALTH})
    elif spec.health.active is None:
        why.update({m.name: "no active checks" for m in catalogue.HEALTH if "_active_" in m.name})
    why["slurm_jobs"] = why["slurm_jobs_pending"] = "only while jobs are queued (test_a_held_job_...)"
    return why


def test_a_held_job_is_counted_pending_with_its_reason(slurm_cluster):
    info = slurm_cluster.info
    job = slurm_cluster.ssh(slurm_cluster.controller, "sbatch --parsable --hold -J mon-held --wrap true").stdout.strip()
    try:
        pending = wait_for("the held job counted", lambda: query(info, 'slurm_jobs_pending{reason="JobHeldUser"}'), 120)
        assert [float(s["value"][1]) for s in pending] == [1.0], pending
        jobs = query(info, 'slurm_jobs{state="pending"}')
        assert [(s["metric"]["user"], s["metric"]["partition"], float(s["value"][1])) for s in jobs] == [
            ("root", "batch", 1.0)], jobs
    finally:
        slurm_cluster.ssh(slurm_cluster.controller, f"scancel {job}")


def test_every_series_a_rule_or_a_dashboard_queries_is_held_here_or_cannot_be(slurm_cluster):
    wait_for("node exporter's and the collector's series",
             lambda: held_names(slurm_cluster) >= {"node_load1", "slurm_node_state", "gpu_provision_deploy_ok"}, 120)
    if "gpu_provision_certify_ok" not in held_names(slurm_cluster):  # test_certify ran before, unless run alone
        provision("certify", str(slurm_cluster.spec_path), "--quiet", timeout=900)
        wait_for("certify's series", lambda: "gpu_provision_certify_ok" in held_names(slurm_cluster), 60)
    held, absent, used = held_names(slurm_cluster), _absent_here(slurm_cluster), _used_names()
    assert len(used) >= 30, used
    missing = sorted(name for name in used if name not in held and name not in absent)
    assert missing == [], missing
    assert sorted(name for name in catalogue.EXTERNAL if name not in held and name not in absent) == []
