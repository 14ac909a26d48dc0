"""--json on every command that has it: stdout is one JSON document, or empty with a clean error on stderr.

Each command runs through the real entry point (`python -m provision`) against a static spec whose nodes are on
loopback at a port nothing listens on (port 1), and whose cluster was never brought up, so nothing is reached
beyond this machine. What the commands print on a live cluster is covered by tests/e2e.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from provision.cli.main import _command

# command -> (arguments before --json, arguments after it, expected exit status, stdout holds JSON)
CASES: dict[str, tuple[tuple[str, ...], tuple[str, ...], int, bool]] = {
    "version": ((), (), 0, True),
    "validate": (("{spec}",), (), 0, True),
    "inventory": (("{spec}", "-o", "{tmp}/inv"), (), 0, True),
    "plan": (("{spec}",), (), 0, True),
    "list": ((), (), 0, True),
    "status": (("{spec}",), (), 0, True),
    "down": (("{spec}",), (), 0, True),
    "preflight": (("{spec}",), (), 1, True),  # every node refuses SSH: a report of failed nodes
    "deploy": (("{spec}",), (), 1, True),  # Ansible finds every host unreachable
    "exec": (("{spec}",), ("--", "true"), 255, True),  # no cluster key yet: each node's reason, rc 255
    "health": (("{spec}",), (), 1, True),  # no node could be asked
    "users": (("{spec}",), (), 1, True),  # the controller cannot be asked: the error, in the document
    "certify": (("{spec}",), (), 1, False),  # "cluster demo has no running nodes"
    "up": (("{spec}",), (), 1, False),  # preflight fails before anything is created
}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PROVISION_STATE_DIR": str(cwd / "state"), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "provision", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.fixture()
def loopback_spec(tmp_path) -> Path:
    """The static example, its nodes moved to 127.0.0.0/24 and SSH to port 1."""
    spec = tmp_path / "c.yaml"
    assert run("init", "-p", "static", "-o", str(spec), cwd=tmp_path).returncode == 0
    text = re.sub(r"\b10\.0\.0\.", "127.0.0.", spec.read_text()).replace("port: 22", "port: 1")
    assert "10.0.0." not in text and "port: 1\n" in text
    spec.write_text(text)
    return spec


def json_commands() -> set[str]:
    """Every CLI command with a --json option."""
    return {name for name, command in _command().commands.items()
            if any("--json" in param.opts for param in command.params)}


def test_every_json_command_is_exercised_here():
    assert json_commands() == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_output_is_a_document_or_a_clean_error(tmp_path, loopback_spec, name):
    before, after, rc, has_json = CASES[name]
    args = [a.format(spec=loopback_spec, tmp=tmp_path) for a in (name, *before, "--json", *after)]
    done = run(*args, cwd=tmp_path)
    assert done.returncode == rc, done.stderr[-2000:]
    if has_json:
        assert isinstance(json.loads(done.stdout), dict)
    else:
        assert done.stdout == "" and "error: " in done.stderr and "Traceback" not in done.stderr


def test_a_spec_with_errors_still_gives_json_findings(tmp_path, loopback_spec):
    loopback_spec.write_text(loopback_spec.read_text().replace("count: 8", "count: 99"))
    done = run("validate", str(loopback_spec), "--json", cwd=tmp_path)
    document = json.loads(done.stdout)
    assert done.returncode == 2 and document["ok"] is False and document["findings"]


def test_a_missing_spec_is_a_clean_error_with_nothing_on_stdout(tmp_path):
    done = run("status", str(tmp_path / "nope.yaml"), "--json", cwd=tmp_path)
    assert done.returncode != 0 and done.stdout == "" and "error: " in done.stderr


def test_schema_prints_a_json_document(tmp_path):
    done = run("schema", cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["type"] == "object"
