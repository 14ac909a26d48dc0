"""Slurm from a site repository, spec to inventory: the key armored from its file (checked against the fingerprint),
the pinned version and each role's package names reach the slurm role as !unsafe data; Debian's packages add nothing."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from provision import inventory, openpgp
from provision.cluster import lifecycle
from provision.slurm import packages
from provision.spec.loader import load_spec
from provision.spec.model import ClusterSpec

REPO = Path(__file__).resolve().parents[2]
KEYS = REPO / "tests" / "fixtures" / "slurm_repository"
FPR = "53EF24C03C61808FECDFCA64274B4CB61408D2C1"
SCHEDMD = {"client": ["slurm-smd-client"], "controller": ["slurm-smd-slurmctld"], "compute": ["slurm-smd-slurmd"],
           "accounting": ["slurm-smd-slurmdbd"]}
SITE = {"source": "repository", "repository_url": "https://slurm.example.internal/debian",
        "repository_key": str(KEYS / "site-key.gpg"), "repository_key_fingerprint": FPR, "version": "24.11.5-1site"}
ANSIBLE_INVENTORY = Path(sys.executable).parent / "ansible-inventory"


class _UnsafeLoader(yaml.SafeLoader):
    """Reads the rendered inventory as Ansible does, keeping !unsafe strings as plain strings."""


_UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


@pytest.fixture(autouse=True)
def _fixed_state_root(monkeypatch, tmp_path):
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))


def _spec(**slurm) -> ClusterSpec:
    data = load_spec(REPO / "inventories" / "onprem.yaml").model_dump(mode="json", exclude_unset=True)
    data = copy.deepcopy(data)
    data["software"]["slurm"] = {k: v for k, v in {**SITE, **slurm}.items() if v is not None}
    return ClusterSpec.model_validate(data)


def _cluster_vars(spec: ClusterSpec) -> dict:
    text = inventory.render(spec, lifecycle.planned_cluster(spec))["group_vars/all/cluster.yml"]
    return yaml.load(text, Loader=_UnsafeLoader)


def test_a_site_repository_reaches_the_role_with_its_key_version_and_package_names():
    data = _cluster_vars(_spec(packages=SCHEDMD, repository_suite="./"))
    assert data["slurm_package_source"] == "repository"
    assert data["slurm_repository_url"] == "https://slurm.example.internal/debian"
    # the binary key file went in armored (apt reads armor from the .asc keyring), the same key
    key = openpgp.parse_public_key(data["slurm_repository_key"].encode())
    assert data["slurm_repository_key"].startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----\n")
    assert key.fingerprint == data["slurm_repository_key_fingerprint"] == FPR
    assert data["slurm_repository_key"] == (KEYS / "site-key.asc").read_text()  # gpg's armor of that binary key
    assert data["slurm_repository_version"] == "24.11.5-1site" and data["slurm_repository_suite"] == "./"
    assert "slurm_repository_components" not in data  # the role's default, ignored for a flat repository
    assert (data["slurm_client_packages"], data["slurm_controller_packages"], data["slurm_compute_packages"]) == (
        ["slurm-smd-client"], ["slurm-smd-slurmctld"], ["slurm-smd-slurmd"])
    assert data["slurm_accounting_packages"] == ["slurm-smd-slurmdbd", "mariadb-server"]


def test_debians_own_packages_leave_the_roles_defaults_alone():
    data = _cluster_vars(load_spec(REPO / "inventories" / "onprem.yaml"))
    assert data["slurm_package_source"] == "distribution" and data["slurm_repository_url"] == ""
    assert not [name for name in data if name.startswith("slurm_repository_") and name != "slurm_repository_url"]
    assert not [name for name in data if name.endswith("_packages")]


def test_without_a_fingerprint_the_key_goes_in_and_apt_is_not_told_one():
    data = _cluster_vars(_spec(repository_key_fingerprint=None, repository_key=str(KEYS / "site-key.asc"),
                               repository_components=["main", "contrib"], repository_suite="bookworm"))
    assert data["slurm_repository_key_fingerprint"] == ""
    assert openpgp.parse_public_key(data["slurm_repository_key"].encode()).fingerprint == FPR
    assert data["slurm_repository_components"] == ["main", "contrib"] and data["slurm_repository_suite"] == "bookworm"
    assert data["slurm_client_packages"] == ["slurm-client"]  # Debian's names, the spec's default


def test_a_key_file_swapped_after_validate_stops_the_inventory(tmp_path):
    swapped = tmp_path / "slurm.asc"
    swapped.write_bytes((KEYS / "site-key.asc").read_bytes())
    spec = _spec(repository_key=str(swapped))
    swapped.write_bytes((KEYS / "other-key-rsa.asc").read_bytes())
    other = "1D116EA2A3E2C02406F912CBB4D940D27E229B89"
    with pytest.raises(openpgp.KeyFileError, match=f"holds the key {other}, not {FPR}"):
        packages.repository_vars(spec.software.slurm)


def test_ansible_reads_the_repository_variables_as_data(tmp_path):
    spec = _spec(packages=SCHEDMD)
    written = inventory.write(spec, lifecycle.planned_cluster(spec), tmp_path / "inv")
    assert written
    result = subprocess.run([str(ANSIBLE_INVENTORY), "-i", str(tmp_path / "inv"), "--list"],
                            capture_output=True, text=True, check=True, timeout=120)
    host = json.loads(result.stdout)["_meta"]["hostvars"]["head01"]
    unsafe = {name: value["__ansible_unsafe"] for name, value in host.items()  # strings Ansible never templates
              if isinstance(value, dict) and set(value) == {"__ansible_unsafe"}}
    assert unsafe["slurm_repository_key"] == openpgp.read_public_key(KEYS / "site-key.gpg").armored()
    assert unsafe["slurm_repository_key_fingerprint"] == FPR and unsafe["slurm_repository_version"] == "24.11.5-1site"
    assert host["slurm_compute_packages"] == [{"__ansible_unsafe": "slurm-smd-slurmd"}]
