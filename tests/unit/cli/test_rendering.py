"""Every line the CLI prints from data reaches the terminal as the plain text: no rich markup, emoji or escapes."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from provision.cli import deploy_view, main, output, plan_view, preflight_view
from provision.deploy.progress import PlayProgress
from provision.spec.example import example
from provision.errors import ProvisionError, SpecError, UsageError
from provision.spec.findings import Finding

# Text that rich would eat or change: character classes, tags, a closing tag, an emoji code, backslashes.
TRICKY = [
    "string should match pattern '^[a-z][a-z0-9-]{0,30}$'",
    "add a group with roles: [storage]",
    "[/red] closes nothing and [bold] opens nothing",
    "C:\\dir\\[x] and a trailing backslash \\",
    "node:thumbs_up: stays text",
]


@pytest.fixture()
def screen(monkeypatch):
    """The real stdout and stderr consoles, writing into buffers."""
    buffers = SimpleNamespace(out=io.StringIO(), err=io.StringIO())
    monkeypatch.setattr(output.out, "_file", buffers.out)
    monkeypatch.setattr(output.err, "_file", buffers.err)
    return buffers


@pytest.mark.parametrize("text", TRICKY)
@pytest.mark.parametrize("level", ["error", "warning"])
def test_a_finding_prints_as_its_plain_rendering(screen, text, level):
    finding = Finding(level, "filesystem.type", text, text, 7)
    output.print_findings([finding])
    assert screen.err.getvalue() == finding.render() + "\n"


@pytest.mark.parametrize("text", TRICKY)
@pytest.mark.parametrize("kind", [ProvisionError, SpecError, UsageError])
def test_an_error_prints_as_one_plain_line(screen, text, kind):
    main._report(kind(text, hint=text))
    assert screen.err.getvalue() == f"error: {text}; {text}\n"


@pytest.mark.parametrize("text", TRICKY)
def test_a_spec_error_prints_its_findings_then_the_line(screen, text):
    """Each finding is an `error:` line; the summary after them is plain, so one problem gives one `error:` line."""
    finding = Finding("error", "name", text, "use [a-z]")
    main._report(SpecError(text, findings=[finding]))
    assert screen.err.getvalue() == f"{finding.render()}\n{text}\n"
    screen.err.truncate(0), screen.err.seek(0)
    warning = Finding("warning", "name", text, "use [a-z]")
    main._report(SpecError(text, findings=[warning]))  # warnings alone: the line is the error
    assert screen.err.getvalue() == f"{warning.render()}\nerror: {text}\n"


@pytest.mark.parametrize("text", TRICKY)
def test_progress_and_stage_lines_print_plain(screen, text):
    output.progress_printer(quiet=False)(text)
    progress = PlayProgress()
    progress.start_stage(text, 100.0)
    progress.host_started(text, 100.0)
    progress.host_failed(text, "failed", text, 103.0)
    progress.end_stage(104.0)
    deploy_view.StageLog().print_new(progress)
    assert screen.err.getvalue() == (f"- {text}\n[{text}] {text} failed at {text!r}: 1 tasks, 0 changed, 3 s\n"
                                     f"[{text}] finished in 4 s: 0 hosts done, 1 failed\n")


@pytest.mark.parametrize("text", TRICKY)
def test_plan_notes_and_table_cells_print_plain(screen, text):
    item = SimpleNamespace(kind="node", name="n1", detail=text, hourly_cost_usd=None)
    plan_view.print_creation(SimpleNamespace(items=[item], notes=[text], hourly_cost_usd=None))
    shown = screen.out.getvalue()
    assert f"note: {text}\n" in shown
    assert text in shown.replace("│", "").replace("\n", "") or text[:20] in shown
    assert "\\[" not in shown.replace(text, "")


@pytest.mark.parametrize("text", TRICKY)
def test_plan_of_a_change_prints_file_lines_plain(screen, text):
    diff = SimpleNamespace(nodes=[], files={text: [text]}, hourly_before=None, hourly_after=None,
                           summary=lambda: text, settings=[], restarts=[], notes=[text])
    plan_view.print_change(diff)
    assert screen.out.getvalue().endswith(f"note: {text}\n{text}:\n  {text}\n{text}\n")


@pytest.mark.parametrize("text", TRICKY)
def test_plan_of_a_setting_change_prints_values_plain(screen, text):
    from provision.settings.diff import SettingChange
    setting = SettingChange("slurm_conf_parameters", None, text, ("n1",), ("slurm",), (text,))
    plan_view.print_settings(SimpleNamespace(settings=[setting], restarts=[text], notes=[]))
    shown = screen.out.getvalue()
    assert f"restarts: {text}\n" in shown
    assert "(unset) -> " in shown and text[:8] in shown


@pytest.mark.parametrize("text", TRICKY)
def test_preflight_failure_line_prints_plain(screen, text):
    preflight_view.render(SimpleNamespace(nodes=[], failed_nodes=[text], elapsed_s=1.0))
    assert screen.err.getvalue() == f"preflight failed on {text}\n"


def _validate(tmp_path, text: str) -> subprocess.CompletedProcess:
    spec = tmp_path / "cluster.yaml"
    spec.write_text(text)
    env = {**os.environ, "PROVISION_STATE_DIR": str(tmp_path / "state")}
    return subprocess.run([sys.executable, "-m", "provision", "validate", str(spec)], capture_output=True, text=True,
                          env=env, timeout=60)


def test_validate_prints_the_name_pattern_intact(tmp_path):
    done = _validate(tmp_path, example("sandbox", "demo", "c.yaml").replace("name: demo", "name: Demo_1"))
    assert done.returncode == 2
    assert "'Demo_1' is not valid: does not match '^[a-z][a-z0-9-]{0,30}$'" in done.stderr


def test_validate_prints_a_fix_with_brackets_intact(tmp_path):
    text = example("sandbox", "demo", "c.yaml").replace("    roles: [compute, storage]", "    roles: [compute]")
    done = _validate(tmp_path, text.replace("  type: none ", "  type: glusterfs ", 1))
    assert done.returncode == 2
    assert "filesystem.type" in done.stderr and "; add a group with roles: [storage]\n" in done.stderr
