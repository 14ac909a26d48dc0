"""The CLI starts light: `provision --help`, `version` and shell completion load no SDK (paramiko, boto3,
ansible_runner) and none of the library's heavy modules; a command loads what it uses when it runs. Structural
checks (what is imported), not timings: bench/cli_startup.py measures the time."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from provision import preflight
from provision.cli import options
from provision.deploy import records
from provision.remote import commands
from provision.slurm import admin

HEAVY = ("paramiko", "boto3", "botocore", "ansible_runner", "jinja2",
         "provision.cluster.lifecycle", "provision.spec.model", "provision.records", "provision.certify.control",
         "provision.adaptors", "provision.deploy.engine", "provision.providers.sandbox", "provision.providers.aws")


def _heavy(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def _imported_by(args: list[str], env: dict[str, str], tmp_path) -> list[str]:
    """Every module a real run of the CLI imported, read from `python -X importtime`."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "provision", *args], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PROVISION_STATE_DIR": str(tmp_path / "state"), **env})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line.split("|")[-1] for line in done.stderr.splitlines() if line.startswith("import time:")]
    return [name.strip() for name in lines[1:]]  # the first line is the header


def test_importing_the_cli_loads_no_sdk_and_no_heavy_module():
    code = "import json, sys; import provision.cli.main; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = json.loads(done.stdout)
    assert "provision.cli.main" in loaded and _heavy(loaded) == []


@pytest.mark.parametrize("args, env", [
    (["--help"], {}),
    (["version"], {}),
    ([], {"_PROVISION_COMPLETE": "complete_bash", "COMP_WORDS": "provision status ", "COMP_CWORD": "2"}),
    (["init", "--help"], {}),
], ids=["help", "version", "completion", "init-help"])
def test_the_instant_commands_load_nothing_heavy(tmp_path, args, env):
    loaded = _imported_by(args, env, tmp_path)
    assert "provision.cli.options" in loaded and _heavy(loaded) == []


def test_a_command_still_loads_the_library_it_uses(tmp_path):
    (tmp_path / "c.yaml").write_text("name: c\nprovider: {type: static}\nnode_groups:\n  - {name: cn, roles: "
                                     "[controller, compute], hosts: cn01, addresses: [10.0.0.1]}\n")
    loaded = _imported_by(["validate", "c.yaml"], {}, tmp_path)
    assert "provision.spec.model" in loaded and "paramiko" not in loaded


def test_the_defaults_the_cli_repeats_equal_the_library_s():
    assert options.DRAIN_TIMEOUT_S == admin.DEFAULT_DRAIN_TIMEOUT_S
    assert options.PREFLIGHT_CONCURRENCY == preflight.DEFAULT_CONCURRENCY
    assert options.KEEP_RUNS == records.KEEP_RUNS
    assert options.EXEC_TIMEOUT_S == commands.DEFAULT_TIMEOUT_S
