"""The root command's options (--version, -h, shell completion) and the --json contract: stdout holds only JSON."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from provision import __version__
from provision.cli.up_view import TerminalUpView
from provision.deploy.records import DeployResult, HostResult


def run(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PROVISION_STATE_DIR": str(cwd / "state"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "provision", *args], cwd=cwd, capture_output=True, text=True,
                          env=full_env, timeout=60)


def test_version_option_and_command_agree(tmp_path):
    option, command = run("--version", cwd=tmp_path), run("version", "--json", cwd=tmp_path)
    assert option.returncode == 0 and option.stdout == f"{__version__}\n"
    assert command.returncode == 0 and json.loads(command.stdout) == {"version": __version__}


@pytest.mark.parametrize("args", [["-h"], ["validate", "-h"], ["exec", "-h"]])
def test_h_is_help(tmp_path, args):
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("Usage: provision") and "-h, --help" in done.stdout


def test_help_text_is_printed_as_written(tmp_path):
    assert "compute[01-03]" in run("exec", "--help", cwd=tmp_path).stdout


def test_shell_completion_is_offered_and_completes_commands(tmp_path):
    assert "--install-completion" in run("--help", cwd=tmp_path).stdout
    # typer detects the user's shell from the process tree; named here, as no shell runs the tests
    script = run("--show-completion", "bash", cwd=tmp_path, env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert script.returncode == 0 and "_PROVISION_COMPLETE" in script.stdout
    done = run(cwd=tmp_path, env={"_PROVISION_COMPLETE": "complete_bash", "COMP_WORDS": "provision va",
                                  "COMP_CWORD": "1"})
    assert done.stdout.split() == ["validate"]


@pytest.fixture()
def static_spec(tmp_path) -> Path:
    spec = tmp_path / "c.yaml"
    assert run("init", "-p", "static", "-o", str(spec), cwd=tmp_path).returncode == 0
    return spec


@pytest.mark.parametrize("args", [["version"], ["validate", "{spec}"], ["plan", "{spec}"], ["status", "{spec}"],
                                  ["inventory", "{spec}", "-o", "{tmp}/inv"], ["down", "{spec}"]])
def test_json_commands_print_only_json_on_stdout(tmp_path, static_spec, args):
    full = [a.format(spec=static_spec, tmp=tmp_path) for a in args]
    done = run(*full, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)


def test_inventory_json_lists_the_files_written(tmp_path, static_spec):
    done = run("inventory", str(static_spec), "-o", str(tmp_path / "inv"), "--json", cwd=tmp_path)
    files = json.loads(done.stdout)["files"]
    assert files and all(Path(f).is_file() and Path(f).is_relative_to(tmp_path / "inv") for f in files)


def test_up_json_sends_the_deploy_recap_to_stderr(capsys, tmp_path):
    result = DeployResult([HostResult("gpu01", failed=1, failed_task="t", message="boom")], tmp_path, rc=2)
    view = TerminalUpView(quiet=False, json_out=True)
    view.stage_started("deploy")
    view.stage_finished("deploy", result)
    shown = capsys.readouterr()
    assert shown.out == "" and "gpu01" in shown.err and "deploy recap" in shown.err


def test_up_without_json_shows_the_recap_on_stdout(capsys, tmp_path):
    TerminalUpView(quiet=False).stage_finished("deploy", DeployResult([HostResult("gpu01", ok=3)], tmp_path, rc=0))
    assert "gpu01" in capsys.readouterr().out
