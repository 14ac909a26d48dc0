"""Shell completion of SPEC, through the real completion protocol (what the installed bash/zsh script runs):
the clusters brought up here (their spec copies under the state root), then files and folders."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def place(tmp_path) -> Path:
    """A state root with clusters alpha and beta (and a folder that is no cluster), a working directory with specs."""
    for name in ("alpha", "beta"):
        (tmp_path / "state" / "clusters" / name).mkdir(parents=True)
        (tmp_path / "state" / "clusters" / name / "spec.yaml").write_text("name: x\n")
    (tmp_path / "state" / "clusters" / "half-made").mkdir()  # no spec copy: not offered
    (tmp_path / "cwd" / "inventories").mkdir(parents=True)
    (tmp_path / "cwd" / "alpha.yaml").write_text("")
    (tmp_path / "cwd" / "inventories" / "lab.yaml").write_text("")
    return tmp_path


def complete(place: Path, line: str, shell: str = "bash") -> list[str]:
    words = line.split(" ")
    env = {**os.environ, "PROVISION_STATE_DIR": str(place / "state"), "_PROVISION_COMPLETE": f"complete_{shell}",
           "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1), "_TYPER_COMPLETE_ARGS": line}
    done = subprocess.run([sys.executable, "-m", "provision"], capture_output=True, text=True, timeout=60,
                          cwd=place / "cwd", env=env)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


@pytest.mark.parametrize("command", ["validate", "status", "deploy", "exec", "down"])
def test_spec_completes_cluster_names_then_files(place, command):
    assert complete(place, f"provision {command} ") == ["alpha", "beta", "alpha.yaml", "inventories/"]


@pytest.mark.parametrize("typed, offered", [
    ("al", ["alpha", "alpha.yaml"]),
    ("b", ["beta"]),
    ("inv", ["inventories/"]),
    ("inventories/", ["inventories/lab.yaml"]),
    ("zzz", []),
])
def test_what_is_typed_narrows_the_choices(place, typed, offered):
    assert complete(place, f"provision status {typed}") == offered


def test_zsh_gets_the_same_names(place):
    script = "\n".join(complete(place, "provision status b", shell="zsh"))
    assert '"beta"' in script and "alpha" not in script


def test_no_state_root_yet_offers_files_only(place, tmp_path):
    env_place = tmp_path / "elsewhere"
    (env_place / "cwd").mkdir(parents=True)
    (env_place / "cwd" / "c.yaml").write_text("")
    assert complete(env_place, "provision status ") == ["c.yaml"]
