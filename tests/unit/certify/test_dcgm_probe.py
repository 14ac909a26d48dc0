"""DCGM's diagnostic in the node probe: the level it runs at, one check per DCGM test, and every way it can go
wrong (no dcgmi, no GPU, a hang, the host engine down, a runtime error) ending as one dcgm.diag check.

dcgmi is faked at the process boundary: a script on PATH that prints what a real dcgmi would and records
its arguments; the probe code above it is the real one."""
from __future__ import annotations

import json
import re
import sys

import pytest

from provision.certify.probe import dcgm_json as dcgm_parser
from provision.certify.probe import collect, dcgm, system
from provision.certify.probe.expect import NodeExpectation

GPU_NODE = NodeExpectation(node="gpu01", gpu_model="H100-SXM", gpu_count=2)

STUB = """#!{python}
import pathlib, sys, time
pathlib.Path({args!r}).write_text(" ".join(sys.argv[1:]))
time.sleep({sleep})
sys.stdout.write(pathlib.Path({out!r}).read_text())
sys.exit({rc})
"""


@pytest.fixture
def dcgmi(tmp_path, monkeypatch):
    """Install a fake dcgmi: dcgmi(output, rc=0, sleep=0) -> path of the file its arguments land in."""
    def install(output: str, rc: int = 0, sleep: float = 0.0):
        out, args = tmp_path / "out.txt", tmp_path / "args.txt"
        out.write_text(output)
        stub = tmp_path / "bin" / "dcgmi"
        stub.parent.mkdir(exist_ok=True)
        stub.write_text(STUB.format(python=sys.executable, args=str(args), out=str(out), sleep=sleep, rc=rc))
        stub.chmod(0o755)
        monkeypatch.setenv("PATH", f"{stub.parent}:/usr/bin:/bin")
        return args
    return install


def dcgm4(*tests: tuple[str, str, list[dict]]) -> str:
    """A DCGM 4.x document: (category, name, results) per test, results as dcgmi writes them."""
    categories: dict[str, list] = {}
    for category, name, results in tests:
        worst = "Fail" if any(r["status"] == "Fail" for r in results) else results[0]["status"]
        categories.setdefault(category, []).append({"name": name, "results": results,
                                                    "test_summary": {"status": worst}})
    return json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": c, "tests": t}
                                                               for c, t in categories.items()]},
                       "metadata": {"version": "4.2.3", "Driver Version Detected": "570.148.08"}}, indent=3)


def gpu(index: int, status: str, warning: str | None = None, info: str | None = None) -> dict:
    result = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": index, "status": status}
    if warning:
        result["warnings"] = [{"warning": warning, "error_id": 95, "error_category": 6, "error_severity": 2}]
    if info:
        result["info"] = [info]
    return result


MEMORY_FAULT = dcgm4(("Deployment", "software", [gpu(0, "Pass"), gpu(1, "Pass")]),
                     ("Hardware", "memory", [gpu(0, "Pass"), gpu(1, "Fail", "DCGM_FR_FAULTY_MEMORY: GPU 1 has 12 "
                                                                      "uncorrectable memory errors")]),
                     ("Integration", "pcie", [gpu(0, "Warn", "PCIe replay rate 9 exceeds 8"), gpu(1, "Pass")]),
                     ("Stress", "targeted_power", [gpu(0, "Skip", info="Plugin is not allowed on this SKU"),
                                                   gpu(1, "Skip", info="Plugin is not allowed on this SKU")]))


def test_each_dcgm_test_is_a_check_of_its_own_with_dcgms_verdict_and_message():
    checks = {c.check: c for c in dcgm.judge_output(MEMORY_FAULT, "gpu01", "standard")}
    assert {k: c.verdict for k, c in checks.items()} == {"dcgm.software": "pass", "dcgm.memory": "fail",
                                                          "dcgm.pcie": "warn", "dcgm.targeted_power": "na"}
    memory = checks["dcgm.memory"]
    assert memory.subject == "GPU1" and "12 uncorrectable memory errors" in memory.detail
    assert memory.source == "dcgmi diag -r 2 (DCGM 4.2.3)" and memory.node == "gpu01"
    assert "not allowed on this SKU" in checks["dcgm.targeted_power"].detail
    assert checks["dcgm.software"].detail == "passed on GPU0, GPU1"


def test_dcgm_3x_display_names_become_the_4x_check_ids():
    doc = {"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Hardware", "tests": [
            {"name": "GPU Memory", "results": [{"gpu_id": "0", "status": "Fail",
                                                "warnings": "Error using CUDA API cudaMalloc"}]},
            {"name": "Diagnostic", "results": [{"gpu_id": "0", "status": "Pass"}]}]},
        {"category": "Integration", "tests": [{"name": "PCIe", "results": [{"gpu_id": "0", "status": "Pass"}]}]},
        {"category": "Stress", "tests": [{"name": "Targeted Stress", "results": [{"gpu_id": "0", "status": "Warn"}]},
                                         {"name": "EUD Test", "results": [{"gpu_id": "0", "status": "Not Run"}]}]}]},
        "version": "3.3.7"}
    checks = {c.check: c for c in dcgm.judge_output(json.dumps(doc), "gpu01", "full")}
    assert {k: c.verdict for k, c in checks.items()} == {"dcgm.memory": "fail", "dcgm.diagnostic": "pass",
                                                          "dcgm.pcie": "pass", "dcgm.targeted_stress": "warn",
                                                          "dcgm.eud": "na"}
    assert "cudaMalloc" in checks["dcgm.memory"].detail and checks["dcgm.memory"].source.endswith("(DCGM 3.3.7)")


