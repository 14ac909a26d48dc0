"""assemble(): probe documents, filesystem verification, NCCL runs and the network matrix into one report."""
from __future__ import annotations

import pytest

from provision.certify.judging.assemble import NcclJob, PairResult, assemble, parse_probe_output
from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.records import CheckResult, Measurement
from provision.errors import CertifyError
from provision.records import NodeInfo

NODES = [NodeInfo(name=f"gpu{i:02d}", group="gpu", roles=("compute",), gpu_model="H100-SXM", gpu_count=8,
                  interconnect="infiniband", interconnect_nics=8) for i in range(1, 6)]
NAMES = [n.name for n in NODES]


def probe_doc(node: str, gemm: float = 790.0, copy: float = 2900.0, h2d: float = 53.0, fs_error: str | None = None,
              checks: list[CheckResult] | None = None) -> dict:
    context = {"gpu_model": "H100-SXM", "pcie_gen": 5, "pcie_width": 16}
    measurements = []
    for gpu in range(2):
        value = gemm if gpu == 1 else 790.0
        measurements += [Measurement("gpu.gemm_bf16", node, value, "TFLOP/s", f"gpu{gpu}", context),
                         Measurement("gpu.copy_bw", node, copy, "GB/s", f"gpu{gpu}", context),
                         Measurement("gpu.h2d_bw", node, h2d, "GB/s", f"gpu{gpu}", context)]
    checks = checks or [CheckResult("gpu.ecc.volatile_uncorrected", "pass", node=node, subject="gpu0", value=0)]
    return {"probe_version": 1, "mode": "probe", "node": node, "hostname": node, "level": "standard",
            "duration_s": 12.0, "checks": [c.to_dict() for c in checks],
            "measurements": [m.to_dict() for m in measurements],
            "rdma": [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "rate_gbps": 400.0,
                      "link_layer": "InfiniBand"}],
            "fs": {"error": fs_error, "sha256_written": "ab", "sha256_read": "ab"}}


def verify_doc(files: dict) -> dict:
    return {"probe_version": 1, "mode": "fs-verify", "fs_verify": {"files": files, "error": None}}


def typed(docs: dict | None) -> dict | None:
    """Documents as the control side reads them off the probe's stdout."""
    return None if docs is None else {node: ProbeDocument.from_dict(doc) for node, doc in docs.items()}


def build(probes=None, fs_verify=None, **kwargs):
    probes = probes if probes is not None else {n: probe_doc(n) for n in NAMES}
    return assemble(cluster="c1", level="standard", nodes=NODES, probes=typed(probes), started_at="t0",
                    finished_at="t1", fs_verify=typed(fs_verify), **kwargs)


def checks_of(report, node, check):
    return [c for c in next(n for n in report.nodes if n.name == node).checks if c.check == check]


def test_healthy_cluster_passes():
    report = build()
    assert report.verdict == "pass" and [n.name for n in report.nodes] == NAMES
    assert checks_of(report, "gpu01", "slurm.srun")[0].verdict == "pass"
    gemm = checks_of(report, "gpu01", "gpu.gemm_bf16")
    assert len(gemm) == 2 and gemm[0].threshold == 675.3 and "ml-engineering" in gemm[0].source


def test_missing_probe_document_fails_slurm_srun_for_that_node():
    probes = {n: probe_doc(n) for n in NAMES[:-1]}
    report = build(probes)
    srun = checks_of(report, "gpu05", "slurm.srun")[0]
    assert srun.verdict == "fail" and "no probe document" in srun.detail
    assert next(n for n in report.nodes if n.name == "gpu05").verdict == "fail" and report.verdict == "fail"


def test_probe_of_another_version_fails_instead_of_being_misread():
    old = {**probe_doc("gpu01"), "probe_version": 0}
    report = build({**{n: probe_doc(n) for n in NAMES}, "gpu01": old})
    check = checks_of(report, "gpu01", "probe.version")[0]
    assert check.verdict == "fail" and check.value == 0 and "certify role" in check.detail


