"""Validation of the spec's monitoring section beyond its shape: one monitoring node, ports that collide with nothing
else the cluster listens on, the receivers' files, and Grafana's repository key where a provider can install it."""
from __future__ import annotations

from collections import Counter

from provision import hostlist
from provision.files import FileKind, UnreadableFile, check_regular
from provision.spec.findings import Finding
from provision.spec.health_checks import SLURM_PORTS
from provision.spec.model import ClusterSpec
from provision.spec.signing_keys import key_findings

DCGM_HOSTENGINE_PORT = 5555
_URL_FILE = FileKind("a webhook URL file", "give the path of a file holding the receiver's URL", "")


def check_monitoring(spec: ClusterSpec) -> list[Finding]:
    """Every rule of the monitoring section that needs the rest of the spec."""
    return _monitoring_nodes(spec) + _ports(spec) + _receivers(spec) + _grafana(spec)


def _monitoring_nodes(spec: ClusterSpec) -> list[Finding]:
    count = sum(hostlist.count(g.hosts) if g.hosts else (g.count or 0) for g in spec.node_groups
                if "monitoring" in g.roles)
    if count > 1:
        return [Finding("error", "node_groups", f"{count} nodes have the monitoring role; Prometheus and Alertmanager "
                        "run on one", "give the monitoring role to one node (a group with count: 1)")]
    if count and not spec.monitoring.enabled:
        return [Finding("error", "node_groups", "a group has the monitoring role while monitoring.enabled is false",
                        "set monitoring.enabled: true, or take the monitoring role off the group")]
    return []


def _ports(spec: ClusterSpec) -> list[Finding]:
    monitoring = spec.monitoring
    if not monitoring.enabled:
        return []
    taken = {port: "a Slurm daemon's port" for port in SLURM_PORTS}
    taken[DCGM_HOSTENGINE_PORT] = "DCGM's host engine port"
    taken[spec.ssh.port] = "SSH's port (ssh.port)"
    if spec.health.active is not None:
        taken[spec.health.active.port] = "the active checks' iperf3 port (health.active.port)"
    out = [Finding("error", f"monitoring.{field}", f"{port} is {taken[port]}", "choose another port")
           for field, port in monitoring.ports().items() if port in taken]
    repeated = [port for port, n in Counter(monitoring.ports().values()).items() if n > 1]
    out += [Finding("error", "monitoring", f"port {port} is given to "
                    + " and ".join(f for f, p in monitoring.ports().items() if p == port),
                    "give each service its own port") for port in repeated]
    return out


def _receivers(spec: ClusterSpec) -> list[Finding]:
    receivers = spec.monitoring.receivers
    out = [Finding("error", "monitoring.receivers", f"'{name}' is named twice", "give each receiver its own name")
           for name, n in Counter(r.name for r in receivers).items() if n > 1]
    for index, receiver in enumerate(receivers):
        if receiver.url_file is None:
            continue
        where = f"monitoring.receivers[{index}].url_file"
        try:
            check_regular(receiver.url_file.expanduser(), _URL_FILE)
        except UnreadableFile as exc:
            out.append(Finding("error", where, exc.message, exc.hint or _URL_FILE.fix))
    return out



def _grafana(spec: ClusterSpec) -> list[Finding]:
    grafana = spec.monitoring.grafana
    if grafana is None:
        return []
    if not spec.monitoring.enabled:
        return [Finding("error", "monitoring.grafana", "is set while monitoring.enabled is false (Grafana reads the "
                        "cluster's Prometheus)", "set monitoring.enabled: true, or remove monitoring.grafana")]
    if spec.provider.simulated:
        return [Finding("error", "monitoring.grafana", f"cannot be installed on the {spec.provider.type} provider: "
                        "Debian has no Grafana package, and its nodes reach only the Debian mirror, not Grafana's "
                        "repository", "remove monitoring.grafana, and import the dashboards "
                        "(playbooks/roles/monitoring/files/dashboards) into your own Grafana")]
    return key_findings("monitoring.grafana.key", grafana.key, "monitoring.grafana.key_fingerprint",
                        grafana.key_fingerprint)
