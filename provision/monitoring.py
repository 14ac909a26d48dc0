"""Where the cluster's monitoring runs and what the monitoring role is told (README "Monitoring"): Prometheus and
Alertmanager on the node with the `monitoring` role, else the controller; node exporter on every node; DCGM's exporter
on GPU nodes; the Slurm collector on the controller; Grafana on the monitoring node where the spec asks for it."""
from __future__ import annotations

from provision.records import ClusterInfo, NodeInfo
from provision.spec.model import ClusterSpec
from provision.spec.signing_keys import signing_key


def monitoring_node(cluster: ClusterInfo) -> NodeInfo:
    """The node that runs Prometheus and Alertmanager."""
    return next(iter(cluster.with_role("monitoring")), cluster.controller)


def prometheus_url(spec: ClusterSpec, cluster: ClusterInfo) -> str | None:
    """Prometheus's base URL on the cluster's network, as the monitoring node itself reaches it; None when
    monitoring is off or the node's address is not known yet."""
    node = monitoring_node(cluster)
    if not spec.monitoring.enabled or not node.address:
        return None
    return f"http://{node.address}:{spec.monitoring.prometheus_port}"


def monitoring_vars(spec: ClusterSpec, cluster: ClusterInfo) -> dict:
    """The monitoring role's monitoring_* and the dcgm role's dcgm_exporter_* from the spec's monitoring section.
    A receiver's url_file stays a path on this machine: the role reads it under no_log."""
    monitoring = spec.monitoring
    receivers = [{"name": r.name, "url": r.url or "",
                  "url_file": str(r.url_file.expanduser().absolute()) if r.url_file else "",
                  "send_resolved": r.send_resolved} for r in monitoring.receivers]
    return {
        "monitoring_enabled": monitoring.enabled,
        "monitoring_host": monitoring_node(cluster).name,
        "monitoring_listen": monitoring.listen,
        "monitoring_prometheus_port": monitoring.prometheus_port,
        "monitoring_alertmanager_port": monitoring.alertmanager_port,
        "monitoring_node_exporter_port": monitoring.node_exporter_port,
        "monitoring_scrape_interval": monitoring.scrape_interval_s,
        "monitoring_retention_days": monitoring.retention_days,
        "monitoring_slurm_interval": monitoring.slurm_interval_s,
        "monitoring_receivers": receivers,
        "monitoring_dcgm_exporter_port": monitoring.dcgm_exporter_port,
        **grafana_vars(spec),
        "dcgm_exporter_enabled": monitoring.enabled,
        "dcgm_exporter_port": monitoring.dcgm_exporter_port,
    }


def grafana_vars(spec: ClusterSpec) -> dict:
    """The monitoring role's monitoring_grafana_*: off, or Grafana's repository, its key (read here, checked against
    the spec's fingerprint and carried armored, so a deploy needs no file outside the cluster's state; the file's
    absolute path too, for the reader) and its port."""
    grafana = spec.monitoring.grafana
    if grafana is None or not spec.monitoring.enabled:
        return {"monitoring_grafana_enabled": False}
    key = signing_key("monitoring.grafana.key", grafana.key, grafana.key_fingerprint)
    return {
        "monitoring_grafana_enabled": True,
        "monitoring_grafana_repository_url": grafana.repository_url,
        "monitoring_grafana_suite": grafana.suite,
        "monitoring_grafana_components": list(grafana.components),
        "monitoring_grafana_key_file": str(grafana.key.expanduser().absolute()),
        "monitoring_grafana_key": key.armored(),
        "monitoring_grafana_key_fingerprint": key.fingerprint,
        "monitoring_grafana_port": grafana.port,
    }
