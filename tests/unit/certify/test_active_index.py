"""The active checks in the report index: `provision health --active` merges what it read into reports/active.json,
and index.html shows each node's latest pass and the passes that failed or drained."""
from __future__ import annotations

import json
import stat

from typer.testing import CliRunner

from provision.certify.report import active, index, record_active
from provision.cli.main import app
from provision.node import health as node_health
from provision.state import ClusterState


def _pass(node: str, started: str, ok: bool | None = True, action: str = "none", reason: str = "",
          failed: tuple[str, ...] = ()) -> dict:
    return node_health.NodeHealth(node, ok, failed, action, reason, started, 12.5, "job").to_dict()


DRAIN = _pass("compute05", "2026-11-28T10:00:10+0000", False, "drained",
              "ac:net: confirmed: 0.0187 then 0.0188 Gb/s (floor 0.25) (gpu-provision-active)", ("active.net",))
RESUME = _pass("compute05", "2026-11-28T10:01:10+0000", True, "resumed")
QUIET = _pass("compute05", "2026-11-28T10:02:10+0000")


def test_latest_pass_per_node_and_a_history_of_failures_and_drains_each_once():
    log = active.merge(active.ActiveLog({}, ()), [DRAIN, _pass("compute01", "2026-11-28T10:00:05+0000")])
    log = active.merge(log, [DRAIN, RESUME])  # the drain read twice is kept once
    log = active.merge(log, [QUIET, _pass("compute01", "2026-11-28T09:00:00+0000", False, "drained")])
    assert log.latest["compute05"]["started"] == QUIET["started"] and log.latest["compute05"]["ok"] is True
    assert log.latest["compute01"]["started"] == "2026-11-28T10:00:05+0000"  # an older pass never replaces a newer
    assert [(h["node"], h["action"]) for h in log.history] == [
        ("compute05", "resumed"), ("compute05", "drained"), ("compute01", "drained")]  # newest first; quiet passes out


def test_a_resume_that_failed_is_kept_though_the_pass_passed():
    failed = _pass("compute03", "2026-11-28T11:00:00+0000", True, "resume failed: slurm_update error: Invalid node",
                   "ac:net: ... (gpu-provision-active)")
    assert active.merge(active.ActiveLog({}, ()), [failed, QUIET]).history == (active._entry(failed),)


def test_a_node_without_a_pass_keeps_its_last_known_one():
    log = active.merge(active.ActiveLog({}, ()), [DRAIN])
    gone = node_health.NodeHealth("compute05", None, error="ssh: connection refused").to_dict()
    later = active.merge(log, [gone, node_health.NodeHealth("compute09", None, error="no active pass yet").to_dict()])
    assert later.latest["compute05"]["started"] == DRAIN["started"]
    assert later.latest["compute09"]["error"] == "no active pass yet" and active.verdict(later.latest["compute09"]) == "na"


def test_the_history_keeps_the_newest_passes_only():
    passes = [_pass(f"compute{i % 7:02d}", f"2026-11-28T{i // 60:02d}:{i % 60:02d}:00+0000", False, "still drained")
              for i in range(active.HISTORY + 30)]
    log = active.merge(active.ActiveLog({}, ()), passes)
    assert len(log.history) == active.HISTORY and log.history[0]["started"] == passes[-1]["started"]


def test_record_writes_a_private_log_that_reads_back_and_a_broken_one_starts_again(tmp_path):
    reports = tmp_path / "reports"
    active.record(reports, [DRAIN])
    path = reports / active.ACTIVE_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert active.read(reports).history[0]["reason"] == DRAIN["reason"]
    path.write_text("{not json")
    broken = active.read(reports)
    assert broken.empty and "could not be read" in broken.note
    assert active.record(reports, [RESUME]).latest["compute05"]["action"] == "resumed"
    assert json.loads(path.read_text())["schema"] == active.SCHEMA


def test_the_index_shows_the_latest_passes_and_the_drains_escaped(tmp_path):
    reports = tmp_path / "reports"
    hostile = _pass("compute02", "2026-11-28T10:00:00+0000", False, "drained", "ac:fs[/shared]: <script>x</script>",
                    ("active.fs[/shared]",))
    active.record(reports, [DRAIN, RESUME, hostile])
    page = index.render(reports)
    assert 'data-node="compute05" data-verdict="pass"' in page and 'data-node="compute02" data-verdict="fail"' in page
    assert 'class="active-pass" data-node="compute05" data-action="drained"' in page
    assert "0.0187 then 0.0188 Gb/s (floor 0.25)" in page
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_the_index_says_when_no_active_check_was_read(tmp_path):
    page = index.render(tmp_path / "reports")
    assert 'id="active-none"' in page and 'id="active"' not in page


def test_record_active_rebuilds_the_index_beside_the_certify_runs(tmp_path):
    state = ClusterState(tmp_path, "c1")
    written = record_active([DRAIN], state)
    assert written == state.reports_dir / index.INDEX_FILE and "compute05" in written.read_text()


def test_health_active_records_what_it_read(tmp_path, monkeypatch):
    """The CLI: `provision health SPEC --active` prints the passes, exits 1 for the failed one and records both."""
    from provision.cluster import lifecycle
    from provision.records import ClusterInfo

    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    spec_path = tmp_path / "c.yaml"
    spec_path.write_text("name: c1\nprovider: {type: sandbox, subnet: 10.93.0.0/24}\nnode_groups:\n"
                         "  - {name: ctl, roles: [controller], count: 1}\n  - {name: compute, roles: [compute], count: 2}\n"
                         "health: {interval_s: 60, active: {interval_s: 600}}\n")
    monkeypatch.setattr(lifecycle, "current_cluster", lambda spec: ClusterInfo(name=spec.name, provider="sandbox",
                                                                                  nodes=()))
    read = [node_health.NodeHealth(**{**DRAIN, "failed": tuple(DRAIN["failed"])}),
            node_health.NodeHealth(**{**QUIET, "node": "compute01", "failed": ()})]
    monkeypatch.setattr(node_health, "last_active", lambda cluster: read)
    result = CliRunner().invoke(app, ["health", str(spec_path), "--active", "--json"])
    assert result.exit_code == 1, result.output
    assert {n["node"] for n in json.loads(result.output)["nodes"]} == {"compute05", "compute01"}
    from provision.spec.loader import load_spec
    reports = ClusterState.for_spec(load_spec(spec_path)).reports_dir
    assert set(active.read(reports).latest) == {"compute05", "compute01"}
    assert "compute05" in (reports / index.INDEX_FILE).read_text()
