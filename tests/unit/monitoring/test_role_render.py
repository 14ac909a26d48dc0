"""The monitoring role's files as real Ansible renders them (the role's defaults, vars and templates, the action the
role writes them with, an undefined variable an error), for an inventory with a controller, compute nodes, a GPU node
and a separate monitoring node: Prometheus's configuration passes `promtool check config` with the role's rules,
Alertmanager's passes `amtool check-config`, targets are every node by host name at its address, each service binds
its node's address (0.0.0.0 only with listen: all), and a receiver's URL from its file lands in Alertmanager's file
only."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from monitoring_files import REPO

ROLE = REPO / "playbooks/roles/monitoring"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
TOOLS = REPO / "build/prometheus-tools/usr/bin"
SECRET_URL = "https://hooks.example.internal/services/T000/B000/secret-token"

PLAYBOOK = """\
- name: Render the monitoring role's files for each node's parts
  hosts: all
  gather_facts: false
  vars_files: [{role_vars}]
  tasks:
    - name: Read the receivers' URL files as the role does
      ansible.builtin.import_tasks: {validate}
    - name: Render each part's files with the action the role writes them with, under out/HOST/
      config_files:
        files: "{{{{ lookup('vars', '_monitoring_' ~ item ~ '_files') | under(out ~ '/' ~ inventory_hostname) }}}}"
      loop: "{{{{ _monitoring_wanted_parts }}}}"
    - name: Render Grafana's repository and provisioning files under out/HOST/grafana/
      config_files:
        files: >-
          {{{{ (_monitoring_grafana_repository_files + _monitoring_grafana_files)
             | under(out ~ '/' ~ inventory_hostname ~ '/grafana') }}}}
      when: _monitoring_grafana_wanted | bool
    - name: Write Grafana's admin password with the role's own tasks, under out/HOST/grafana/
      ansible.builtin.import_tasks: {grafana_password}
      when: _monitoring_grafana_wanted | bool
      vars:
        _monitoring_grafana_password_path: "{{{{ out }}}}/{{{{ inventory_hostname }}}}/grafana/admin.password"
        _monitoring_grafana_group: root
  handlers:
    - name: Restart Grafana
      ansible.builtin.debug:
        msg: Grafana would restart
"""

# A filter beside the play: the role's files with their destination's name under a folder here, and without the
# owner and group the role gives them (this machine has no prometheus group).
UNDER = """\
import os


def under(files, folder):
    return [{**{k: v for k, v in f.items() if k not in ('owner', 'group')},
             'dest': os.path.join(folder, os.path.basename(f['dest']))} for f in files]


class FilterModule:
    def filters(self):
        return {'under': under}
