"""The node-side probe: one JSON document, n/a without NVML, benchmarks under load, filesystem checksums."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import certify_fake_nvml as fakes
import pytest

from provision.certify.probe import bench, collect, fs, system
from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.expect import NodeExpectation

REPO = Path(__file__).resolve().parents[3]


def run_probe(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "provision.certify.probe", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_probe_imports_only_the_standard_library_and_pynvml():
    code = textwrap.dedent("""
        import sys
        before = set(sys.modules)  # what the interpreter and site hooks loaded already
        import provision.certify.probe.__main__
        allowed = set(sys.stdlib_module_names) | {"provision", "pynvml"}
        print(sorted({m.split(".")[0] for m in set(sys.modules) - before} - allowed))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "[]"


def test_probe_without_nvml_prints_one_document_with_gpu_checks_na(tmp_path):
    expect = {"node": "login01", "fs_mount": str(tmp_path), "fs_size_mib": 8, "run_id": "r1"}
    done = run_probe("--level", "quick", "--expect-json", json.dumps(expect))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    doc = json.loads(lines[0])
    assert doc["node"] == "login01" and doc["mode"] == "probe" and doc["level"] == "quick"
    checks = {c["check"]: c for c in doc["checks"]}
    if not doc["nvml"]["available"]:  # this machine has no GPU: every GPU check is n/a and says why
        assert checks["gpu.nvml"]["verdict"] == "na" and doc["nvml"]["reason"] in checks["gpu.nvml"]["detail"]
        assert checks["gpu.bench"]["verdict"] == "na" and checks["gpu.xid"]["verdict"] == "na"
    assert checks["fs.write"]["verdict"] == "pass" and checks["fs.readback"]["verdict"] == "pass"
    assert {m["metric"] for m in doc["measurements"]} >= {"fs.write_bw", "fs.read_bw"}


def test_bench_again_runs_only_the_gpu_benchmarks_and_says_so(tmp_path):
    expect = {"node": "g1", "fs_mount": str(tmp_path), "fs_size_mib": 8, "run_id": "r1"}
    done = run_probe("--bench-again", "--level", "standard", "--expect-json", json.dumps(expect))
    assert done.returncode == 0, done.stderr
    doc = ProbeDocument.from_dict(json.loads(done.stdout))
    assert doc.mode == "bench" and doc.node == "g1" and doc.current_version and doc.fs is None
    assert [c.check for c in doc.checks] == ["gpu.bench"]  # no health, Xid, RDMA or filesystem checks
    assert not list(tmp_path.iterdir())  # the shared filesystem is not written again
    if not doc.gpubench:  # this machine has no GPU: n/a, no figure
        assert doc.checks[0].verdict == "na" and doc.measurements == ()


def test_probe_rejects_bad_expectation_with_the_field_named():
    done = run_probe("--expect-json", json.dumps({"node": "n1", "gpu_count": "eight"}))
    assert done.returncode == 2
    assert "expectation.gpu_count" in json.loads(done.stdout)["error"]
    done = run_probe("--expect-json", json.dumps({"node": "n1", "gpus": 8}))
    assert done.returncode == 2 and "expectation.gpus: unknown key" in json.loads(done.stdout)["error"]
    done = run_probe("--expect-json", "{not json")
    assert done.returncode == 2 and "not valid JSON" in json.loads(done.stdout)["error"]


def test_expectation_from_file(tmp_path):
    path = tmp_path / "expect.json"
    path.write_text(json.dumps({"node": "n9"}))
    done = run_probe("--expect-json", f"@{path}")
    assert done.returncode == 0 and json.loads(done.stdout)["node"] == "n9"


def test_filesystem_checksums_agree_across_writers_and_detect_corruption(tmp_path):
    for node in ("n1", "n2"):
        assert fs.write_and_read(str(tmp_path), node, "run7", 9)["error"] is None
    report = fs.verify(str(tmp_path), "run7")
    assert set(report["files"]) == {"n1", "n2"} and all(f["ok"] for f in report["files"].values())
    target = fs.run_dir(str(tmp_path), "run7") / "n2.bin"
    data = bytearray(target.read_bytes())
    data[12345] ^= 0xFF
    target.write_bytes(bytes(data))
    report = fs.verify(str(tmp_path), "run7")
    assert report["files"]["n1"]["ok"] and not report["files"]["n2"]["ok"]


