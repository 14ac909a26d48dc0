"""The threshold table: every entry well-formed, derived below its published figure, units consistent."""
from __future__ import annotations

import pytest

from provision.certify.judging import thresholds as th
from provision.certify.probe.gpus import GPU_MODELS

# Figures from CERTIFY-FIGURES.md, restated here as the independent sanity bounds.
PCIE_SPEC_GBS = {"pcie-gen4": 31.5, "pcie-gen5": 63.0}
NVLINK_NOTE_MAX_BUSBW = 500.0  # no 8-GPU all_reduce figure in the sources exceeds this
LINE_RATE_GBS = {"infiniband-400": 50.0, "infiniband-200": 25.0, "efa-100": 12.5}
REQUIRED_MODELS = ("H100-SXM", "H100-PCIe", "H200-SXM", "A100-SXM-80GB", "A100-PCIe", "L40S", "B200", "B300")


@pytest.mark.parametrize("entry", th.TABLE, ids=[f"{t.metric}:{t.key}" for t in th.TABLE])
def test_entry_is_well_formed_and_below_its_reference(entry):
    assert entry.value > 0 and entry.reference > 0
    assert entry.unit in th.UNITS
    assert entry.source.strip() and entry.derivation.strip()
    assert entry.value < entry.reference, "a floor must sit below the figure it is derived from"


@pytest.mark.parametrize("entry", [t for t in th.TABLE if t.metric == "gpu.gemm_bf16"], ids=lambda t: t.key)
def test_gemm_floor_is_below_peak_and_achievable(entry):
    peak = th.PEAK_BF16[entry.key]
    assert entry.unit == "TFLOP/s"
    assert entry.reference <= peak
    assert 0.4 * peak <= entry.value < 0.9 * peak  # below what a healthy GPU reaches, above a broken one
    assert entry.value <= th.GEMM_FRACTION * entry.reference + 0.1


@pytest.mark.parametrize("entry", [t for t in th.TABLE if t.metric == "gpu.copy_bw"], ids=lambda t: t.key)
def test_copy_floor_is_a_plausible_fraction_of_memory_bandwidth(entry):
    spec = th.HBM_SPEC[entry.key]
    assert entry.unit == "GB/s"
    # read + written counting: a reference can approach but not exceed the spec; a 10x unit slip fails here
    assert entry.reference <= spec
    assert 0.4 * spec <= entry.value < 0.8 * spec


@pytest.mark.parametrize("entry", [t for t in th.TABLE if t.metric in ("gpu.h2d_bw", "gpu.d2h_bw")],
                         ids=lambda t: f"{t.metric}:{t.key}")
def test_host_device_floor_is_below_the_pcie_spec(entry):
    assert entry.unit == "GB/s"
    assert 0.6 * PCIE_SPEC_GBS[entry.key] <= entry.value < 0.9 * PCIE_SPEC_GBS[entry.key]


@pytest.mark.parametrize("entry", [t for t in th.TABLE if t.metric == "nccl.node_busbw"], ids=lambda t: t.key)
def test_nccl_node_floor_is_below_the_published_busbw(entry):
    assert entry.unit == "GB/s"
    assert entry.value == pytest.approx(th.NCCL_FRACTION * entry.reference, abs=0.05)
    assert entry.reference <= NVLINK_NOTE_MAX_BUSBW


@pytest.mark.parametrize("entry", [t for t in th.TABLE if t.metric == "nccl.nic_busbw"], ids=lambda t: t.key)
def test_nccl_per_nic_floor_is_below_the_line_rate(entry):
    assert entry.unit == "GB/s"
    assert entry.value < LINE_RATE_GBS[entry.key]


@pytest.mark.parametrize("entry", [t for t in th.TABLE if t.metric == "net.rdma_bw"], ids=lambda t: t.key)
def test_rdma_floor_is_in_gigabits_below_the_link_rate(entry):
    assert entry.unit == "Gb/s"
    assert entry.value == pytest.approx(th.RDMA_FRACTION * entry.reference)


@pytest.mark.parametrize("model", REQUIRED_MODELS)
def test_required_models_have_gemm_and_copy_floors(model):
    assert th.gpu_floor("gpu.gemm_bf16", model) is not None
    assert th.gpu_floor("gpu.copy_bw", model) is not None


def test_keys_are_unique_per_metric():
    keys = [(t.metric, t.key) for t in th.TABLE]
    assert len(keys) == len(set(keys))


def test_rejected_figures_are_not_used():
    a100_40 = th.find("gpu.copy_bw", "A100-SXM-40GB")
    assert a100_40.value > 10 * 137.5 * 0.75 / 1.5  # not the 10x-off DCGM 20b0 figure (137.5 GB/s)
    assert th.find("gpu.copy_bw", "H200-SXM").value == pytest.approx(0.75 * 3110, abs=0.1)  # GB/s, not "2333" MB/s
    assert th.find("gpu.h2d_bw", "pcie-gen5").value != 52.0  # aznhc README, not its conf
    assert th.find("nccl.node_busbw", "H200-SXM").value < 480.0  # not the aznhc README figure
    assert th.find("nccl.node_busbw", "H100-SXM").value < 476.0 < 500.0  # not AWS's 500
    assert all(t.value < 400.0 for t in th.TABLE if t.metric == "nccl.nic_busbw")  # not AWS's tree figures
    assert len(th.REJECTED) >= 6 and all(reason for _, reason in th.REJECTED)


