"""A cluster is bound to its spec file: another file with the same name is said, shown as a diff, and cannot remove
nodes or change the configuration without --rebind; `init` never silently names an existing cluster."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from provision.cluster import binding, change, clusters, lifecycle
from provision.spec.loader import load_spec
from provision.state import ClusterState

SPEC = """\
name: bound
provider: {{type: sandbox, subnet: 10.98.8.0/24}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: cn, roles: [compute], count: {count}}}
{extra}"""


def cli(*args: str, root: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PROVISION_STATE_DIR": str(root)}, cwd=cwd)


@pytest.fixture
def bound(tmp_path, monkeypatch):
    """A cluster with two compute nodes, last applied from `first.yaml`; `other.yaml` beside it, same name."""
    root = tmp_path / "state"
    monkeypatch.setenv("PROVISION_STATE_DIR", str(root))
    first, other = tmp_path / "first.yaml", tmp_path / "other.yaml"
    first.write_text(SPEC.format(count=2, extra=""))
    spec = load_spec(first)
    clusters.remember_spec(spec, first)
    change.save_applied(ClusterState.for_spec(spec), lifecycle.planned_cluster(spec).nodes)
    return spec, first, other, root


def _check(path: Path, command: str, rebind: bool = False) -> binding.Rebinding | None:
    return binding.check(load_spec(path), path, command, rebind)


def test_the_bound_file_and_the_cluster_name_are_the_cluster_s_own(bound):
    spec, first, _, root = bound
    assert clusters.bound_file(ClusterState.for_spec(spec)) == first.absolute()
    assert _check(first, "up") is None
    copy = clusters.resolve(Path("bound"))  # `provision up bound`: the spec copy
    assert copy != first and _check(copy, "down") is None


@pytest.mark.parametrize("command, count, extra, needs", [
    ("up", 1, "", "`up` would remove cn02"),
    ("up", 2, "health: {interval_s: 120}\n", "`up` would change the configuration"),
    ("up", 3, "", ""),  # only adds a node: said, shown, done
    ("deploy", 3, "", "`deploy` would change the configuration"),
    ("down", 2, "# another file\n", "`down` would take down every node"),
])
def test_another_file_is_shown_and_what_changes_the_cluster_needs_the_flag(bound, command, count, extra, needs):
    _, first, other, _ = bound
    other.write_text(SPEC.format(count=count, extra=extra))
    found = _check(other, command)
    assert found.bound == first.absolute() and found.given == other.absolute()
    assert found.change == needs and found.refused is bool(needs)
    assert found.lines()[0] == f"cluster bound was last applied from {first.absolute()}, not from {other.absolute()}"
    assert found.lines()[1:3] == [f"--- {first.absolute()} (as last applied)", f"+++ {other.absolute()}"]
    if needs:
        error = found.error()
        assert error.exit_code == 2 and str(first.absolute()) in str(error) and str(other.absolute()) in str(error)
        assert "--rebind" in error.hint and not _check(other, command, rebind=True).refused


def test_another_file_with_the_same_spec_is_a_note_only(bound):
    _, first, other, _ = bound
    other.write_text(first.read_text())
    found = _check(other, "down")
    assert found.diff == () and not found.refused and found.lines()[0].endswith("other.yaml holds the same spec")


def test_a_cluster_taken_down_is_bound_to_nothing(bound):
    spec, _, other, _ = bound
    ClusterState.for_spec(spec).remove(change.APPLIED)
    other.write_text(SPEC.format(count=1, extra=""))
    assert _check(other, "up") is None


def test_the_cli_refuses_a_shrink_from_another_file_with_one_line_and_changes_nothing(bound):
    spec, first, other, root = bound
    state = ClusterState.for_spec(spec)
    before = {p.name: p.read_bytes() for p in state.path.iterdir() if p.is_file()}
    other.write_text(SPEC.format(count=1, extra=""))
    for command in ("up", "deploy", "down"):
        result = cli(command, str(other), root=root)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert result.returncode == 2, (command, result.stderr)
        assert len(errors) == 1 and str(first.absolute()) in errors[0] and str(other.absolute()) in errors[0]
        assert "--rebind" in errors[0] and "Traceback" not in result.stderr
        assert "-  - {name: cn, roles: [compute], count: 2}" in result.stderr  # the difference is shown
    assert {p.name: p.read_bytes() for p in state.path.iterdir() if p.is_file()} == before


def test_init_names_no_cluster_that_exists_here(tmp_path):
    root = tmp_path / "state"
    first = cli("init", root=root)
    assert first.returncode == 0 and "name: demo " in first.stdout and first.stderr == ""
    for name in ("demo", "demo-2"):
        (root / "clusters" / name).mkdir(parents=True)
        (root / "clusters" / name / "applied.json").write_text('{"nodes": []}')
    again = cli("init", "-o", str(tmp_path / "new.yaml"), root=root)
    assert again.returncode == 0 and "name: demo-3 " in (tmp_path / "new.yaml").read_text()
    assert "cluster demo exists on this machine; the example is named demo-3" in again.stderr
    named = cli("init", "--name", "demo", root=root)
    assert "name: demo " in named.stdout and "cluster demo exists on this machine" in named.stderr
    assert clusters.free_name("x" * 31, root) == "x" * 31
