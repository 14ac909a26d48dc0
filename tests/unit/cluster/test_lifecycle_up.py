"""`up` is the library's stage table: each stage a call returning a record, shown through one view, resumable."""
from __future__ import annotations

import pytest

from provision.certify.control.run import CertifyOptions
from provision.cli.up_view import TerminalUpView
from provision.cluster import lifecycle
from provision.errors import CertifyError, DeployError, PreflightError
from provision.preflight.records import Check, NodeReport, PreflightReport
from certify_fixtures import CLUSTER, SPEC, certify_run
from provision.records import ClusterInfo
from provision.state import ClusterState


class FakeProvider:
    """Nodes that exist at once; the state is a real directory."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def check_environment(self) -> None:
        pass

    def create(self, progress) -> ClusterInfo:
        progress("nodes made")
        return CLUSTER


class Recorder(lifecycle.UpView):
    """Everything `up` showed, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def line(self, text: str) -> None:
        self.seen.append(("line", text))

    def stage_finished(self, stage: str, record: object) -> None:
        self.seen.append(("finished", stage, record))


@pytest.fixture
def stages(monkeypatch, tmp_path):
    """up with a fake provider; each stage's call replaced by one that records it and returns `records[stage]`."""
    state = ClusterState(tmp_path, "unit")
    monkeypatch.setattr(lifecycle, "get_provider", lambda spec: FakeProvider(state))
    ran: list[str] = []
    records: dict[str, object] = {"nodes": CLUSTER, "preflight": PreflightReport([], 0.5), "inventory": [],
                                  "deploy": "deployed", "certify": certify_run("pass")}

    def fake(stage):
        def call(run):
            ran.append(stage)
            run.cluster = CLUSTER
            return records[stage]
        return call
    monkeypatch.setattr(lifecycle, "STAGE_CALLS", {s: fake(s) for s in lifecycle.STAGES})
    return state, ran, records


def test_up_runs_the_stages_in_order_and_certify_last():
    assert lifecycle.STAGES == ("nodes", "preflight", "inventory", "deploy", "certify")
    assert set(lifecycle.STAGE_CALLS) == set(lifecycle.STAGES)


def test_a_second_up_resumes_and_redo_and_skip_are_honoured(stages):
    state, ran, _ = stages
    first = lifecycle.up(SPEC)
    assert ran == list(lifecycle.STAGES) and first.ran == ran and first.cluster == CLUSTER
    ran.clear()
    again = lifecycle.up(SPEC, lifecycle.UpOptions(redo=("deploy",)))
    assert ran == ["nodes", "inventory", "deploy"] and again.skipped == ["preflight", "certify"]
    state.remove("stages")
    ran.clear()
    lifecycle.up(SPEC, lifecycle.UpOptions(skip=("preflight", "certify")))
    assert ran == ["nodes", "inventory", "deploy"]


def test_a_failed_stage_is_shown_then_stops_up_and_is_not_marked_done(stages):
    state, ran, records = stages
    records["certify"] = certify_run("fail")
    view = Recorder()
    with pytest.raises(CertifyError, match="certification failed on node02") as raised:
        lifecycle.up(SPEC, view=view)
    assert "/r/report.html" in raised.value.hint
    assert view.seen[-1] == ("finished", "certify", records["certify"])
    assert state.stage_done("deploy") and not state.stage_done("certify")


@pytest.mark.parametrize("stage, record, error, message", [
    ("preflight", PreflightReport([NodeReport("n1", None, [Check("ssh", "fail", "no route")])], 1.0), PreflightError,
     "preflight failed on n1"),
    ("certify", certify_run("fail"), CertifyError, "certification failed on node02"),
])
def test_failure_names_the_nodes(stage, record, error, message):
    found = lifecycle.failure(stage, record)
    assert isinstance(found, error) and found.message == message
    assert lifecycle.failure("certify", certify_run("pass")) is None


def test_a_failed_deploy_names_its_hosts_and_artifacts(tmp_path):
    from provision.deploy.records import DeployResult, HostResult
    found = lifecycle.failure("deploy", DeployResult([HostResult("n1", failed=1)], tmp_path, 2))
    assert isinstance(found, DeployError) and "deploy failed on n1" in str(found) and str(tmp_path) in found.hint


def test_the_certify_stage_runs_at_the_spec_level(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(lifecycle, "run_certify", lambda spec, cluster, options, progress: seen.append(options))
    run = lifecycle._Run(SPEC, FakeProvider(ClusterState(tmp_path, "unit")), lifecycle.UpView(), todo=lifecycle.STAGES, cluster=CLUSTER)
    lifecycle.STAGE_CALLS["certify"](run)
    assert seen == [CertifyOptions(level="standard")]


def test_the_terminal_view_shows_certify_only_on_a_failure_when_quiet(capsys):
    TerminalUpView(quiet=True).stage_finished("certify", certify_run("pass"))
    assert capsys.readouterr().out == ""
    TerminalUpView(quiet=False).stage_finished("certify", certify_run("fail"))
    shown = capsys.readouterr().out
    assert "slurm.slurmd" in shown and "/r/report.json" in shown


def test_up_renders_the_inventory_once_and_its_deploy_uses_it(monkeypatch, tmp_path):
    rendered, deployed = [], []
    monkeypatch.setattr(lifecycle.engine, "write_inventory", lambda *a, **k: rendered.append(k) or [])
    monkeypatch.setattr(lifecycle.engine, "deploy", lambda spec, cluster, options, on_update: deployed.append(options))
    run = lifecycle._Run(SPEC, FakeProvider(ClusterState(tmp_path, "unit")), lifecycle.UpView(), todo=lifecycle.STAGES, cluster=CLUSTER)
    lifecycle.STAGE_CALLS["inventory"](run)
    lifecycle.STAGE_CALLS["deploy"](run)
    assert rendered == [{"read_hardware": True}] and [o.render_inventory for o in deployed] == [False]


def test_nodes_that_joined_are_certified_in_their_reservation_and_a_never_certified_cluster_then_whole(
        monkeypatch, tmp_path):
    """A grow of a cluster brought up with --skip-certify: the held node in maintenance would fail a whole-cluster
    run, so it is certified (and released) inside its reservation first, then the whole cluster."""
    state = ClusterState(tmp_path, "unit")
    calls = []
    monkeypatch.setattr(lifecycle.converge, "held", lambda state, cluster: ["node02"])
    monkeypatch.setattr(lifecycle.converge, "certify_held",
                        lambda spec, cluster, nodes, options, progress: calls.append(("held", nodes)) or
                        certify_run("pass"))
    monkeypatch.setattr(lifecycle, "run_certify",
                        lambda spec, cluster, options, progress: calls.append(("whole",)) or certify_run("pass"))
    run = lifecycle._Run(SPEC, FakeProvider(state), lifecycle.UpView(), todo=lifecycle.STAGES, cluster=CLUSTER)
    lifecycle.STAGE_CALLS["certify"](run)
    assert calls == [("held", ["node02"]), ("whole",)]
    calls.clear()
    state.mark_stage("certify", nodes=["ctl01", "node01"])  # a certified cluster: the joining node only
    lifecycle.STAGE_CALLS["certify"](run)
    assert calls == [("held", ["node02"])]
