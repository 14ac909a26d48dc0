"""Active checks (provision.certify.probe.nodehealth.active and .measure) against stand-in scontrol, srun and iperf3:
where a pass runs by the node's state, a figure below its floor measured again before it fails, the drain reason
naming the check and the figure, and a pass resuming only the active checks' own drain. The real program runs on
sandbox nodes in tests/e2e/test_health.py."""
from __future__ import annotations

import json
import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from provision.certify.parsers import iperf3 as control_iperf3
from provision.certify.probe.metrics.catalogue import TEXTFILES
from provision.certify.probe.nodehealth import active, measure, reason
from provision.certify.probe.nodehealth.config import ActiveConfig, HealthConfig
from provision.certify.probe.nodehealth.slurm import NodeState
from provision.certify.probe.parse_errors import ParseError

from test_nodehealth import FAKE_SCONTROL, StandIn, _script

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PEERS = (("compute01", "10.0.0.11"), ("compute02", "10.0.0.12"), ("compute03", "10.0.0.13"),
         ("compute04", "10.0.0.14"), ("compute05", "10.0.0.15"))
# iperf3 -J stand-in: the figure (Gb/s) of each address comes from rates.json ("*": any other address), "busy" for a
# server running a test; with a list, each call takes the next figure (the last one repeats)
FAKE_IPERF3 = """#!{python}
import json, sys
from pathlib import Path
here = Path(__file__).parent
rates = json.loads((here / "rates.json").read_text())
address = sys.argv[sys.argv.index("-c") + 1]
(here / "iperf3.log").open("a").write(address + (" -R" if "-R" in sys.argv else "") + "\\n")
key = address if address in rates else "*"
rate = rates.get(key, 1.0)
if isinstance(rate, list):
    rate = rate.pop(0) if len(rate) > 1 else rate[0]
    (here / "rates.json").write_text(json.dumps(rates))
if rate == "busy":
    print(json.dumps({{"start": {{}}, "error": "error - the server is busy running a test. try again later"}}))
    sys.exit(1)
if rate in ("refused", "timeout"):
    said = {{"refused": "Connection refused", "timeout": "Connection timed out"}}[rate]
    print(json.dumps({{"start": {{}}, "error": "error - unable to connect to server: " + said}}))
    sys.exit(1)
print(json.dumps({{"end": {{"sum_received": {{"bits_per_second": rate * 1e9}}}}}}))
"""
# srun stand-in: prints the document in job.json (a job of the active partition) or fails as a preempted job does
FAKE_SRUN = """#!/bin/sh
here=$(dirname "$0")
echo "$@" >> "$here/srun.log"
if [ -e "$here/preempt" ]; then
  echo "srun: error: compute01: task 0: Terminated" >&2
  echo "srun: Force Terminated StepId=12.0" >&2
  exit 143
fi
cat "$here/job.json"
"""


