"""Issue 2: `pip install .` into a fresh venv gives a `provision` that works from any directory."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    result = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(REPO)], capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return venv


def test_wheel_carries_playbooks_and_templates(installed):
    site = next((installed / "lib").glob("python3*/site-packages/provision"))
    assert (site / "playbooks" / "site.yml").is_file()
    assert (site / "playbooks" / "roles" / "slurm" / "templates" / "slurm.conf.j2").is_file()
    assert (site / "templates" / "inventory" / "hosts.yml.j2").is_file()
    assert (site / "preflight" / "probe.sh").is_file()


def test_provision_works_from_another_directory(installed, tmp_path):
    provision = str(installed / "bin" / "provision")
    assert "Turn bare servers" in subprocess.run([provision, "--help"], cwd=tmp_path, capture_output=True,
                                                 text=True, check=True).stdout
    subprocess.run([provision, "init", "-p", "static", "-o", "c.yaml"], cwd=tmp_path, check=True, timeout=60)
    subprocess.run([provision, "validate", "c.yaml"], cwd=tmp_path, check=True, timeout=60)
    env = {"PROVISION_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"}
    subprocess.run([provision, "inventory", "c.yaml", "-o", "inv"], cwd=tmp_path, check=True, timeout=60, env=env)
    assert "head01" in (tmp_path / "inv" / "hosts.yml").read_text()
