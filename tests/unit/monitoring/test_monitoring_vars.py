"""What the spec's monitoring section gives the roles through the rendered inventory: the monitoring host (the node
with the `monitoring` role, else the controller), ports, receivers (a URL file stays a path here, never its text),
and everything off with `enabled: false` (DCGM's exporter too)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provision import inventory
from provision.cluster import lifecycle
from provision.monitoring import monitoring_node, prometheus_url
from provision.spec.loader import load_spec, validate_file

REPO = Path(__file__).resolve().parents[3]
SECRET = "https://hooks.example.internal/T0/B0/very-secret"


class _UnsafeLoader(yaml.SafeLoader):
    """Reads the rendered inventory as Ansible does, keeping !unsafe strings as plain strings."""


_UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


@pytest.fixture(autouse=True)
def _state_root(monkeypatch, tmp_path):
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))


def _render(tmp_path: Path, monitoring: dict, extra_group: dict | None = None) -> tuple[dict, dict, object]:
    data = yaml.safe_load((REPO / "inventories" / "onprem.yaml").read_text())
    data["monitoring"] = monitoring
    if extra_group:
        data["node_groups"].append(extra_group)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = load_spec(path)
    cluster = lifecycle.planned_cluster(spec)
    files = inventory.render(spec, cluster)
    return (yaml.load(files["group_vars/all/cluster.yml"], Loader=_UnsafeLoader),
            yaml.load(files["hosts.yml"], Loader=_UnsafeLoader), (spec, cluster))


def test_the_controller_runs_prometheus_by_default_on_the_usual_ports(tmp_path):
    variables, _, (spec, cluster) = _render(tmp_path, {})
    assert variables["monitoring_enabled"] is True and variables["dcgm_exporter_enabled"] is True
    assert variables["monitoring_host"] == cluster.controller.name
    assert (variables["monitoring_prometheus_port"], variables["monitoring_alertmanager_port"],
            variables["monitoring_node_exporter_port"], variables["dcgm_exporter_port"]) == (9090, 9093, 9100, 9400)
    assert variables["monitoring_listen"] == "cluster" and variables["monitoring_receivers"] == []
    assert prometheus_url(spec, cluster) == f"http://{cluster.controller.address}:9090"


def test_a_node_with_the_monitoring_role_runs_it_and_is_in_its_group(tmp_path):
    group = {"name": "mon", "roles": ["monitoring"], "hosts": "mon01", "addresses": ["10.0.0.9"]}
    variables, hosts, (spec, cluster) = _render(tmp_path, {"prometheus_port": 9191}, group)
    assert variables["monitoring_host"] == "mon01" == monitoring_node(cluster).name
    assert hosts["all"]["children"]["monitoring"]["hosts"] == {"mon01": {}}
    assert prometheus_url(spec, cluster) == "http://10.0.0.9:9191"


def test_a_receivers_url_file_is_a_path_and_never_its_text(tmp_path):
    url_file = tmp_path / "hook"
    url_file.write_text(SECRET)
    variables, _, _ = _render(tmp_path, {"receivers": [{"name": "pager", "url_file": str(url_file)},
                                                       {"name": "ops", "url": "https://hooks.example.internal/ops",
                                                        "send_resolved": False}]})
    assert variables["monitoring_receivers"] == [
        {"name": "pager", "url": "", "url_file": str(url_file), "send_resolved": True},
        {"name": "ops", "url": "https://hooks.example.internal/ops", "url_file": "", "send_resolved": False}]
    assert SECRET not in yaml.safe_dump(variables)


def test_switched_off_nothing_runs_and_there_is_no_prometheus_to_ask(tmp_path):
    variables, _, (spec, cluster) = _render(tmp_path, {"enabled": False})
    assert variables["monitoring_enabled"] is False and variables["dcgm_exporter_enabled"] is False
    assert prometheus_url(spec, cluster) is None


KEYS = REPO / "tests/fixtures/slurm_repository"
KEY_FINGERPRINT = "53EF24C03C61808FECDFCA64274B4CB61408D2C1"


def test_grafana_is_off_unless_the_spec_asks(tmp_path):
    variables, _, _ = _render(tmp_path, {})
    assert variables["monitoring_grafana_enabled"] is False
    assert not any(name.startswith("monitoring_grafana_") and name != "monitoring_grafana_enabled"
                   for name in variables)


def test_grafana_gets_its_repository_its_checked_key_armored_and_its_port(tmp_path):
    variables, _, _ = _render(tmp_path, {"grafana": {"key": str(KEYS / "site-key.gpg"),
                                                     "key_fingerprint": KEY_FINGERPRINT.lower(), "port": 3300}})
    assert {name: value for name, value in variables.items()
            if name.startswith("monitoring_grafana_") and name != "monitoring_grafana_key"} == {
        "monitoring_grafana_enabled": True, "monitoring_grafana_repository_url": "https://apt.grafana.com",
        "monitoring_grafana_suite": "stable", "monitoring_grafana_components": ["main"],
        "monitoring_grafana_key_file": str((KEYS / "site-key.gpg").absolute()),
        "monitoring_grafana_key_fingerprint": KEY_FINGERPRINT, "monitoring_grafana_port": 3300,
        # the cluster's own admin password: a path in its state, never the password
        "monitoring_grafana_admin_password_file": str(tmp_path / "state/clusters/onprem-example/secrets/"
                                                      "grafana-admin.password")}
    # a binary key file travels armored: the role writes it as an .asc keyring
    assert variables["monitoring_grafana_key"].startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----")


def test_validate_refuses_grafana_on_the_sandbox_and_says_why_at_its_line(tmp_path):
    data = yaml.safe_load((REPO / "inventories" / "sandbox.yaml").read_text())
    data["monitoring"] = {"grafana": {"key": str(KEYS / "site-key.asc"), "key_fingerprint": KEY_FINGERPRINT}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    result = validate_file(path)
    assert not result.ok
    [finding] = [f for f in result.findings if f.path == "monitoring.grafana"]
    assert finding.level == "error" and "Debian has no Grafana package" in finding.message
    assert "import the dashboards" in finding.fix and finding.line
