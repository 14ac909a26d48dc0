"""`provision certify` renders, writes JSON, exits 1 on a fail and drains when asked."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from provision.certify.control.run import CertifyOptions, CertifyRun
from provision.cli.main import app
from provision.cluster import lifecycle
from certify_fixtures import CLUSTER, SPEC, certify_run
from provision.spec import loader


def result(verdict: str) -> CertifyRun:
    return certify_run(verdict, drain_failed=True)


@pytest.fixture
def cli(monkeypatch, tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("unused")
    monkeypatch.setattr(loader, "load_spec", lambda path: SPEC)  # the command imports it when it runs
    monkeypatch.setattr(lifecycle, "current_cluster", lambda s: CLUSTER)
    seen = []

    def invoke(verdict, *args):
        def certify(spec_, cluster, options, progress=None):
            seen.append(options)
            return result(verdict)
        monkeypatch.setattr(lifecycle, "run_certify", certify)
        return CliRunner().invoke(app, ["certify", str(spec), *args])
    return invoke, seen


def test_certify_command_exits_1_on_a_fail_and_drains_when_asked(cli):
    invoke, seen = cli
    done = invoke("fail", "--level", "standard", "--drain-failed")
    assert done.exit_code == 1, done.output
    assert seen == [CertifyOptions(level="standard", drain_failed=True)]
    assert "drained node02: certify:slurm.slurmd" in done.output and "report.html" in done.output


def test_certify_command_json_is_the_versioned_report(cli):
    invoke, _ = cli
    done = invoke("pass", "--json")
    assert done.exit_code == 0
    doc = json.loads(done.stdout)
    assert doc["schema"] == "gpu-provision/certify-report" and doc["verdict"] == "pass"


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_metrics_not_written_are_a_note_on_stderr_and_the_exit_status_stays_the_verdicts(cli, monkeypatch, args):
    invoke, _ = cli
    noted = result("pass")
    noted.notes.append("certify metrics: gpu_provision_certify.prom not written on ctl01: connection refused")
    monkeypatch.setitem(globals(), "result", lambda verdict: noted)
    done = invoke("pass", *args)
    assert done.exit_code == 0
    assert "note: certify metrics: gpu_provision_certify.prom not written on ctl01" in done.stderr
    if args:
        assert json.loads(done.stdout)["verdict"] == "pass"


def test_certify_command_passes_a_network_seed_to_replay_a_run_s_pairs(cli):
    invoke, seen = cli
    done = invoke("pass", "--network-seed", "424242")
    assert done.exit_code == 0, done.output
    assert seen == [CertifyOptions(level="quick", network_seed=424242)]
