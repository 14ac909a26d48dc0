"""Certify's and deploy's last results as series on the monitoring node: built from the real records (a report judged
from the probe documents recorded on an H200, the shared certify fixture, a deploy's host results), checked against
the catalogue, written with ONE remote command whatever the cluster's size (a fake at the SSH boundary counts them),
the text on stdin and never in the command line; a write that fails is a note, never a changed verdict. The write
command itself runs here in a temporary folder: the file appears whole, 0644, with no temporary file left."""
from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from provision.certify.control import run as runner
from provision.certify.judging.assemble import assemble
from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.metrics.catalogue import CERTIFY, DEPLOY, OURS, TEXTFILES
from provision.certify.probe.metrics.textfile import render, sample
from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport, NodeResult, RunScope
from provision.certify.report import metrics as certify_metrics
from provision.certify.report import node_series
from provision.deploy import metrics as deploy_metrics, node_results
from provision.deploy.records import DeployResult, HostResult
from provision.errors import ConnectionFailure
from provision.records import ClusterInfo, NodeInfo
from provision.remote import textfiles
from provision.remote.commands import CommandResult
from provision.spec.model import ClusterSpec
from provision.state import ClusterState
from certify_fixtures import certify_run

H200 = Path(__file__).resolve().parents[2] / "fixtures" / "certify" / "h200"
SPEC = ClusterSpec.model_validate({
    "name": "mon", "provider": {"type": "sandbox"},
    "node_groups": [{"name": "ctl", "roles": ["controller"], "count": 1},
                    {"name": "mon", "roles": ["monitoring"], "count": 1},
                    {"name": "node", "roles": ["compute"], "count": 2, "partition": "batch",
                     "default_partition": True}]})
OFF = SPEC.model_copy(update={"monitoring": SPEC.monitoring.model_copy(update={"enabled": False})})


def _cluster(computes: int = 2, user: str = "admin") -> ClusterInfo:
    nodes = [NodeInfo(name="ctl01", group="ctl", roles=("controller",), address="10.87.0.10", state="running"),
             NodeInfo(name="mon01", group="mon", roles=("monitoring",), address="10.87.0.11", state="running")]
    nodes += [NodeInfo(name=f"node{i:03d}", group="node", roles=("compute",), address=f"10.87.1.{i % 250}",
                       state="running") for i in range(1, computes + 1)]
    return ClusterInfo(name="mon", provider="sandbox", nodes=tuple(nodes), ssh_user=user)


class FakeSsh:
    """The SSH boundary (run_on's shape): records every command, its node and input; answers as told."""

    def __init__(self, answer: CommandResult | Exception | None = None) -> None:
        self.calls: list[tuple[str, str, bytes | None]] = []
        self.answer = answer

    def __call__(self, cluster, node, command, timeout, stdin=None) -> CommandResult:
        self.calls.append((node.name, command, stdin))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer or CommandResult(node.name, 0, "", "")


def _h200_report() -> ClusterReport:
    """The report `certify` assembles from the probe document recorded on a real H200 (as root)."""
    doc = ProbeDocument.from_dict(json.loads((H200 / "probe_standard_root.json").read_text()))
    node = NodeInfo(name="vm", group="gpu", roles=("compute",), gpu_model="H200-SXM", gpu_count=1)
    return assemble(cluster="h200", level="standard", nodes=[node], probes={"vm": doc},
                    started_at="2026-11-28T17:27:21Z", finished_at="2026-11-28T17:27:23Z")


def _series(samples) -> dict[tuple, float]:
    return {(s.name, *sorted(s.labels)): s.value for s in samples}


def _state(tmp_path) -> ClusterState:
    return ClusterState(tmp_path / "state", "mon")


