"""Inventory rendering: golden files, acceptance by the real ansible-inventory, hostlist-compressed Slurm lines."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from provision import inventory
from provision.cluster import lifecycle
from provision.records import ClusterInfo, NodeInfo
from provision.slurm import layout
from provision.spec.loader import load_spec

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "inventories").glob("*.yaml"))
ANSIBLE_INVENTORY = Path(sys.executable).parent / "ansible-inventory"


class _UnsafeLoader(yaml.SafeLoader):
    """Reads the rendered inventory as Ansible does, keeping !unsafe strings as plain strings."""


_UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def _load(text: str):
    return yaml.load(text, Loader=_UnsafeLoader)


def _unsafe(value):
    """ansible-inventory lists a string that Ansible will never template as {"__ansible_unsafe": text}."""
    assert isinstance(value, dict) and set(value) == {"__ansible_unsafe"}, value
    return value["__ansible_unsafe"]


@pytest.fixture(autouse=True)
def _fixed_state_root(monkeypatch):
    monkeypatch.setenv("PROVISION_STATE_DIR", "/var/lib/gpu-provision")


@pytest.mark.parametrize("spec_path", EXAMPLES, ids=lambda p: p.stem)
def test_example_inventory_matches_golden_files(spec_path):
    spec = load_spec(spec_path)
    rendered = inventory.render(spec, lifecycle.planned_cluster(spec))
    golden_dir = spec_path.with_suffix("")
    for relative, text in rendered.items():
        assert (golden_dir / relative).read_text() == text, f"re-render with `make examples`: {relative}"


@pytest.mark.parametrize("spec_path", EXAMPLES, ids=lambda p: p.stem)
def test_ansible_inventory_puts_every_host_in_its_groups(spec_path):
    spec = load_spec(spec_path)
    cluster = lifecycle.planned_cluster(spec)
    result = subprocess.run([str(ANSIBLE_INVENTORY), "-i", str(spec_path.with_suffix("")), "--list"],
                            capture_output=True, text=True, check=True, timeout=120)
    listing = json.loads(result.stdout)
    for node in cluster.nodes:
        for role in node.roles:
            assert node.name in listing[role]["hosts"], (node.name, role)
        assert node.name in listing[f"nodegroup_{node.group}"]["hosts"]
        assert (node.name in listing.get("gpu", {}).get("hosts", [])) == bool(node.gpu_count)
        host_vars = listing["_meta"]["hostvars"][node.name]
        assert (_unsafe(host_vars["ansible_host"]) if node.address else host_vars.get("ansible_host")) == node.address
        assert _unsafe(host_vars["cluster_name"]) == spec.name  # spec strings reach Ansible as data, never templates
        assert _unsafe(host_vars["ansible_user"]) == cluster.ssh_user


def test_inventory_vars_carry_the_software_settings():
    spec = load_spec(REPO / "inventories" / "onprem.yaml")
    text = inventory.render(spec, lifecycle.planned_cluster(spec))["group_vars/all/cluster.yml"]
    data = _load(text)
    assert data["nvidia_driver_branch"] == spec.software.nvidia_driver.branch
    assert data["cuda_versions"] == ["12.4", "12.8"] and data["cuda_default_version"] == "12.8"
    assert data["filesystem_type"] == "glusterfs" and data["slurm_controller_host"] == "head01"
    assert {p["name"] for p in data["slurm_partitions"]} == {"h100", "l40s"}


def _cluster_vars(tmp_path: Path, example: str, active: dict | None) -> dict:
    """The inventory's cluster variables of an example spec with health.active set to `active`."""
    data = yaml.safe_load((REPO / "inventories" / f"{example}.yaml").read_text())
    data.setdefault("health", {})["active"] = active
    path = tmp_path / f"{example}-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = load_spec(path)
    return _load(inventory.render(spec, lifecycle.planned_cluster(spec))["group_vars/all/cluster.yml"])


def test_active_checks_get_floors_derived_for_the_provider_and_each_gpu_model(tmp_path):
    from provision.certify.judging import thresholds
    onprem = _cluster_vars(tmp_path, "onprem", {"interval_s": 900})
    assert onprem["slurm_active_enabled"] is True and onprem["slurm_active_interval"] == 900
    assert onprem["slurm_active_net_min_gbps"] == 1.0 and onprem["slurm_active_bitrate"] == ""  # no pacing
    assert onprem["slurm_active_gpu_floors"]["H100-SXM"] == {
        "gpu.gemm_bf16": thresholds.gpu_floor("gpu.gemm_bf16", "H100-SXM").value}
    sandbox = _cluster_vars(tmp_path, "sandbox", {"interval_s": 60, "level": "standard", "peers": 2})
    assert sandbox["slurm_active_net_min_gbps"] == 0.25 and sandbox["slurm_active_bitrate"] == "1G"
    assert (sandbox["slurm_active_level"], sandbox["slurm_active_peers"]) == ("standard", 2)
    assert _cluster_vars(tmp_path, "sandbox", {"net_min_gbps": 0.5})["slurm_active_net_min_gbps"] == 0.5
    off = _cluster_vars(tmp_path, "sandbox", None)
    assert off["slurm_active_enabled"] is False and "slurm_active_interval" not in off