"""

# host -> (groups, inventory variables)
HOSTS = {
    "ctl01": (["controller"], {"ansible_host": "10.9.0.10"}),
    "mon01": (["monitoring"], {"ansible_host": "10.9.0.9"}),
    "compute01": (["compute"], {"ansible_host": "10.9.0.11"}),
    "gpu01": (["compute", "gpu"], {"ansible_host": "10.9.0.21"}),
}


def _render(tmp: Path, **settings) -> Path:
    out = tmp / "out"
    out.mkdir()
    url_file = tmp / "pager-url"
    url_file.write_text(SECRET_URL + "\n")
    hosts = {h: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **v}
             for h, (_, v) in HOSTS.items()}
    groups = {g: {"hosts": {h: {} for h, (gs, _) in HOSTS.items() if g in gs}}
              for g in ("controller", "monitoring", "compute", "gpu")}
    # the role's defaults as inventory variables, below the inventory's own settings (as role defaults are)
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    common = {**defaults, "out": str(out), "cluster_name": "render", "slurm_accounting_enabled": True, "monitoring_host": "mon01",
              "monitoring_receivers": [
                  {"name": "ops", "url": "https://hooks.example.internal/ops", "url_file": "", "send_resolved": True},
                  {"name": "pager", "url": "", "url_file": str(url_file), "send_resolved": False}],
              **settings}
    (tmp / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts, "children": groups, "vars": common}}))
    for folder in ("files", "templates"):
        (tmp / folder).symlink_to(ROLE / folder)
    (tmp / "filter_plugins").mkdir()
    (tmp / "filter_plugins/under.py").write_text(UNDER)
    (tmp / "play.yml").write_text(PLAYBOOK.format(grafana_password=ROLE / "tasks/grafana_password.yml", role_vars=ROLE / "vars/main.yml", validate=ROLE / "tasks/validate.yml"))
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_ACTION_PLUGINS": str(REPO / "playbooks/roles/platform/action_plugins")}
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml")],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:]
    assert SECRET_URL not in result.stdout + result.stderr  # never logged
    assert GRAFANA_PASSWORD not in result.stdout + result.stderr
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    return _render(tmp_path_factory.mktemp("monitoring"))


def _prometheus(cluster: Path) -> dict:
    return yaml.safe_load((cluster / "mon01/prometheus.yml").read_text())


def test_each_node_runs_its_parts_only(cluster):
    files = {host.name: sorted(p.name for p in host.iterdir()) for host in cluster.iterdir()}
    exporter = ["prometheus-node-exporter"]
    assert files == {
        "mon01": sorted(["alertmanager.yml", "gpu-provision.rules.yml", "prometheus", "prometheus-alertmanager",
                         "prometheus.yml", *exporter]),
        "ctl01": sorted(["gpu-provision-slurm-metrics", "gpu-provision-slurm-metrics.service", *exporter]),
        "compute01": exporter, "gpu01": exporter}


def test_prometheus_scrapes_every_node_by_host_name_and_dcgm_on_gpu_nodes_only(cluster):
    jobs = {job["job_name"]: job for job in _prometheus(cluster)["scrape_configs"]}
    assert {(c["targets"][0], c["labels"]["node"]) for c in jobs["node"]["static_configs"]} == {
        (f"{variables['ansible_host']}:9100", host) for host, (_, variables) in HOSTS.items()}
    assert [(c["targets"], c["labels"]) for c in jobs["dcgm"]["static_configs"]] == [
        (["10.9.0.21:9400"], {"node": "gpu01"})]
    assert jobs["prometheus"]["static_configs"][0]["targets"] == ["10.9.0.9:9090"]
    assert all(job["relabel_configs"] == [{"source_labels": ["node"], "target_label": "instance"}]
               for job in jobs.values())
    assert jobs["node"]["honor_labels"] is True


def test_promtool_accepts_prometheus_configuration_with_the_roles_rules(cluster, tmp_path):
    config = _prometheus(cluster)
    shutil.copy(cluster / "mon01/gpu-provision.rules.yml", tmp_path / "rules.yml")
    config["rule_files"] = [str(tmp_path / "rules.yml")]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    checked = subprocess.run([str(TOOLS / "promtool"), "check", "config", str(tmp_path / "prometheus.yml")],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "SUCCESS" in checked.stdout + checked.stderr, checked


def test_amtool_accepts_alertmanager_configuration_with_both_receivers(cluster):
    path = cluster / "mon01/alertmanager.yml"
    checked = subprocess.run([str(TOOLS / "amtool"), "check-config", str(path)], capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0, checked
    config = yaml.safe_load(path.read_text())
    assert [r["receiver"] for r in config["route"]["routes"]] == ["ops", "pager"]
    hooks = {r["name"]: r.get("webhook_configs") for r in config["receivers"]}
    assert hooks["pager"] == [{"url": SECRET_URL, "send_resolved": False}]
    assert hooks["ops"] == [{"url": "https://hooks.example.internal/ops", "send_resolved": True}]


def test_each_service_binds_its_nodes_address_and_alertmanager_gossips_nowhere(cluster):
    text = {path.relative_to(cluster).as_posix(): path.read_text() for path in cluster.rglob("*") if path.is_file()}
    assert "--web.listen-address=10.9.0.9:9090" in text["mon01/prometheus"]
    assert "--web.listen-address=10.9.0.9:9093 --cluster.listen-address=\"" in text["mon01/prometheus-alertmanager"]
    assert "--storage.tsdb.retention.time=15d" in text["mon01/prometheus"]
    for host, (_, variables) in HOSTS.items():
        assert f"--web.listen-address={variables['ansible_host']}:9100 " in text[f"{host}/prometheus-node-exporter"]
    assert "0.0.0.0" not in "".join(text.values())
    assert SECRET_URL not in "".join(v for k, v in text.items() if not k.endswith("alertmanager.yml"))


def test_listen_all_binds_every_address(tmp_path):
    out = _render(tmp_path, monitoring_listen="all", monitoring_retention_days=90, monitoring_prometheus_port=9191)
    assert "--web.listen-address=0.0.0.0:9191" in (out / "mon01/prometheus").read_text()
    assert "--storage.tsdb.retention.time=90d" in (out / "mon01/prometheus").read_text()
    assert "--web.listen-address=0.0.0.0:9100 " in (out / "gpu01/prometheus-node-exporter").read_text()
    targets = json.dumps(_prometheus(out)["scrape_configs"])
    assert "10.9.0.9:9191" in targets and "0.0.0.0" not in targets  # scraped at the node's address


def test_the_collector_runs_with_the_accounting_flag_and_its_timeouts(cluster):
    script = (cluster / "ctl01/gpu-provision-slurm-metrics").read_text()
    assert "-m provision.certify.probe.metrics \\\n      slurm --out /var/lib/prometheus/node-exporter --timeout 10 " \
           "--accounting" in script
    assert "sleep 30" in script and "timeout 50 " in script


GRAFANA_KEY = REPO / "tests/fixtures/slurm_repository/site-key.asc"
GRAFANA_FINGERPRINT = "53EF24C03C61808FECDFCA64274B4CB61408D2C1"
GRAFANA_PASSWORD = "gp-grafana-9f8e7d6c5b4a"


@pytest.fixture(scope="module")
def grafana(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("grafana")
    password = tmp / "grafana-admin.password"
    password.write_text(GRAFANA_PASSWORD)
    return _render(tmp, monitoring_grafana_enabled=True, monitoring_grafana_port=3300,
                   monitoring_grafana_key=GRAFANA_KEY.read_text(), monitoring_grafana_key_fingerprint=GRAFANA_FINGERPRINT,
                   monitoring_grafana_admin_password_file=str(password))


def test_grafana_goes_on_the_monitoring_host_only(grafana):
    assert [host.name for host in grafana.iterdir() if (host / "grafana").is_dir()] == ["mon01"]
    assert sorted(p.name for p in (grafana / "mon01/grafana").iterdir()) == sorted([
        "gpu-provision-grafana.asc", "gpu-provision-grafana.sources", "grafana-server", "admin.password",
        "gpu-provision-prometheus.yaml", "gpu-provision-dashboards.yaml",
        "cluster-overview.json", "node.json", "gpu.json", "queue.json"])


def test_grafanas_source_trusts_only_the_keys_fingerprint_from_its_keyring(grafana):
    source = (grafana / "mon01/grafana/gpu-provision-grafana.sources").read_text().splitlines()
    assert source[1:] == ["Types: deb", "URIs: https://apt.grafana.com", "Suites: stable", "Components: main",
                          "Signed-By: /etc/apt/keyrings/gpu-provision-grafana.asc " + GRAFANA_FINGERPRINT]
    assert (grafana / "mon01/grafana/gpu-provision-grafana.asc").read_text() == GRAFANA_KEY.read_text()


def test_grafana_reads_the_clusters_prometheus_under_the_dashboards_uid(grafana):
    datasource = yaml.safe_load((grafana / "mon01/grafana/gpu-provision-prometheus.yaml").read_text())
    assert [(d["uid"], d["type"], d["url"]) for d in datasource["datasources"]] == [
        ("prometheus", "prometheus", "http://10.9.0.9:9090")]


def test_grafanas_provider_reads_the_folder_of_the_shipped_dashboards(grafana):
    provider = yaml.safe_load((grafana / "mon01/grafana/gpu-provision-dashboards.yaml").read_text())
    assert [p["options"]["path"] for p in provider["providers"]] == ["/var/lib/gpu-provision/grafana-dashboards"]
    for name in ("cluster-overview", "node", "gpu", "queue"):
        shipped = json.loads((ROLE / f"files/dashboards/{name}.json").read_text())
        assert json.loads((grafana / f"mon01/grafana/{name}.json").read_text()) == shipped


def test_grafana_listens_on_the_nodes_address_and_its_port(grafana):
    settings = (grafana / "mon01/grafana/grafana-server").read_text().splitlines()
    assert "GF_SERVER_HTTP_ADDR=10.9.0.9" in settings and "GF_SERVER_HTTP_PORT=3300" in settings
    # the package's unit reads its paths from this file too
    assert "CONF_FILE=/etc/grafana/grafana.ini" in settings
    assert "PROVISIONING_CFG_DIR=/etc/grafana/provisioning" in settings


def test_grafanas_admin_password_is_the_clusters_own_read_from_a_file_only_grafana_reads(grafana):
    settings = (grafana / "mon01/grafana/grafana-server").read_text().splitlines()
    assert "GF_SECURITY_ADMIN_PASSWORD__FILE=/etc/grafana/gpu-provision-admin.password" in settings
    written = grafana / "mon01/grafana/admin.password"
    assert written.read_text() == GRAFANA_PASSWORD and written.stat().st_mode & 0o777 == 0o640
    assert GRAFANA_PASSWORD not in "".join(p.read_text() for p in grafana.rglob("*") if p.is_file() and p != written)