def test_probe_checks_are_kept_and_decide_the_node_verdict():
    bad = [CheckResult("gpu.ecc.volatile_uncorrected", "fail", node="x", subject="gpu3", value=2)]
    report = build({**{n: probe_doc(n) for n in NAMES}, "gpu02": probe_doc("gpu02", checks=bad)})
    ecc = checks_of(report, "gpu02", "gpu.ecc.volatile_uncorrected")[0]
    assert ecc.verdict == "fail" and ecc.node == "gpu02"  # the node name comes from the inventory, not the probe


def test_gemm_below_floor_fails_and_fleet_outlier_above_floor_warns():
    probes = {n: probe_doc(n) for n in NAMES}
    probes["gpu03"] = probe_doc("gpu03", gemm=600.0)
    probes["gpu04"] = probe_doc("gpu04", gemm=730.0)  # above 675.3 but 7.6 % under the fleet
    report = build(probes)
    assert checks_of(report, "gpu03", "gpu.gemm_bf16")[1].verdict == "fail"
    outlier = checks_of(report, "gpu04", "gpu.gemm_bf16")[1]
    assert outlier.verdict == "warn" and "fleet outlier" in outlier.detail


def test_gemm_above_datasheet_peak_is_a_measurement_error():
    report = build({**{n: probe_doc(n) for n in NAMES}, "gpu01": probe_doc("gpu01", gemm=1200.0)})
    assert checks_of(report, "gpu01", "gpu.gemm_bf16")[1].verdict in ("warn", "fail")


def test_host_to_device_judged_by_pcie_generation():
    report = build({**{n: probe_doc(n) for n in NAMES}, "gpu02": probe_doc("gpu02", h2d=30.0)})
    h2d = checks_of(report, "gpu02", "gpu.h2d_bw")[0]
    assert h2d.verdict == "fail" and h2d.threshold == 48.0


def test_filesystem_checksums_across_nodes():
    good = {n: {"expected": "ab", "found": "ab", "ok": True, "error": None} for n in NAMES}
    verify = {n: verify_doc(good) for n in NAMES}
    verify["gpu02"] = verify_doc({**good, "gpu04": {"expected": "ab", "found": "cd", "ok": False, "error": None}})
    verify["gpu03"] = verify_doc({k: v for k, v in good.items() if k != "gpu05"})
    del verify["gpu01"]
    report = build(fs_verify=verify)
    assert checks_of(report, "gpu04", "fs.checksum")[0].verdict == "pass"
    assert checks_of(report, "gpu04", "fs.checksum")[0].value == len(NAMES)
    assert "gpu04: checksum differs" in checks_of(report, "gpu02", "fs.checksum")[0].detail
    assert "gpu05: missing" in checks_of(report, "gpu03", "fs.checksum")[0].detail
    assert checks_of(report, "gpu01", "fs.checksum")[0].verdict == "fail"


def test_nccl_runs_from_genuine_output(fixtures_dir):
    two_node = (fixtures_dir / "nccl_allreduce_h100_2node.txt").read_text()
    old = (fixtures_dir / "nccl_allreduce_dgx_a100_4node_old_format.txt").read_text()
    jobs = [NcclJob("cluster", ("gpu01", "gpu02"), two_node, algo="RING"),
            NcclJob("cluster", tuple(NAMES[:4]), old, algo="RING"),
            NcclJob("node", ("gpu05",), None, error="srun: task 0 exited with 1")]
    report = build(nccl=jobs)
    cluster = [c for c in report.checks if c.check == "nccl.cluster_busbw"]
    # 338.82 GB/s at 8 GiB against 8 NDR NICs x 41.4 = 331.2 GB/s: passes the floor, inside the 5 % warn band
    assert cluster[0].value == 338.82 and cluster[0].threshold == pytest.approx(331.2) and cluster[0].verdict == "warn"
    # the old DeepOps run stops at 4 GiB: no floor applies, so it cannot pass outright
    assert cluster[1].threshold is None and cluster[1].verdict == "warn" and "8 GiB" in cluster[1].detail
    assert checks_of(report, "gpu05", "nccl.node_busbw")[0].verdict == "fail"


def test_two_node_run_without_ring_is_not_judged_against_the_floor(fixtures_dir):
    text = (fixtures_dir / "nccl_allreduce_h100_2node.txt").read_text()
    report = build(nccl=[NcclJob("cluster", ("gpu01", "gpu02"), text, algo=None)])
    result = report.checks[0]
    assert result.threshold is None and result.verdict == "warn" and "RING" in result.detail


