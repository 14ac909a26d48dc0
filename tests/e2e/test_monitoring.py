"""Monitoring on the shared sandbox cluster (on by default): Prometheus on the controller scrapes every node's node
exporter, labelled by host name, and holds Slurm's view of every compute node; every service listens on its node's
cluster address only; promtool accepts the configuration on the node; every series a rule or a dashboard names is
one this cluster's Prometheus holds (or one it cannot hold here, each with the reason). The alert for a stopped munge
is tested where the health program runs (test_health.py); targets after a grow and a shrink in test_change.py.
"""
from __future__ import annotations

import pytest

from provision.certify.probe.metrics import catalogue
from provision.monitoring import monitoring_node

from prometheus import api, query, wait_for

pytestmark = pytest.mark.e2e

PORTS = (9090, 9093, 9100)


def test_prometheus_scrapes_every_nodes_exporter_and_holds_slurm_series_for_every_compute_node(slurm_cluster):
    info = slurm_cluster.info
    nodes = {n.name for n in info.nodes}
    up = wait_for("every node exporter up", lambda: _nodes(query(info, 'up{job="node"} == 1')) >= nodes, 90)
    assert up == nodes
    series = wait_for("Slurm's state of every compute node",
                      lambda: _nodes(query(info, "slurm_node_state == 1")) >= set(slurm_cluster.compute), 120)
    assert series == set(slurm_cluster.compute)  # the controller and the login node are no Slurm nodes
    sinfo = slurm_cluster.ssh(slurm_cluster.controller, "sinfo -N -h -o '%N %T'").stdout.split("\n")
    states = dict(line.split() for line in sinfo if line.strip())
    for sample in query(info, "slurm_node_state == 1"):
        assert sample["metric"]["state"] in states[sample["metric"]["node"]], (sample, states)
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


def _nodes(samples: list[dict]) -> set[str]:
    return {sample["metric"]["node"] for sample in samples}


def held_names(slurm_cluster) -> set[str]:
    """Every series name the cluster's Prometheus holds now."""
    return set(api(slurm_cluster.info, "label/__name__/values"))


def test_the_catalogues_node_exporter_names_are_series_this_prometheus_holds(slurm_cluster):
    held = wait_for("node exporter's series", lambda: held_names(slurm_cluster) >= {"node_load1"}, 60)
    assert held
    names = held_names(slurm_cluster)
    missing = sorted(name for name in catalogue.EXTERNAL if name not in names and name != "ALERTS")
    assert missing == [], missing
