"""`provision certify` renders, writes JSON, exits 1 on a fail and drains when asked."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from provision.certify.control.run import CertifyOptions, CertifyRun
from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport, NodeResult
from provision.certify.report import ReportPaths
from provision.cli.main import app
from provision.cluster import lifecycle
from provision.records import ClusterInfo, NodeInfo
from provision.spec import loader
from provision.spec.model import ClusterSpec

SPEC = ClusterSpec.model_validate({
    "name": "unit", "provider": {"type": "sandbox"}, "certify": {"level": "standard"},
    "node_groups": [{"name": "ctl", "roles": ["controller"], "count": 1},
                    {"name": "node", "roles": ["compute"], "count": 2, "partition": "batch",
                     "default_partition": True}],
})
CLUSTER = ClusterInfo(name="unit", provider="sandbox", nodes=(
    NodeInfo(name="ctl01", group="ctl", roles=("controller",), state="running"),))
PATHS = ReportPaths(Path("/r"), Path("/r/report.json"), Path("/r/report.xml"), Path("/r/report.html"))


def result(verdict: str) -> CertifyRun:
    checks = (CheckResult("slurm.slurmd", verdict, node="node02", detail="slurmd is not running [/shared]"),
              CheckResult("gpu.nvml", "na", node="node02"))
    report = ClusterReport("unit", "standard", "2026-01-01T00:00:00.000+00:00", "2026-01-01T00:00:09.500+00:00",
                           (NodeResult("node01", (CheckResult("slurm.srun", "pass", node="node01"),)),
                            NodeResult("node02", checks)))
    return CertifyRun(report, PATHS, drained={"node02": "certify:slurm.slurmd"} if verdict == "fail" else {})


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