def test_corrupted_nccl_results_fail(fixtures_dir):
    text = (fixtures_dir / "nccl_allreduce_h100_2node.txt").read_text().replace("338.82      0", "338.82      1")
    report = build(nccl=[NcclJob("cluster", ("gpu01", "gpu02"), text, algo="RING")])
    assert report.checks[0].verdict == "fail" and "wrong" in report.checks[0].detail


def test_network_matrix_and_node_localisation():
    pairs = [PairResult(a, b, 300.0 if "gpu03" in (a, b) else 390.0) for a in NAMES for b in NAMES if a != b]
    report = build(pairs=pairs)
    assert report.network.nodes == tuple(NAMES) and report.network.values[0][1] == 390.0
    assert checks_of(report, "gpu03", "net.node_bw")[0].verdict == "fail"
    assert checks_of(report, "gpu01", "net.node_bw")[0].verdict == "pass"
    link = next(c for c in report.checks if c.subject == "gpu03->gpu01")
    assert link.verdict == "fail" and link.threshold == 360.0  # 400 Gb/s ports from the probes


def test_runner_checks_go_to_their_node_or_the_cluster():
    extra = [CheckResult("slurm.sinfo", "fail", node="gpu02", detail="drained"),
             CheckResult("slurm.partition", "pass", detail="gpu partition up")]
    report = build(extra_checks=extra)
    assert checks_of(report, "gpu02", "slurm.sinfo")[0].verdict == "fail"
    assert report.checks[-1].check == "slurm.partition"


def test_parse_probe_output_takes_the_json_line_and_names_the_node():
    assert parse_probe_output("warning: noise\n{\"mode\": \"probe\"}\n", "gpu01") == ProbeDocument("probe")
    assert parse_probe_output("0: {\"mode\": \"error\", \"error\": \"x\"}", "gpu01") == ProbeDocument.failed("x")
    with pytest.raises(CertifyError, match="gpu07: the probe printed no JSON"):
        parse_probe_output("Traceback (most recent call last):\n", "gpu07")
    with pytest.raises(CertifyError, match="gpu07: probe output is not valid JSON"):
        parse_probe_output("{broken", "gpu07")


# A heterogeneous cluster: each node is judged against its own group's GPU model, count and NICs.
H100 = [NodeInfo(name=f"h{i}", group="h100", roles=("compute",), gpu_model="H100-SXM", gpu_count=8,
                 interconnect="infiniband", interconnect_nics=8) for i in range(1, 5)]
L40S = [NodeInfo(name=f"l{i}", group="l40s", roles=("compute",), gpu_model="L40S", gpu_count=4,
                 interconnect="infiniband", interconnect_nics=1) for i in range(1, 4)]
MIXED = H100 + L40S
EIGHT_GIB = 8 * 1024**3


def nccl_output(host_gpus: list[tuple[str, int]], busbw: float) -> str:
    """all_reduce_perf output in the current nccl-tests layout: one rank line per GPU, one row at 8 GiB."""
    ranks = [(host, d) for host, gpus in host_gpus for d in range(gpus)]
    lines = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20",
             "#", "# Using devices"]
    lines += [f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {host:>8} device {d:2d} [0000:{d + 4:02x}:00] GPU"
              for r, (host, d) in enumerate(ranks)]
    algbw = busbw * len(ranks) / (2 * (len(ranks) - 1))
    lines += ["#", "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                   "algbw   busbw #wrong",
              f"  {EIGHT_GIB:>10}    {EIGHT_GIB // 4:>10}     float     sum      -1    47535  {algbw:6.2f}  "
              f"{busbw:6.2f}      0    47743  {algbw:6.2f}  {busbw:6.2f}      0",
              "# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {busbw:.3f}"]
    return "\n".join(lines) + "\n"


def mixed_probe(node: NodeInfo, gemm: float) -> dict:
    doc = probe_doc(node.name)
    context = {"gpu_model": node.gpu_model, "pcie_gen": 5 if node.gpu_model == "H100-SXM" else 4, "pcie_width": 16}
    doc["measurements"] = [Measurement("gpu.gemm_bf16", node.name, gemm, "TFLOP/s", "gpu0", context).to_dict()]
    return doc