SAMPLE_LINE = re.compile(r'^(\w+)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _written(ssh: FakeSsh) -> dict[tuple, float]:
    """The series of the last file written through the fake, keyed as `_series` keys them."""
    found = {}
    for line in ssh.calls[-1][2].decode().splitlines():
        if line and not line.startswith("#"):
            name, labels, value = SAMPLE_LINE.match(line).groups()
            found[(name, *sorted(LABEL.findall(labels or "")))] = float(value)
    return found


def _by_node(series: dict[tuple, float], name: str) -> dict[str, float]:
    """node -> value of one per-node series."""
    return {dict(k[1:])["node"]: v for k, v in series.items() if k[0] == name}


def test_a_judged_h200_report_gives_every_certify_series_with_the_figures_its_checks_measured():
    report = _h200_report()
    found = certify_metrics.samples(report)
    assert {s.name for s in found} == {m.name for m in CERTIFY}
    series = _series(found)
    assert series[("gpu_provision_certify_ok",)] == 1.0
    assert series[("gpu_provision_certify_last_run_timestamp_seconds",)] == 1795886843.0  # 2026-11-28T17:27:23Z
    assert series[("gpu_provision_certify_node_ok", ("node", "vm"))] == 1.0
    gemm = next(c for c in report.nodes[0].checks if c.check == "gpu.gemm_bf16")
    key = ("gpu_provision_certify_figure", ("check", "gpu.gemm_bf16"), ("node", "vm"), ("unit", gemm.unit))
    assert series[key] == pytest.approx(gemm.value) and gemm.value > 675.3
    judged = {c.check for c in report.nodes[0].checks if c.verdict != "na"}
    assert {dict(k[1:])["check"] for k in series if k[0] == "gpu_provision_certify_check_ok"} == judged
    assert len(series) == len(found)  # one sample per series: no duplicate a scrape would refuse


def test_a_failed_check_is_zero_for_its_node_and_the_cluster_while_na_checks_have_no_series():
    series = _series(certify_metrics.samples(certify_run("fail").report))
    assert series[("gpu_provision_certify_ok",)] == 0.0
    assert series[("gpu_provision_certify_node_ok", ("node", "node02"))] == 0.0
    assert series[("gpu_provision_certify_node_ok", ("node", "node01"))] == 1.0
    assert series[("gpu_provision_certify_check_ok", ("check", "slurm.slurmd"), ("node", "node02"))] == 0.0
    assert not any(("check", "gpu.nvml") in k for k in series)  # judged n/a


def test_a_warning_passes_and_per_gpu_checks_are_one_series_with_the_failing_gpus_figure():
    checks = tuple(CheckResult("gpu.h2d_bw", v, node="n1", subject=f"gpu{i}", value=x, unit="GB/s")
                   for i, (v, x) in enumerate([("pass", 55.1), ("fail", 12.5), ("fail", 11.0), ("warn", 50.0)]))
    report = ClusterReport("c", "quick", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:09+00:00",
                           (NodeResult("n1", checks), NodeResult("n2", (CheckResult("x.y", "warn", node="n2"),))))
    series = _series(certify_metrics.samples(report))
    assert series[("gpu_provision_certify_check_ok", ("check", "gpu.h2d_bw"), ("node", "n1"))] == 0.0
    assert series[("gpu_provision_certify_figure", ("check", "gpu.h2d_bw"), ("node", "n1"), ("unit", "GB/s"))] == 12.5
    assert series[("gpu_provision_certify_node_ok", ("node", "n2"))] == 1.0


def test_a_certify_of_a_large_cluster_is_one_remote_command_on_the_monitoring_node_its_text_on_stdin(tmp_path):
    cluster = _cluster(computes=400)
    nodes = tuple(NodeResult(n.name, (CheckResult("slurm.srun", "pass", node=n.name),)) for n in cluster.nodes)
    report = ClusterReport("mon", "quick", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:09+00:00", nodes)
    ssh = FakeSsh()
    assert certify_metrics.publish(SPEC, cluster, _state(tmp_path), report, ssh) is None
    [(node, command, stdin)] = ssh.calls
    assert node == "mon01" and command.startswith("sudo -n sh -c ")
    assert TEXTFILES["certify"] in command and "node400" not in command
    text = stdin.decode()
    assert text.count("gpu_provision_certify_node_ok{") == 402
    assert '# TYPE gpu_provision_certify_ok gauge\ngpu_provision_certify_ok 1\n' in text


def test_without_a_monitoring_node_the_controller_holds_the_file_and_root_needs_no_sudo(tmp_path):
    cluster = _cluster(user="root")
    cluster = cluster.model_copy(update={"nodes": tuple(n for n in cluster.nodes if n.name != "mon01")})
    ssh = FakeSsh()
    certify_metrics.publish(SPEC, cluster, _state(tmp_path), certify_run("pass").report, ssh)
    assert [(node, command.startswith("sh -c ")) for node, command, _ in ssh.calls] == [("ctl01", True)]


def test_monitoring_off_writes_nothing_but_the_run_is_recorded(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    report = _certify_report(("ctl01", "pass", 1.0), ("node001", "pass", 600.0))
    assert certify_metrics.publish(OFF, _cluster(), state, report, ssh) is None
    assert ssh.calls == []
    assert set(node_series.CertifySeries.from_dict(state.read(node_series.DOCUMENT)).nodes) == {"ctl01", "node001"}


@pytest.mark.parametrize("answer, why", [
    (ConnectionFailure("mon01: 10.87.0.11:22: connection refused", hint="h"), "not written on mon01: 10.87.0.11:22"),
    (CommandResult("mon01", 1, "", "mktemp: failed to create file via template\n"), "mktemp: failed to create"),
    (RuntimeError("channel closed"), "RuntimeError: channel closed"),
])
def test_a_failed_write_is_a_note_and_certify_keeps_its_verdict(monkeypatch, tmp_path, answer, why):
    run = certify_run("pass")
    monkeypatch.setattr(runner, "collect", lambda spec, cluster, options, progress: run.report)
    monkeypatch.setattr(runner, "write_to_state", lambda report, state: None)
    ssh = FakeSsh(answer)
    monkeypatch.setattr(runner, "publish_metrics",
                        lambda s, c, st, r: certify_metrics.publish(s, c, _state(tmp_path), r, ssh))
    result = runner.certify(SPEC, _cluster())
    assert result.ok and len(ssh.calls) == 1
    [note] = result.notes
    assert note.startswith(f"certify metrics: {TEXTFILES['certify']} not written") and why in note


def test_deploy_series_mark_failed_and_unreachable_hosts_not_converged():
    result = DeployResult([HostResult("ctl01", ok=9), HostResult("mon01", ok=9, changed=2),
                           HostResult("node001", failed=1), HostResult("node002", unreachable=1)], Path("/a"), rc=2)
    nodes = node_results.merged({}, result, ended=1_800_000_000.5)
    series = _series(deploy_metrics.samples(result, 1_800_000_000.5, nodes))
    assert {s[0] for s in series} == {m.name for m in DEPLOY}
    assert series[("gpu_provision_deploy_ok",)] == 0.0
    assert series[("gpu_provision_deploy_last_run_timestamp_seconds",)] == 1_800_000_000.5
    assert _by_node(series, "gpu_provision_deploy_node_ok") == {
        "ctl01": 1.0, "mon01": 1.0, "node001": 0.0, "node002": 0.0}
    assert set(_by_node(series, "gpu_provision_deploy_node_last_run_timestamp_seconds").values()) == {1_800_000_000.5}


def test_a_deploy_is_one_write_unless_checking_monitoring_is_off_or_its_node_was_not_converged(tmp_path):
    hosts = [HostResult(n.name, ok=3) for n in _cluster(computes=50).nodes]
    ssh, state = FakeSsh(), _state(tmp_path)
    assert deploy_metrics.publish(SPEC, _cluster(50), state, DeployResult(hosts, Path("/a"), rc=0), 1.0, ssh) is None
    assert len(ssh.calls) == 1 and ssh.calls[0][0] == "mon01" and TEXTFILES["deploy"] in ssh.calls[0][1]
    checking = DeployResult(hosts, Path("/a"), 0, check_mode=True)
    assert deploy_metrics.publish(SPEC, _cluster(), state, checking, 1, ssh) is None
    assert deploy_metrics.publish(OFF, _cluster(), state, DeployResult(hosts, Path("/a"), rc=0), 1.0, ssh) is None
    down = [HostResult("mon01", unreachable=1, message="timed out")]
    note = deploy_metrics.publish(SPEC, _cluster(), state, DeployResult(down, Path("/a"), rc=4), 1.0, ssh)
    assert note == "deploy metrics: not written: the monitoring node mon01 is unreachable in this run"
    assert len(ssh.calls) == 1


NODE_OK, NODE_AT = "gpu_provision_deploy_node_ok", "gpu_provision_deploy_node_last_run_timestamp_seconds"


def _deploy(*hosts: tuple[str, str], check: bool = False) -> DeployResult:
    """A run of these hosts only (as --limit gives), each "ok" or "failed"."""
    results = [HostResult(h, ok=3) if how == "ok" else HostResult(h, failed=1, failed_task="t") for h, how in hosts]
    return DeployResult(results, Path("/a"), rc=0 if all(how == "ok" for _, how in hosts) else 2, check_mode=check)


FULL_DEPLOY = _deploy(("ctl01", "ok"), ("mon01", "ok"), ("node001", "ok"), ("node002", "failed"))


def test_a_limited_deploy_keeps_the_other_nodes_series_each_with_the_time_of_its_own_last_run(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    assert deploy_metrics.publish(SPEC, _cluster(), state, FULL_DEPLOY, 1000.0, ssh) is None
    assert deploy_metrics.publish(SPEC, _cluster(), state, _deploy(("node001", "ok")), 2000.0, ssh) is None
    series = _written(ssh)
    assert _by_node(series, NODE_OK) == {"ctl01": 1.0, "mon01": 1.0, "node001": 1.0, "node002": 0.0}
    assert _by_node(series, NODE_AT) == {"ctl01": 1000.0, "mon01": 1000.0, "node001": 2000.0, "node002": 1000.0}
    assert series[("gpu_provision_deploy_ok",)] == 1.0  # the last run's, whatever hosts it had
    assert series[("gpu_provision_deploy_last_run_timestamp_seconds",)] == 2000.0
    assert node_results.read(state)["node002"] == node_results.NodeDeploy(False, 1000.0)


def test_a_retry_that_converges_the_failed_node_clears_it_and_a_node_gone_from_the_cluster_has_no_series(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    deploy_metrics.publish(SPEC, _cluster(computes=3), state, FULL_DEPLOY, 1000.0, ssh)
    deploy_metrics.publish(SPEC, _cluster(computes=1), state, _deploy(("node001", "ok")), 2000.0, ssh)
    series = _written(ssh)
    assert _by_node(series, NODE_OK) == {"ctl01": 1.0, "mon01": 1.0, "node001": 1.0}  # node002, node003 left
    assert set(node_results.read(state)) == {"ctl01", "mon01", "node001"}
    deploy_metrics.publish(SPEC, _cluster(computes=2), state, _deploy(("node002", "ok")), 3000.0, ssh)
    assert _by_node(_written(ssh), NODE_OK) == {"ctl01": 1.0, "mon01": 1.0, "node001": 1.0, "node002": 1.0}


def test_a_check_mode_deploy_records_and_writes_nothing(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    deploy_metrics.publish(SPEC, _cluster(), state, FULL_DEPLOY, 1000.0, ssh)
    before = (state.path / "deploy_nodes.json").read_bytes()
    checking = _deploy(("node002", "ok"), ("node001", "failed"), check=True)
    assert deploy_metrics.publish(SPEC, _cluster(), state, checking, 2000.0, ssh) is None
    assert len(ssh.calls) == 1 and (state.path / "deploy_nodes.json").read_bytes() == before
    empty = _state(tmp_path / "other")
    assert deploy_metrics.publish(SPEC, _cluster(), empty, checking, 2000.0, ssh) is None
    assert empty.read(node_results.DOCUMENT) is None and len(ssh.calls) == 1


def test_a_deploy_is_recorded_with_monitoring_off_and_the_next_file_shows_it(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    assert deploy_metrics.publish(OFF, _cluster(), state, FULL_DEPLOY, 1000.0, ssh) is None
    assert ssh.calls == [] and node_results.read(state)["node002"].ok is False
    deploy_metrics.publish(SPEC, _cluster(), state, _deploy(("node001", "ok")), 2000.0, ssh)
    assert _by_node(_written(ssh), NODE_OK)["node002"] == 0.0


def test_an_unreadable_deploy_record_is_a_note_and_no_file_from_this_run_alone(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    state.ensure()
    (state.path / "deploy_nodes.json").write_text("{not json")
    os.chmod(state.path / "deploy_nodes.json", 0o600)
    note = deploy_metrics.publish(SPEC, _cluster(), state, FULL_DEPLOY, 1000.0, ssh)
    assert note.startswith("deploy metrics: not recorded: state file") and ssh.calls == []


def _certify_report(*nodes: tuple[str, str, float], scope: RunScope = RunScope(),
                    finished: str = "2026-01-01T00:00:09+00:00") -> ClusterReport:
    """A report judging these nodes: (name, slurm.srun's verdict, the node's GEMM figure)."""
    results = tuple(NodeResult(name, (CheckResult("slurm.srun", verdict, node=name),
                                      CheckResult("gpu.gemm_bf16", "pass", node=name, value=figure, unit="TFLOPS")))
                    for name, verdict, figure in nodes)
    return ClusterReport("mon", "quick", "2026-01-01T00:00:00+00:00", finished, results, scope=scope)


WHOLE = _certify_report(("ctl01", "pass", 1.0), ("mon01", "pass", 2.0), ("node001", "pass", 600.0),
                        ("node002", "fail", 300.0), finished="2026-01-01T00:00:10+00:00")
CERTIFY_NODE_OK, CHECK_OK = "gpu_provision_certify_node_ok", "gpu_provision_certify_check_ok"
GEMM = ("gpu_provision_certify_figure", ("check", "gpu.gemm_bf16"), ("node", "node002"), ("unit", "TFLOPS"))


def test_a_partial_certify_replaces_its_judged_nodes_series_and_keeps_the_whole_runs_verdict(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    assert certify_metrics.publish(SPEC, _cluster(), state, WHOLE, ssh) is None
    released = _certify_report(("ctl01", "pass", 1.5), ("node002", "pass", 610.0),
                               ("node001", "fail", 10.0),  # a peer it was measured against: never judged
                               scope=RunScope("partial", ("node002",), ("node001",)),
                               finished="2026-01-02T00:00:00+00:00")
    assert certify_metrics.publish(SPEC, _cluster(), state, released, ssh) is None
    assert len(ssh.calls) == 2
    series = _written(ssh)
    assert _by_node(series, CERTIFY_NODE_OK) == {"ctl01": 1.0, "mon01": 1.0, "node001": 1.0, "node002": 1.0}
    assert series[(CHECK_OK, ("check", "slurm.srun"), ("node", "node002"))] == 1.0
    assert series[GEMM] == 610.0
    assert series[(GEMM[0], ("check", "gpu.gemm_bf16"), ("node", "node001"), ("unit", "TFLOPS"))] == 600.0
    assert series[("gpu_provision_certify_ok",)] == 0.0  # the last whole run's verdict
    assert series[("gpu_provision_certify_last_run_timestamp_seconds",)] == 1767225610.0  # 2026-01-01T00:00:10Z


def test_a_grows_new_node_gets_its_series_from_its_partial_run_and_a_node_removed_loses_them(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    certify_metrics.publish(SPEC, _cluster(), state, WHOLE, ssh)
    grown = _certify_report(("ctl01", "pass", 1.0), ("node003", "pass", 620.0),
                            scope=RunScope("partial", ("node003",), ("node001",)))
    certify_metrics.publish(SPEC, _cluster(computes=3), state, grown, ssh)
    series = _written(ssh)
    assert _by_node(series, CERTIFY_NODE_OK) == {"ctl01": 1.0, "mon01": 1.0, "node001": 1.0, "node002": 0.0,
                                                 "node003": 1.0}
    assert series[("gpu_provision_certify_ok",)] == 0.0
    shrunk = _certify_report(("ctl01", "pass", 1.0), ("node001", "pass", 601.0),
                             scope=RunScope("partial", ("node001",)))
    certify_metrics.publish(SPEC, _cluster(computes=1), state, shrunk, ssh)
    assert set(_by_node(_written(ssh), CERTIFY_NODE_OK)) == {"ctl01", "mon01", "node001"}
    assert set(node_series.CertifySeries.from_dict(state.read(node_series.DOCUMENT)).nodes) == {
        "ctl01", "mon01", "node001"}


def test_a_whole_certify_replaces_every_node_and_the_verdict_and_before_one_there_is_no_cluster_series(tmp_path):
    ssh, state = FakeSsh(), _state(tmp_path)
    partial = _certify_report(("ctl01", "pass", 1.0), ("node001", "pass", 600.0),
                              scope=RunScope("partial", ("node001",)))
    certify_metrics.publish(SPEC, _cluster(), state, partial, ssh)
    assert not any(k[0].startswith("gpu_provision_certify_ok") for k in _written(ssh))
    certify_metrics.publish(SPEC, _cluster(), state, WHOLE, ssh)
    again = _certify_report(("ctl01", "pass", 1.0), ("node001", "pass", 600.0), ("node002", "pass", 605.0))
    certify_metrics.publish(SPEC, _cluster(), state, again, ssh)
    series = _written(ssh)
    assert set(_by_node(series, CERTIFY_NODE_OK)) == {"ctl01", "node001", "node002"}  # mon01 not in this run
    assert series[("gpu_provision_certify_ok",)] == 1.0 and series[GEMM] == 605.0


def test_the_recorded_series_are_state_documents_only_their_owner_reads(tmp_path):
    state = _state(tmp_path)
    deploy_metrics.publish(OFF, _cluster(), state, FULL_DEPLOY, 1000.0, FakeSsh())
    certify_metrics.publish(OFF, _cluster(), state, WHOLE, FakeSsh())
    for name in (node_results.DOCUMENT, node_series.DOCUMENT):
        assert stat.S_IMODE((state.path / f"{name}.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("value, shown", [
    ('a\\b', 'a\\\\b'), ('say "hi"', 'say \\"hi\\"'), ("two\nlines", "two\\nlines"), ("[red]x[/red]", "[red]x[/red]")])
def test_label_values_are_escaped_as_the_exposition_format_wants(value, shown):
    text = render([sample("gpu_provision_deploy_node_ok", 1, node=value)])
    assert text.splitlines()[-1] == f'gpu_provision_deploy_node_ok{{node="{shown}"}} 1'


@pytest.mark.parametrize("name, labels", [
    ("gpu_provision_nothing", {}),
    ("gpu_provision_deploy_node_ok", {}),  # its `node` label missing
    ("gpu_provision_deploy_ok", {"node": "x"}),  # a label the catalogue does not give it
])
def test_a_series_outside_the_catalogue_is_refused(name, labels):
    with pytest.raises(ValueError, match="catalogue"):
        sample(name, 1.0, **labels)


def test_every_name_written_has_its_help_and_type_from_the_catalogue():
    text = render(certify_metrics.samples(certify_run("pass").report))
    for metric in CERTIFY[:4]:
        assert f"# HELP {metric.name} {OURS[metric.name].help}\n# TYPE {metric.name} gauge\n" in text


def test_the_write_command_puts_the_whole_file_in_place_0644_and_leaves_no_temporary_file(tmp_path):
    command = textfiles.write_command("deploy", sudo=False, folder=str(tmp_path))
    done = subprocess.run(["sh", "-c", _unquoted(command)], input=b"a 1\n", capture_output=True)
    assert done.returncode == 0, done.stderr
    assert os.listdir(tmp_path) == [TEXTFILES["deploy"]]
    target = tmp_path / TEXTFILES["deploy"]
    assert target.read_bytes() == b"a 1\n" and stat.S_IMODE(target.stat().st_mode) == 0o644


def test_the_write_command_fails_without_its_folder_and_leaves_the_old_file(tmp_path):
    (tmp_path / TEXTFILES["deploy"]).write_text("old 1\n")
    missing = textfiles.write_command("deploy", sudo=False, folder=str(tmp_path / "missing"))
    done = subprocess.run(["sh", "-c", _unquoted(missing)], input=b"new 1\n", capture_output=True)
    assert done.returncode != 0 and (tmp_path / TEXTFILES["deploy"]).read_text() == "old 1\n"


def _unquoted(command: str) -> str:
    """The script of `sh -c SCRIPT`, as the node's shell receives it."""
    return shlex.split(command)[-1]