@pytest.fixture
def node(tmp_path: Path):
    """compute01 with stand-in scontrol (its state in node.json), srun and iperf3."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node.json").write_text(json.dumps({"state": "IDLE", "reason": ""}))
    (bin_dir / "rates.json").write_text("{}")
    (bin_dir / "job.json").write_text(json.dumps({"node": "compute01", "checks": []}))
    commands = {"scontrol": _script(bin_dir / "scontrol", FAKE_SCONTROL.format(python=sys.executable)),
                "srun": _script(bin_dir / "srun", FAKE_SRUN),
                "iperf3": _script(bin_dir / "iperf3", FAKE_IPERF3.format(python=sys.executable))}
    cfg = HealthConfig(node="compute01", state_dir=tmp_path / "state", slurmd=False, commands=commands,
                       active=ActiveConfig(interval_s=60, peers=PEERS, count=3, net_min_gbps=0.25))

    class Node(StandIn):
        def rates(self, **by_address) -> None:
            (bin_dir / "rates.json").write_text(json.dumps(by_address))

        def job(self, checks: list[dict]) -> None:
            (bin_dir / "job.json").write_text("srun: job 12 queued and waiting for resources\n"
                                              + json.dumps({"node": "compute01", "checks": checks}) + "\n")

        def log(self, name: str) -> list[str]:
            path = bin_dir / name
            return path.read_text().splitlines() if path.exists() else []

    return Node(cfg, bin_dir)


def _slow_net(value: float = 0.019) -> dict:
    return {"check": "active.net", "verdict": "fail", "node": "compute01", "subject": None, "value": value,
            "unit": "Gb/s", "detail": f"confirmed: {value} then {value} Gb/s (floor 0.25)"}


# where a pass runs

@pytest.mark.parametrize("state, own, where", [
    ("IDLE", "", "job"),
    ("IDLE+DRAIN", reason.active_text([("active.net", "slow")]), "direct"),
    ("IDLE+DRAIN", "admin: bad fan", "skipped"),
    ("IDLE+DRAIN", "hc:munge: down (gpu-provision-health)", "skipped"),
    ("MIXED", "", "skipped"),
    ("ALLOCATED", "", "skipped"),
    ("IDLE+RESERVED", "", "skipped"),
    ("MIXED+DRAIN", reason.active_text([("active.net", "slow")]), "skipped"),  # a job still runs there
    ("DOWN", "", "skipped"),
])
def test_a_pass_runs_in_a_job_on_an_idle_node_directly_on_its_own_drain_and_nowhere_else(state, own, where):
    found, why = active.placement(NodeState(state, own))
    assert found == where
    assert (why == "") == (where != "skipped")
    if where == "skipped":
        assert ("someone else" in why and own in why) if "DRAIN" in state and state.startswith("IDLE") else state in why


def test_the_job_is_one_exclusive_node_of_the_hidden_partition_placed_at_once_or_not_at_all(node):
    argv = active.job_argv(node.cfg, Path("/etc/gpu-provision/health.json"))
    assert argv[0] == node.cfg.commands["srun"]
    assert {"--partition=gp-active", "--nodelist=compute01", "--nodes=1", "--exclusive", "--immediate=10",
            "--time=5"} <= set(argv)
    assert argv[-3:] == ["--config", "/etc/gpu-provision/health.json", "--measure"]


def test_a_pass_is_due_once_its_interval_has_passed(node):
    assert active.due(node.cfg, 1000.0)  # never ran
    (node.cfg.state_dir).mkdir(parents=True)
    (node.cfg.state_dir / active.STARTED).write_text("1000.0\n")
    assert not active.due(node.cfg, 1059.0)
    assert active.due(node.cfg, 1060.0)
    assert active.due(node.cfg, 900.0)  # the clock went back: not stuck for ever


# confirmation

def _figures(*values):
    found = iter(values)
    return lambda attempt: measure.Figure(next(found), over=f"attempt {attempt}")


def test_a_figure_above_its_floor_passes_measured_once():
    calls = []
    check = measure.confirmed_check("active.x", "n1", "GB/s", 1.0, lambda a: calls.append(a) or measure.Figure(2.0))
    assert (check.verdict, check.value, calls) == ("pass", 2.0, [0])


def test_below_once_then_above_is_a_warning_naming_both_figures():
    check = measure.confirmed_check("active.x", "n1", "Gb/s", 0.25, _figures(0.1, 0.9))
    assert check.verdict == "warn" and check.value == 0.9
    assert check.detail.startswith("not confirmed: 0.1 then 0.9 Gb/s (floor 0.25)")


def test_below_twice_fails_confirmed_with_both_figures_and_no_figure_twice_fails_with_the_error():
    check = measure.confirmed_check("active.x", "n1", "Gb/s", 0.25, _figures(0.0192, 0.0191))
    assert (check.verdict, check.value) == ("fail", 0.0192)
    assert check.detail.startswith("confirmed: 0.0192 then 0.0191 Gb/s (floor 0.25)")
    gone = measure.confirmed_check("active.x", "n1", "Gb/s", 0.25,
                             lambda a: measure.Figure(None, error="every peer refused the connection"))
    assert gone.verdict == "fail" and gone.value is None
    assert "no figure then no figure" in gone.detail and "refused" in gone.detail


# the network

def test_the_node_is_judged_by_the_median_of_all_its_links_not_one_slow_peer(node):
    node.rates(**{"10.0.0.12": 0.02})  # one peer slow, the others 1 Gb/s
    check = measure.network(node.cfg, node.cfg.active, random.Random(1))
    assert check.verdict == "pass" and check.value == 1.0
    assert "of 6 directions" in check.detail


def test_a_slow_node_fails_confirmed_and_is_measured_again_with_other_peers(node):
    node.rates(**{a: 0.019 for _, a in PEERS})
    check = measure.network(node.cfg, node.cfg.active, random.Random(1))
    assert check.verdict == "fail" and check.value == 0.019
    assert check.detail.startswith("confirmed: 0.019 then 0.019 Gb/s (floor 0.25)")
    targets = [line.split()[0] for line in node.log("iperf3.log")]
    first, again = set(targets[:6]), set(targets[6:])
    assert len(first) == 3 and "10.0.0.11" not in first  # never itself
    assert again - first  # the second look takes in the peers not measured the first time


def test_a_moment_of_slowness_is_a_warning_not_a_fail(node):
    node.rates(**{"*": [0.05] * 6 + [0.95]})  # the first look's six directions slow, then fast again
    check = measure.network(node.cfg, node.cfg.active, random.Random(2))
    assert check.verdict == "warn" and check.detail.startswith("not confirmed: 0.05 then 0.95 Gb/s")


def test_a_busy_peer_is_replaced_by_the_next(node):
    node.rates(**{"10.0.0.12": "busy", "10.0.0.13": "busy"})
    check = measure.network(node.cfg, node.cfg.active, random.Random(3))
    assert check.verdict == "pass"
    assert check.detail.endswith(" to compute04, compute05") or check.detail.endswith(" to compute05, compute04")


def test_a_node_that_reaches_no_peer_fails(node):
    node.rates(**{a: "timeout" for _, a in PEERS})
    check = measure.network(node.cfg, node.cfg.active, random.Random(4))
    assert check.verdict == "fail" and "Connection timed out" in check.detail


@pytest.mark.parametrize("why", ["refused", "busy"])
def test_peers_without_a_server_or_busy_are_no_fault_of_the_node(node, why):
    node.rates(**{"*": why})  # their servers not started yet (a deploy in progress), or each running another pass
    check = measure.network(node.cfg, node.cfg.active, random.Random(5))
    assert check.verdict == "warn" and check.detail.startswith("not measured: no peer could be measured")
    assert len(node.log("iperf3.log")) == 8  # every peer tried once each way, nothing measured again


def test_a_single_node_has_no_link_to_judge(node):
    cfg = HealthConfig(node="compute01", active=ActiveConfig(interval_s=60, peers=PEERS[:1]))
    assert measure.network(cfg, cfg.active, random.Random()).verdict == "na"


@pytest.mark.parametrize("path", sorted((FIXTURES / "corpus" / "iperf3").glob("*.json"))
                         + sorted((FIXTURES / "certify").glob("iperf3_*.json")), ids=lambda p: p.name)
def test_the_node_side_iperf3_reading_agrees_with_certify_s_parser(path):
    text = path.read_text()
    value, why = measure.parse_iperf3(text, 0)
    try:
        expected = control_iperf3.parse(text).received_gbps
    except ParseError:
        assert value is None and why
        return
    assert value == pytest.approx(expected)


def test_memory_and_filesystem_are_measured_and_judged(tmp_path):
    cfg = HealthConfig(node="n1", mounts=(str(tmp_path),),
                       active=ActiveConfig(interval_s=60, floors={"active.memory_bw": 0.01, "active.fs": 0.01}))
    memory = measure.memory(cfg, cfg.active)
    assert memory.verdict == "pass" and memory.value > 0.01
    (fs_check,) = measure.filesystems(cfg, cfg.active)
    assert fs_check.verdict == "pass" and fs_check.subject == str(tmp_path) and "write" in fs_check.detail
    assert not any(tmp_path.rglob("*.bin"))  # its files are gone
    broken = HealthConfig(node="n1", mounts=(str(tmp_path / "missing" / "x"),), active=cfg.active)
    (tmp_path / "missing").write_text("a file where a folder should be")
    (failed,) = measure.filesystems(broken, broken.active)
    assert failed.verdict == "fail" and failed.detail.startswith("confirmed: no figure then no figure")


# a whole pass: where it runs, what it tells Slurm

def test_a_confirmed_failure_in_the_job_drains_the_node_naming_the_check_and_figure(node):
    node.job([_slow_net()])
    record = active.one_pass(node.cfg, Path("/etc/x.json"))
    assert record.where == "job" and record.action == "drained"
    slurm = node.slurm()
    assert slurm["state"] == "IDLE+DRAIN"
    assert slurm["reason"].startswith("ac:net: confirmed: 0.019 then 0.019 Gb/s (floor 0.25)")
    assert reason.is_active(slurm["reason"]) and not reason.is_own(slurm["reason"])  # the passive program's: no
    assert node.log("srun.log") and "--partition=gp-active" in node.log("srun.log")[0]
    assert json.loads((node.cfg.state_dir / active.STATE).read_text())["action"] == "drained"


def test_a_drained_node_is_measured_directly_and_returned_when_it_passes(node):
    node.set(state="IDLE+DRAIN", reason=reason.active_text([("active.net", "slow")]))
    node.rates()  # every peer 1 Gb/s again
    record = active.one_pass(node.cfg, Path("/etc/x.json"))
    assert record.where == "direct" and record.action == "resumed"
    assert node.slurm()["state"] == "IDLE" and not node.log("srun.log")  # no job on a drained node
    assert {c["check"] for c in record.checks} >= {"active.net", "active.memory_bw"}


def test_still_failing_keeps_the_node_drained_with_a_fresh_reason(node):
    node.set(state="IDLE+DRAIN", reason=reason.active_text([("active.net", "slow")]))
    node.rates(**{a: 0.02 for _, a in PEERS})
    record = active.one_pass(node.cfg, Path("/etc/x.json"))
    assert record.where == "direct" and record.action == "drained"
    assert node.slurm()["reason"].startswith("ac:net: confirmed: 0.02 then 0.02")


def test_another_s_drain_is_never_measured_or_resumed(node):
    node.set(state="IDLE+DRAIN", reason="admin: bad fan")
    record = active.one_pass(node.cfg, Path("/etc/x.json"))
    assert record.where == "skipped" and "admin: bad fan" in record.why and record.action == "none"
    assert node.slurm()["reason"] == "admin: bad fan" and not node.log("iperf3.log")


def test_a_preempted_job_leaves_no_verdict_and_changes_nothing(node):
    (node.bin / "preempt").write_text("")
    record = active.one_pass(node.cfg, Path("/etc/x.json"))
    assert record.where == "job" and record.checks == [] and record.action == "none"
    assert record.why.startswith("no verdict") and "Terminated" in record.why
    assert node.slurm()["state"] == "IDLE"


def test_a_measured_pass_writes_the_active_textfile_and_one_without_verdict_keeps_it(node, tmp_path):
    from exposition import parse
    metrics = tmp_path / "node-exporter"
    metrics.mkdir()
    cfg = replace(node.cfg, metrics_dir=metrics)
    node.job([_slow_net()])
    assert active.one_pass(cfg, Path("/etc/x.json")).metrics == ""
    text = (metrics / TEXTFILES["active"]).read_text()
    series = {(name, tuple(sorted(labels.items()))): value for name, labels, value in parse(text)}
    assert series[("gpu_provision_active_check_ok", (("check", "active.net"),))] == 0
    assert series[("gpu_provision_active_check_value", (("check", "active.net"), ("unit", "Gb/s")))] == 0.019
    node.set(state="IDLE")
    (node.bin / "preempt").write_text("")
    assert active.one_pass(cfg, Path("/etc/x.json")).checks == []
    assert (metrics / TEXTFILES["active"]).read_text() == text


def test_a_drain_that_came_while_the_job_ran_is_left_alone(node):
    node.job([_slow_net()])
    node.set(state="IDLE")
    real_node = active.Slurm.node
    calls = []

    def drained_meanwhile(self):
        calls.append(1)
        if len(calls) == 2:
            node.set(state="IDLE+DRAIN", reason="admin: swap the NIC")
        return real_node(self)
    active.Slurm.node = drained_meanwhile
    try:
        record = active.one_pass(node.cfg, Path("/etc/x.json"))
    finally:
        active.Slurm.node = real_node
    assert record.action == "left alone" and node.slurm()["reason"] == "admin: swap the NIC"


def test_the_health_config_carries_the_active_section_and_refuses_a_bad_one():
    from provision.certify.probe.nodehealth.config import HealthConfig as Config
    cfg = Config.from_dict({"node": "c1", "active": {"interval_s": 30, "peers": [["c2", "10.0.0.2"]],
                                                     "floors": {"active.fs": 5}, "bitrate": "1G"}})
    assert cfg.active.peers == (("c2", "10.0.0.2"),) and cfg.active.floors == {"active.fs": 5.0}
    assert Config.from_dict({"node": "c1", "active": None}).active is None
    with pytest.raises(ValueError, match="active.peers"):
        Config.from_dict({"node": "c1", "active": {"interval_s": 30, "peers": ["c2"]}})


# GPU nodes (stand-ins: no GPU here; the real gpubench and dcgmi run in certify's probe on a GPU machine)

H200_RESULT = json.loads((FIXTURES / "certify" / "h200" / "probe_standard_root.json").read_text())["gpubench"][
    "results"]["0"]
FAKE_GPUBENCH = """#!{python}
import json, os, sys
result = json.loads({result!r})
scale = float(open({scale!r}).read()) if os.path.exists({scale!r}) else 1.0
result["device"] = int(sys.argv[sys.argv.index("--device") + 1])
result["gemm_bf16"]["tflops"] = round(result["gemm_bf16"]["tflops"] * scale, 2)
print(json.dumps(result))
"""


def _gpu_node(tmp_path: Path, dcgm_output: Path | None = None) -> HealthConfig:
    from provision.certify.probe.nodehealth.config import GpuExpectation
    bench = _script(tmp_path / "gpubench", FAKE_GPUBENCH.format(python=sys.executable, result=json.dumps(H200_RESULT),
                                                                scale=str(tmp_path / "scale")))
    dcgmi = _script(tmp_path / "dcgmi", f"#!/bin/sh\ncat {dcgm_output}\n") if dcgm_output else "/nonexistent/dcgmi"
    return HealthConfig(node="gpu01", gpu=GpuExpectation("H200-SXM", 2),
                        commands={"gpubench": bench, "dcgmi": dcgmi},
                        active=ActiveConfig(interval_s=60, floors={"gpu.gemm_bf16": 675.3}))


def test_each_gpu_s_gemm_is_judged_against_its_model_s_floor_and_a_slow_one_confirmed(tmp_path):
    cfg = _gpu_node(tmp_path)
    checks = measure.gpu_checks(cfg, cfg.active)
    gemm = [c for c in checks if c.check == "active.gpu_gemm"]
    assert [(c.subject, c.verdict, c.value) for c in gemm] == [("gpu0", "pass", 824.62), ("gpu1", "pass", 824.62)]
    assert [c.verdict for c in checks if c.check == "active.dcgm"] == ["na"]  # dcgmi missing: not judged
    (tmp_path / "scale").write_text("0.5")  # a throttling GPU: half its GEMM, both times
    slow = [c for c in measure.gpu_checks(cfg, cfg.active) if c.check == "active.gpu_gemm"]
    assert {c.verdict for c in slow} == {"fail"}
    assert slow[0].detail.startswith("confirmed: 412 then 412 TFLOP/s (floor 675.3)")


def test_dcgm_s_verdicts_are_the_probe_s_under_the_active_namespace(tmp_path):
    recorded = FIXTURES / "corpus" / "dcgm" / "dcgm4_layout_derived_from_nvvs_3_1_0.json"
    cfg = _gpu_node(tmp_path, recorded)
    found = [c for c in measure.gpu_checks(cfg, cfg.active) if c.check.startswith("active.dcgm")]
    from provision.certify.probe import dcgm
    expected = dcgm.judge_output(recorded.read_text(), "gpu01", "quick")
    assert [(c.check, c.verdict) for c in found] == [(f"active.{c.check}", c.verdict) for c in expected]
    assert found and all(c.check.startswith("active.dcgm.") for c in found)