def test_a_directory_gives_the_sssd_role_its_settings_and_the_password_file_never_the_password(tmp_path):
    from provision.spec.people import Directory, DirectoryUser
    password = "pw-" + "7f3a9c" * 4
    (tmp_path / "bind.pw").write_text(password + "\n")
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    spec = load_spec(REPO / "inventories" / "onprem.yaml")
    directory = Directory(type="ldap", uri="ldaps://ldap.example.org", base_dn="dc=example,dc=org",
                          ca_file=tmp_path / "ca.pem", bind_dn="cn=reader,dc=example,dc=org",
                          bind_password_file=tmp_path / "bind.pw")
    accounting = spec.accounting.model_copy(update={"users": [DirectoryUser(name="dave", accounts=["ml", "physics"])]})
    spec = spec.model_copy(update={"directory": directory, "accounting": accounting})
    rendered = inventory.render(spec, lifecycle.planned_cluster(spec))
    data = _load(rendered["group_vars/all/cluster.yml"])
    assert {k: v for k, v in data.items() if k.startswith("sssd_")} == {
        "sssd_enabled": True, "sssd_ldap_uri": "ldaps://ldap.example.org", "sssd_ldap_base_dn": "dc=example,dc=org",
        "sssd_ldap_ca_file": str(tmp_path / "ca.pem"), "sssd_ldap_bind_dn": "cn=reader,dc=example,dc=org",
        "sssd_ldap_bind_password_file": str(tmp_path / "bind.pw"), "sssd_home_base": "/shared/home"}
    assert {"name": "dave", "accounts": ["ml", "physics"]} in data["slurm_accounts_users"]
    assert all(password not in text for text in rendered.values())


def test_without_a_directory_the_sssd_role_is_off():
    spec = load_spec(REPO / "inventories" / "onprem.yaml")
    data = _load(inventory.render(spec, lifecycle.planned_cluster(spec))["group_vars/all/cluster.yml"])
    assert [k for k in data if k.startswith("sssd_")] == ["sssd_enabled"] and data["sssd_enabled"] is False


def _nodes(count: int, **kwargs) -> tuple[NodeInfo, ...]:
    return tuple(NodeInfo(name=f"gpu{i:05d}", group="gpu", roles=("compute",), partition="gpu", **kwargs)
                 for i in range(1, count + 1))


def _cluster(nodes) -> ClusterInfo:
    ctl = NodeInfo(name="ctl01", group="ctl", roles=("controller",))
    return ClusterInfo(name="big", provider="static", nodes=(ctl, *nodes))


def test_ten_thousand_identical_nodes_give_one_nodename_line():
    cluster = _cluster(_nodes(10_000, gpu_model="H100-SXM", gpu_count=8))
    entries = layout.node_entries(cluster)
    assert entries == [{"names": "gpu[00001-10000]", "gres": "gpu:h100:8", "features": "h100-sxm"}]
    assert layout.partition_entries(cluster) == [{"name": "gpu", "nodes": "gpu[00001-10000]", "default": True}]


def test_different_hardware_gives_separate_nodename_lines():
    h100 = _nodes(4, gpu_model="H100-SXM", gpu_count=8)
    l40s = tuple(NodeInfo(name=f"l40s{i}", group="l40s", roles=("compute",), partition="l40s", gpu_model="L40S",
                          gpu_count=4, default_partition=True) for i in range(1, 3))
    cluster = _cluster(h100 + l40s)
    assert [e["names"] for e in layout.node_entries(cluster)] == ["gpu[00001-00004]", "l40s[1-2]"]
    partitions = layout.partition_entries(cluster)
    assert [(p["name"], p["default"]) for p in partitions] == [("gpu", False), ("l40s", True)]
    assert layout.gres_nodes(cluster) == [{"names": "gpu[00001-00004]", "type": "h100", "count": 8},
                                                {"names": "l40s[1-2]", "type": "l40s", "count": 4}]


def test_inventory_is_written_private(tmp_path):
    spec = load_spec(REPO / "inventories" / "sandbox.yaml")
    for path in inventory.write(spec, lifecycle.planned_cluster(spec), tmp_path / "inv"):
        assert path.stat().st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "inv").st_mode & 0o777 == 0o700


def test_jump_host_goes_through_a_verifying_proxy_command():
    spec = load_spec(REPO / "inventories" / "aws.yaml")
    planned = lifecycle.planned_cluster(spec)
    cluster = planned.model_copy(update={"vars": {"ssh_jump_host": "198.51.100.7"}})
    data = _load(inventory.render(spec, cluster)["hosts.yml"])
    words = shlex.split(data["all"]["vars"]["ansible_ssh_common_args"])  # as Ansible's ssh plugin splits them
    known = f"UserKnownHostsFile={planned.known_hosts_path}"
    assert words[0] == "-o" and len(words) == 2
    proxy = words[1].removeprefix("ProxyCommand=")
    assert shlex.split(proxy) == ["ssh", "-o", "StrictHostKeyChecking=yes", "-o", known, "-i",
                                  str(planned.ssh_key_path), "-W", "%h:%p", "admin@198.51.100.7"]


def test_the_host_key_policy_comes_first_and_beats_the_environment():
    """ansible_ssh_args: first on ssh's command line (before Ansible's own StrictHostKeyChecking=no); the variables
    beat ANSIBLE_SSH_ARGS and ANSIBLE_HOST_KEY_CHECKING (tests/unit/security/test_deploy_host_keys.py runs it)."""
    spec = load_spec(REPO / "inventories" / "sandbox.yaml")
    cluster = lifecycle.planned_cluster(spec)
    data = _load(inventory.render(spec, cluster)["hosts.yml"])["all"]["vars"]
    words = shlex.split(data["ansible_ssh_args"])
    assert words[:4] == ["-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={cluster.known_hosts_path}"]
    assert data["ansible_host_key_checking"] is True