def test_filesystem_content_differs_per_node_and_run():
    first = next(fs.blocks("n1", "r", 4))
    assert first != next(fs.blocks("n2", "r", 4)) and first != next(fs.blocks("n1", "s", 4))
    assert sum(len(b) for b in fs.blocks("n1", "r", 9)) == 9 * 1024 * 1024


def test_unwritable_mount_fails_the_fs_check(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = fs.write_and_read(str(blocker), "n1", "r", 1)
    assert result["error"]


GPUBENCH_STUB = """#!{python}
# Stands in for the compiled gpubench at the process boundary: same arguments, same JSON shape.
import json, sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
dev = int(args["--device"])
tests = args["--tests"].split(",")
time.sleep(0.3)
doc = {{"tool": "gpubench", "version": 1, "device": dev, "name": "stub", "error": None}}
if "gemm" in tests:
    doc["gemm_bf16"] = {{"tflops": 790.0 - 100 * dev, "m": 8192, "n": 8192, "k": 8192}}
if "copy" in tests:
    doc["copy"] = {{"gb_per_s": 2900.0, "counts": "bytes read + bytes written"}}
if "h2d" in tests:
    doc["h2d"] = {{"gb_per_s": 53.0}}
    doc["d2h"] = {{"gb_per_s": 52.0}}
print(json.dumps(doc))
"""


@pytest.fixture
def gpubench_stub(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "SAMPLE_INTERVAL_S", 0.1)
    path = tmp_path / "gpubench"
    path.write_text(GPUBENCH_STUB.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def quiet_node(monkeypatch, fixtures_dir, tmp_path):
    """Kernel log from a fixture, an RDMA sysfs tree with one active NDR port."""
    monkeypatch.setattr(system, "KERNEL_LOG_COMMANDS", (("cat", str(fixtures_dir / "xid_old_driver_format.txt")),))
    port = tmp_path / "sys" / "mlx5_0" / "ports" / "1"
    port.mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    (port / "link_layer").write_text("InfiniBand\n")
    monkeypatch.setattr(system, "SYSFS_INFINIBAND", tmp_path / "sys")
    monkeypatch.setattr(system.rdma_ports, "__defaults__", (tmp_path / "sys",))


def test_standard_level_benchmarks_every_gpu_under_sampled_load(fake, gpubench_stub, quiet_node):
    nv = fake([fakes.FakeGpu(), fakes.FakeGpu(bus_id="00000000:01:00.0")])
    expect = NodeExpectation(node="gpu01", gpu_model="H100-SXM", gpu_count=2, driver_branch=570, cuda_version="12.8",
                             interconnect="infiniband", interconnect_nics=1)
    doc = collect.run(expect, "standard", gpubench=gpubench_stub).to_dict()
    checks = {(c["check"], c["subject"]): c for c in doc["checks"]}
    assert checks[("gpu.bench", None)]["verdict"] == "pass"
    assert "under load" in checks[("gpu.pcie.link", "gpu0")]["source"]
    assert nv.calls["nvmlDeviceGetCurrentClocksEventReasons"] > 4  # two snapshots plus live samples
    gemm = {m["subject"]: m for m in doc["measurements"] if m["metric"] == "gpu.gemm_bf16"}
    assert gemm["gpu0"]["value"] == 790.0 and gemm["gpu1"]["value"] == 690.0
    assert gemm["gpu0"]["context"] == {"gpu_model": "H100-SXM", "pcie_gen": 5, "pcie_width": 16}
    assert {m["metric"] for m in doc["measurements"]} >= {"gpu.copy_bw", "gpu.h2d_bw", "gpu.d2h_bw"}
    # kernel log (old-format Xids on 0000:01:00, which is gpu1) and the RDMA port
    assert checks[("gpu.xid", None)]["verdict"] == "warn" and "gpu1" in checks[("gpu.xid", None)]["detail"]
    assert checks[("net.rdma.ports", None)]["verdict"] == "pass" and doc["rdma"][0]["rate_gbps"] == 400.0


def test_quick_level_runs_no_benchmark(fake, gpubench_stub, quiet_node):
    fake()
    doc = collect.run(NodeExpectation(node="gpu01", gpu_model="H100-SXM", gpu_count=1), "quick",
                      gpubench=gpubench_stub).to_dict()
    bench = next(c for c in doc["checks"] if c["check"] == "gpu.bench")
    assert bench["verdict"] == "na" and doc["measurements"] == []


def test_missing_benchmark_binary_fails_a_gpu_node(fake, quiet_node, tmp_path):
    fake()
    doc = collect.run(NodeExpectation(node="gpu01", gpu_model="H100-SXM", gpu_count=1), "standard",
                      gpubench=str(tmp_path / "absent")).to_dict()
    bench = next(c for c in doc["checks"] if c["check"] == "gpu.bench")
    assert bench["verdict"] == "fail" and "not found" in bench["detail"]


def test_missing_rdma_ports_fail_a_fabric_node(fake, quiet_node):
    fake()
    expect = NodeExpectation(node="gpu01", gpu_model="H100-SXM", gpu_count=1, interconnect="infiniband",
                             interconnect_nics=8)
    doc = collect.run(expect, "quick").to_dict()
    rdma = next(c for c in doc["checks"] if c["check"] == "net.rdma.ports")
    assert rdma["verdict"] == "fail" and rdma["value"] == 1 and rdma["threshold"] == ">= 8"


def test_fs_verify_mode_reads_every_file(tmp_path):
    for node in ("a", "b"):
        fs.write_and_read(str(tmp_path), node, "r2", 1)
    expect = {"node": "a", "fs_mount": str(tmp_path), "run_id": "r2"}
    done = run_probe("--fs-verify", "--expect-json", json.dumps(expect))
    doc = json.loads(done.stdout)
    assert doc["mode"] == "fs-verify" and set(doc["fs_verify"]["files"]) == {"a", "b"}


def test_probe_documents_flow_through_assemble_into_a_valid_report(fake, gpubench_stub, quiet_node, tmp_path):
    import xml.etree.ElementTree as ET

    import jsonschema

    from provision.certify.judging.assemble import assemble
    from provision.certify.report import json_report, junit
    from provision.records import NodeInfo

    fake([fakes.FakeGpu(), fakes.FakeGpu(bus_id="00000000:01:00.0")])
    nodes = [NodeInfo(name=f"gpu0{i}", group="gpu", roles=("compute",), gpu_model="H100-SXM", gpu_count=2)
             for i in range(1, 4)]
    probes, verify = {}, {}
    for node in nodes:
        expect = NodeExpectation(node=node.name, gpu_model="H100-SXM", gpu_count=2, driver_branch=570,
                                 cuda_version="12.8", fs_mount=str(tmp_path / "shared"), fs_size_mib=2, run_id="r")
        doc = collect.run(expect, "standard", gpubench=gpubench_stub).to_dict()
        probes[node.name] = ProbeDocument.from_dict(json.loads(json.dumps(doc)))
    for node in nodes:
        expect = NodeExpectation(node=node.name, fs_mount=str(tmp_path / "shared"), run_id="r")
        verify[node.name] = collect.verify_filesystem(expect)
    report = assemble(cluster="c1", level="standard", nodes=nodes, probes=probes, fs_verify=verify,
                      started_at="t0", finished_at="t1")
    jsonschema.validate(json_report.to_document(report), json_report.schema())
    assert len(ET.fromstring(junit.render(report)).findall(".//testcase")) == len(report.all_checks())
    first = next(n for n in report.nodes if n.name == "gpu01")
    verdicts = {(c.check, c.subject): c.verdict for c in first.checks}
    assert verdicts[("gpu.gemm_bf16", "gpu0")] == "pass"  # 790 TFLOP/s from the stub
    gpu1 = next(c for c in first.checks if (c.check, c.subject) == ("gpu.gemm_bf16", "gpu1"))
    assert gpu1.verdict == "warn" and "within 5 % of the floor" in gpu1.detail  # 690 vs 675.3
    assert verdicts[("fs.checksum", None)] == "pass" and verdicts[("slurm.srun", None)] == "pass"