NAMES = [("GPU Memory", "memory"), ("memory", "memory"), ("Targeted Power", "targeted_power"),
         ("Permissions and OS-related Blocks", "permissions_and_os_blocks"), ("Blacklist", "denylist"),
         ("EUD Test", "eud"), ("C2C", "c2c"), ("???", "unnamed")]


@pytest.mark.parametrize("name, key", NAMES)
def test_test_names_become_check_ids_the_report_schema_accepts(name, key):
    assert dcgm_parser.normalise(name) == key
    assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", f"dcgm.{key}")


@pytest.mark.parametrize("level, run_level", [("quick", "1"), ("standard", "2"), ("full", "3")])
def test_the_run_level_follows_the_probe_level_and_output_is_json(dcgmi, level, run_level):
    args = dcgmi(MEMORY_FAULT, rc=226)  # dcgmi exits non-zero when a test fails; the document still counts
    checks = dcgm.run(GPU_NODE, level, has_gpus=True)
    assert args.read_text() == f"diag -r {run_level} -j"
    assert {c.check for c in checks} == {"dcgm.software", "dcgm.memory", "dcgm.pcie", "dcgm.targeted_power"}


def test_each_level_fits_in_the_time_the_runner_gives_the_probe():
    from provision.certify.control import run as runner
    assert all(dcgm.TIMEOUT_S[level] < runner.PROBE_TIMEOUT_S[level] for level in dcgm.RUN_LEVEL)


def test_without_dcgmi_one_na_check_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert [(c.check, c.verdict, c.detail) for c in dcgm.run(GPU_NODE, "standard", has_gpus=True)] == [
        ("dcgm.diag", "na", "dcgmi not installed")]


def test_a_node_without_gpus_is_not_diagnosed(dcgmi):
    args = dcgmi(MEMORY_FAULT)
    checks = dcgm.run(NodeExpectation(node="ctl01"), "standard", has_gpus=False)
    assert [(c.check, c.verdict, c.detail) for c in checks] == [("dcgm.diag", "na", "no GPU on this node")]
    assert not args.exists()


def test_a_hung_diagnostic_fails_after_its_timeout(dcgmi, monkeypatch):
    dcgmi(MEMORY_FAULT, sleep=5)
    monkeypatch.setitem(dcgm.TIMEOUT_S, "quick", 0.5)
    (check,) = dcgm.run(GPU_NODE, "quick", has_gpus=True)
    assert check.verdict == "fail" and "did not finish within 0.5 s" in check.detail


def test_host_engine_down_fails_and_quotes_dcgmi(dcgmi):
    dcgmi("Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n", rc=255)
    (check,) = dcgm.run(GPU_NODE, "standard", has_gpus=True)
    assert (check.check, check.verdict) == ("dcgm.diag", "fail")
    assert "'Error: Unable to connect to host engine." in check.detail and "(exit 255)" in check.detail


def test_a_dcgm_runtime_error_fails_the_run_check():
    doc = {"DCGM Diagnostic": {"runtime_error": "The nvvs binary was not found in the specified location"},
           "metadata": {"version": "4.0.0"}}
    (check,) = dcgm.judge_output(json.dumps(doc), "gpu01", "quick")
    assert check.verdict == "fail" and "nvvs binary was not found" in check.detail


def test_probe_runs_dcgm_after_the_benchmark_and_before_the_xid_read(fake, dcgmi, monkeypatch, tmp_path):
    fake()
    dcgmi(MEMORY_FAULT)
    monkeypatch.setattr(system, "KERNEL_LOG_COMMANDS", (("echo", "no xids"),))
    doc = collect.run(NodeExpectation(node="gpu01", gpu_model="H100-SXM", gpu_count=1), "quick").to_dict()
    order = [c["check"] for c in doc["checks"]]
    assert order.index("gpu.bench") < order.index("dcgm.memory") < order.index("gpu.xid")
    assert next(c for c in doc["checks"] if c["check"] == "dcgm.memory")["verdict"] == "fail"


def test_a_4x_summary_message_no_gpu_carries_reaches_the_detail_once():
    doc = json.loads(dcgm4(("Integration", "nvbandwidth", [gpu(0, "Pass"), gpu(1, "Fail", "GPU 1 copy engine error")])))
    test = doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]
    test["test_summary"] = {"status": "Fail", "warnings": [
        {"warning": "GPU 1 copy engine error", "error_id": 1, "error_category": 1, "error_severity": 2},
        {"warning": "MCUTIL > 10% before the test", "error_id": 2, "error_category": 1, "error_severity": 2}]}
    (check,) = dcgm.judge_output(json.dumps(doc), "gpu01", "full")
    assert check.verdict == "fail" and check.subject == "GPU1"
    assert check.detail.count("copy engine error") == 1 and "MCUTIL > 10% before the test" in check.detail
