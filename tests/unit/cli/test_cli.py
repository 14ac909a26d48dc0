"""The CLI contract: one-line errors, exit codes, nothing written on bad input, examples that validate."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

PROVISION = [sys.executable, "-m", "provision"]


def run(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PROVISION_STATE_DIR": str(cwd / "state"), **(env or {})}
    return subprocess.run([*PROVISION, *args], cwd=cwd, capture_output=True, text=True, env=full_env, timeout=60)


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


BAD_INPUTS = {
    "malformed YAML": "name: [demo\n",
    "wrong type": "name: demo\nprovider: {type: sandbox}\nnode_groups: [{name: a, roles: [controller], count: x}]\n",
    "unknown key": "name: demo\nprovider: {type: sandbox}\nnode_groups: [{name: a, roles: [controller], cnt: 1}]\n",
    "empty file": "",
    "semantic error": "name: demo\nprovider: {type: sandbox}\nnode_groups: [{name: a, roles: [compute], count: 1}]\n",
}


@pytest.mark.parametrize("command", ["validate", "inventory", "up", "down", "status", "plan"])
@pytest.mark.parametrize("kind", list(BAD_INPUTS))
def test_bad_spec_exits_2_with_one_line_error_and_writes_nothing(tmp_path, command, kind):
    spec = tmp_path / "cluster.yaml"
    spec.write_text(BAD_INPUTS[kind])
    before = _tree(tmp_path)
    extra = ["-o", str(tmp_path / "inv")] if command == "inventory" else []
    result = run(command, str(spec), *extra, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("target", ["absent.yaml", "."])
def test_missing_path_or_directory_exits_2(tmp_path, target):
    result = run("validate", target, cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback(tmp_path):
    result = run("validate", "absent.yaml", "--debug", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" in result.stderr


def test_unknown_option_is_a_usage_error(tmp_path):
    result = run("validate", "--bogus", cwd=tmp_path)
    assert result.returncode == 2 and "No such option" in result.stderr


@pytest.mark.parametrize("provider", ["sandbox", "static", "aws"])
def test_init_writes_an_example_that_validates(tmp_path, provider):
    spec = tmp_path / f"{provider}.yaml"
    assert run("init", "--provider", provider, "-o", str(spec), cwd=tmp_path).returncode == 0
    result = run("validate", str(spec), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["ok"] is True


def test_init_for_aws_boots_debian_12_the_os_we_test_and_says_why(tmp_path):
    from provision.providers.aws.config import DEBIAN_12_AMD64

    spec = tmp_path / "aws.yaml"
    assert run("init", "--provider", "aws", "-o", str(spec), cwd=tmp_path).returncode == 0
    text = spec.read_text()
    data = yaml.safe_load(text)
    assert data["provider"]["ami"] == {"ssm_parameter": DEBIAN_12_AMD64}
    assert data["ssh"]["user"] == "admin"  # Debian's images log in as admin
    why = " ".join(line.strip().lstrip("# ") for line in text.splitlines() if line.strip().startswith("#"))
    assert "Debian 12 and 13 are the releases `make test` tests" in why
    assert "Ubuntu 22.04/24.04 are written but untested until a machine can test them" in why


def test_init_refuses_to_overwrite(tmp_path):
    spec = tmp_path / "c.yaml"
    spec.write_text("keep me")
    result = run("init", "-o", str(spec), cwd=tmp_path)
    assert result.returncode == 2 and spec.read_text() == "keep me"


def test_validate_json_lists_findings_with_paths(tmp_path):
    spec = tmp_path / "c.yaml"
    spec.write_text(BAD_INPUTS["semantic error"])
    result = run("validate", str(spec), "--json", cwd=tmp_path)
    data = json.loads(result.stdout)
    assert result.returncode == 2 and data["ok"] is False
    assert {f["path"] for f in data["findings"]} == {"node_groups"}


def test_warnings_alone_exit_0(tmp_path):
    spec = tmp_path / "c.yaml"
    run("init", "-o", str(spec), cwd=tmp_path)
    spec.write_text(spec.read_text().replace("level: quick", "level: full"))
    result = run("validate", str(spec), cwd=tmp_path)
    assert result.returncode == 0 and "warning: certify.level" in result.stderr


def test_inventory_command_renders_for_ansible(tmp_path):
    spec = tmp_path / "c.yaml"
    run("init", "-p", "static", "-o", str(spec), cwd=tmp_path)
    result = run("inventory", str(spec), "-o", str(tmp_path / "inv"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "inv" / "hosts.yml").stat().st_mode & 0o777 == 0o600


def test_down_takes_orphans_and_static_hosts_are_left_running(tmp_path):
    spec = tmp_path / "c.yaml"
    run("init", "-p", "static", "-o", str(spec), cwd=tmp_path)
    result = run("down", str(spec), "--orphans", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "static hosts are left running" in result.stdout + result.stderr and "0 resources left" in result.stdout
    assert "--orphans" in run("down", "--help", cwd=tmp_path).stdout