def test_pcie_floor_scales_with_lanes_and_is_absent_for_unknown_generation():
    full = th.pcie_floor("gpu.h2d_bw", 5, 16)
    half = th.pcie_floor("gpu.h2d_bw", 5, 8)
    assert half.value == pytest.approx(full.value / 2) and "x8" in half.derivation
    assert th.pcie_floor("gpu.h2d_bw", 3, 16) is None and th.pcie_floor("gpu.h2d_bw", None, 16) is None


def test_nccl_node_floor_only_for_eight_gpu_nvswitch_boards():
    assert th.nccl_node_floor("H100-SXM", 8).value == pytest.approx(428.4)
    assert th.nccl_node_floor("H100-SXM", 4) is None
    assert th.nccl_node_floor("L40S", 8) is None


def test_nccl_cluster_floor_scales_with_nics_and_never_exceeds_the_node_floor():
    eight = th.nccl_cluster_floor("H100-SXM", 8, "infiniband", 8, 400.0)
    four = th.nccl_cluster_floor("H100-SXM", 8, "infiniband", 4, 400.0)
    assert eight.value == pytest.approx(2 * four.value) and eight.unit == "GB/s"
    many = th.nccl_cluster_floor("H100-SXM", 8, "infiniband", 16, 400.0)
    assert many.value == th.nccl_node_floor("H100-SXM", 8).value
    hdr = th.nccl_cluster_floor("A100-SXM-80GB", 8, "infiniband", 8, 200.0)
    assert hdr.value < eight.value
    efa = th.nccl_cluster_floor("H100-SXM", 8, "efa", 32, 100.0)
    assert efa.value == pytest.approx(32 * 6.25)
    assert th.nccl_cluster_floor("H100-SXM", 8, "none", 0, None) is None


def test_link_floor_follows_the_nic_rate():
    assert th.link_floor(400.0).value == 360.0
    assert th.link_floor(200.0).value == 180.0
    assert th.link_floor(100.0).value == pytest.approx(90.0)
    assert th.link_floor(None) is None


@pytest.mark.parametrize("model", sorted(GPU_MODELS))
@pytest.mark.parametrize("metric", ["gpu.gemm_bf16", "gpu.copy_bw"])
def test_every_model_has_a_floor_or_says_why_it_is_fleet_only(metric, model):
    floor, why = th.gpu_floor(metric, model), th.fleet_only_reason(metric, model)
    assert (floor is None) == bool(why), f"{metric} {model}: floor {floor}, fleet-only reason {why!r}"


@pytest.mark.parametrize("model, value, sku", [("L4", 198.4, "27b8"), ("A10G", 362.7, "2237"), ("A30", 585.0, "20b7"),
                                               ("H100-NVL", 2043.8, "2321"), ("B200", 4072.5, "2901")])
def test_new_copy_floors_come_from_dcgm_references_of_their_sku(model, value, sku):
    floor = th.gpu_floor("gpu.copy_bw", model)
    assert floor.value == pytest.approx(value, abs=0.1) and sku in floor.source


def test_l4_gemm_is_fleet_only_because_the_datasheet_rule_fails_a_healthy_l4():
    assert th.gpu_floor("gpu.gemm_bf16", "L4") is None
    assert any("L4 GEMM" in figure and "59.4" in why for figure, why in th.REJECTED)


def test_blackwell_gemm_floors_come_from_published_achievable_figures():
    assert th.gpu_floor("gpu.gemm_bf16", "B200").reference == 1745.0
    assert th.gpu_floor("gpu.gemm_bf16", "GB200").reference == 1822.0
    assert th.gpu_floor("gpu.copy_bw", "GB200") is None and th.gpu_floor("gpu.copy_bw", "L40") is None


def test_cluster_floor_needs_nvswitch_joined_gpus_and_two_nodes():
    assert th.nccl_cluster_floor("L40S", 4, "infiniband", 4, 400.0, nodes=4) is None  # PCIe bounds it
    assert th.nccl_cluster_floor("H100-SXM", 1, "infiniband", 1, 400.0, nodes=4) is None  # one GPU per node
    assert th.nccl_cluster_floor("H100-SXM", 8, "infiniband", 8, 400.0, nodes=1) is None  # the node test's job
    gb200 = th.nccl_cluster_floor("GB200", 4, "infiniband", 4, 400.0, nodes=18)
    assert gb200.value == pytest.approx(4 * 41.4)


def test_cluster_floor_shows_its_derivation_from_node_count_nics_and_line_rate():
    hdr = th.nccl_cluster_floor("H100-SXM", 8, "infiniband", 4, 200.0, nodes=16)
    assert hdr.value == pytest.approx(4 * 21.5)  # the HDR per-NIC figure, not the NDR one halved
    assert "RING over 16 nodes x 8 GPUs" in hdr.derivation and "per 200 Gb/s NIC" in hdr.derivation
    assert "x4 for 4 NICs per node" in hdr.derivation
    slow = th.nccl_cluster_floor("H100-SXM", 8, "efa", 32, 50.0, nodes=2)
    assert slow.value == pytest.approx(32 * 6.25 / 2, abs=0.2) and "x0.5 for 50 Gb/s NICs" in slow.derivation