def build_mixed(gemm: dict[str, float] | None = None, **kwargs):
    gemm = gemm or {}
    probes = {n.name: mixed_probe(n, gemm.get(n.name, 790.0 if n.gpu_model == "H100-SXM" else 250.0))
              for n in MIXED}
    return assemble(cluster="c1", level="standard", nodes=MIXED, probes=typed(probes), started_at="t0",
                    finished_at="t1", **kwargs)


def node_checks(report, check):
    return {c.node: c for n in report.nodes for c in n.checks if c.check == check}


def test_each_group_is_judged_against_its_own_single_node_floor_and_peers():
    jobs = [NcclJob("node", (n.name,), nccl_output([(n.name, 8)], 300.0 if n.name == "h4" else 470.0)) for n in H100]
    jobs += [NcclJob("node", (n.name,), nccl_output([(n.name, 4)], 21.0)) for n in L40S]
    result = node_checks(build_mixed(nccl=jobs), "nccl.node_busbw")
    assert all(result[n.name].threshold == pytest.approx(428.4) for n in H100)  # H100-SXM x8 published figure
    assert [result[n].verdict for n in ("h1", "h2", "h3", "h4")] == ["pass", "pass", "pass", "fail"]
    # L40S x4: no published figure, judged only against the other L40S nodes (not failed for H100's 428 GB/s)
    assert all(result[n.name].threshold is None and result[n.name].verdict == "pass" for n in L40S)
    assert all("H100" not in result[n.name].detail for n in L40S)


def test_node_floor_follows_the_gpus_the_run_used_not_the_group_size():
    """A run on 4 of an H100 node's 8 GPUs (as when one job step serves every group) is not held to the 8-GPU
    figure."""
    result = node_checks(build_mixed(nccl=[NcclJob("node", ("h1",), nccl_output([("h1", 4)], 300.0))]),
                         "nccl.node_busbw")
    assert result["h1"].threshold is None and result["h1"].verdict == "pass"


def test_gpu_measurements_use_each_nodes_model():
    report = build_mixed(gemm={"l3": 150.0})
    gemm = node_checks(report, "gpu.gemm_bf16")
    assert gemm["h1"].threshold == pytest.approx(675.3) and gemm["h1"].verdict == "pass"
    assert gemm["l1"].threshold == pytest.approx(181.0) and gemm["l1"].verdict == "pass"
    assert gemm["l3"].verdict == "fail" and "below the floor 181" in gemm["l3"].detail
    assert {n.name: n.gpu_model for n in report.nodes}["l2"] == "L40S"


def test_run_across_both_groups_is_bounded_by_the_pcie_group_and_says_why():
    job = NcclJob("cluster", tuple(n.name for n in MIXED),
                  nccl_output([(n.name, 4) for n in MIXED], 18.0), algo=None)
    (check,) = build_mixed(nccl=[job]).checks
    assert check.threshold is None and "L40S x4" in check.detail and "PCIe" in check.detail


def test_run_across_the_nvswitch_group_shows_its_floor_derivation():
    job = NcclJob("cluster", tuple(n.name for n in H100), nccl_output([(n.name, 8) for n in H100], 360.0))
    (check,) = build_mixed(nccl=[job]).checks
    assert check.threshold == pytest.approx(331.2) and check.verdict == "pass"
    assert "RING over 4 nodes x 8 GPUs" in check.detail and "x8 for 8 NICs per node" in check.detail


def test_run_across_nodes_takes_the_fewest_nics_of_the_nodes_it_spans():
    few = [n.model_copy(update={"interconnect_nics": 4}) if n.name == "h4" else n for n in H100]
    job = NcclJob("cluster", tuple(n.name for n in few), nccl_output([(n.name, 8) for n in few], 200.0))
    probes = {n.name: mixed_probe(n, 790.0) for n in few}
    report = assemble(cluster="c1", level="standard", nodes=few, probes=typed(probes), started_at="t0",
                      finished_at="t1", nccl=[job])
    assert report.checks[0].threshold == pytest.approx(165.6) and "x4 for 4 NICs per node" in report.checks[0].detail
