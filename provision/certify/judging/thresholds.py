"""Absolute floors for measured performance, per GPU model, PCIe generation and fabric.

Every floor is derived from a published figure (`reference`, same unit) by a stated rule, never
copied: see /work/shared/CERTIFY-FIGURES.md and the `derivation` of each entry. Figures rejected as
wrong (unit or transcription errors in the sources) are listed in REJECTED with the reason.
A measurement below its floor fails; the fleet-relative test in judge.py catches smaller drops.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from provision.certify.probe.gpus import GPU_MODELS, NVLINK_BASEBOARD, NVLINK_BASEBOARD_NVLSM, NVLINK_SWITCH_TRAY

UNITS: tuple[str, ...] = ("TFLOP/s", "GB/s", "Gb/s")

GEMM_FRACTION = 0.85  # of the published achievable (MAMF) figure
GEMM_PEAK_FRACTION = 0.50  # of the datasheet dense peak, when no achievable figure is published
COPY_FRACTION = 0.75  # of the DCGM reference copy bandwidth (DCGM's own rule)
NCCL_FRACTION = 0.90  # of a published typical busbw (nccl-tests' own -G check uses 0.9)
RDMA_FRACTION = 0.90  # of the link rate, ib_write_bw between two nodes through a switch

ML_ENG = "ml-engineering compute/accelerator/README.md, MAMF table"
ML_ENG_NEW = "ml-engineering compute/accelerator/README.md @744d01e, MAMF table"
DCGM = "DCGM nvvs/diag-skus.yaml.in memory bandwidth reference"
DCGM_NEW = "DCGM nvvs/diag-skus.yaml.in @72fa3fea memory bandwidth reference"


@dataclass(frozen=True)
class Threshold:
    """A floor: metric, what it applies to, value and unit, the published figure and how it was derived."""

    metric: str  # gpu.gemm_bf16, gpu.copy_bw, gpu.h2d_bw, gpu.d2h_bw, nccl.node_busbw, nccl.nic_busbw, net.rdma_bw
    key: str  # GPU model key, "pcie-gen5", "infiniband-400", ...
    value: float
    unit: str
    reference: float  # the published figure, in `unit`
    source: str
    derivation: str

    def scaled(self, factor: float, why: str) -> Threshold:
        """The same floor scaled (fewer PCIe lanes, more NICs), saying why."""
        return replace(self, value=round(self.value * factor, 2), reference=round(self.reference * factor, 2),
                       derivation=f"{self.derivation}; x{factor:g} for {why}")


def _gemm(model: str, achievable: float, source: str) -> Threshold:
    return Threshold("gpu.gemm_bf16", model, round(achievable * GEMM_FRACTION, 1), "TFLOP/s", achievable, source,
                     f"{GEMM_FRACTION} x published achievable dense BF16 GEMM {achievable} TFLOP/s")


def _gemm_peak(model: str, peak: float) -> Threshold:
    return Threshold("gpu.gemm_bf16", model, round(peak * GEMM_PEAK_FRACTION, 1), "TFLOP/s", peak,
                     "NVIDIA datasheet dense BF16 peak (no achievable figure published)",
                     f"{GEMM_PEAK_FRACTION} x datasheet peak {peak} TFLOP/s; loose on purpose, the fleet test "
                     "does the fine work")


def _copy(model: str, reference: float, source: str = DCGM, note: str = "") -> Threshold:
    return Threshold("gpu.copy_bw", model, round(reference * COPY_FRACTION, 1), "GB/s", reference, source,
                     f"{COPY_FRACTION} x reference device copy {reference} GB/s (bytes read + written){note}")


def _nccl_node(model: str, typical: float, source: str) -> Threshold:
    return Threshold("nccl.node_busbw", model, round(typical * NCCL_FRACTION, 1), "GB/s", typical, source,
                     f"{NCCL_FRACTION} x published 8-GPU all_reduce busbw {typical} GB/s at >= 8 GiB")


# Datasheet dense BF16 peak, TFLOP/s (sanity bound for the GEMM floors and measurements); Blackwell from the
# ml-engineering peak table (B200/B300 SXM 2250, GB200 2500).
PEAK_BF16 = {"H100-SXM": 989.0, "H100-PCIe": 756.0, "H200-SXM": 989.0, "A100-SXM-80GB": 312.0,
             "A100-SXM-40GB": 312.0, "A100-PCIe": 312.0, "L40S": 362.0, "B200": 2250.0, "B300": 2250.0,
             "GB200": 2500.0}
# Datasheet memory bandwidth, GB/s (sanity bound for the copy floors, never a floor itself): Blackwell from the
# ml-engineering memory table (8.00 TB/s each); H100 NVL, A30 and L4 from NVIDIA's datasheets, A10G from AWS's
# G5 instance page.
HBM_SPEC = {"H100-SXM": 3350.0, "H100-PCIe": 2000.0, "H200-SXM": 4800.0, "A100-SXM-80GB": 2039.0,
            "A100-SXM-40GB": 1555.0, "A100-PCIe": 1935.0, "L40S": 864.0, "B200": 8000.0, "B300": 8000.0,
            "GB200": 8000.0, "H100-NVL": 3900.0, "A30": 933.0, "L4": 300.0, "A10G": 600.0}
_A100_40_SCALE = HBM_SPEC["A100-SXM-40GB"] / HBM_SPEC["A100-SXM-80GB"]

TABLE: tuple[Threshold, ...] = (
    _gemm("H100-SXM", 794.5, ML_ENG),
    _gemm("H200-SXM", 794.5, f"{ML_ENG} (H100 figure: same GH100 compute and clocks, CERTIFY-FIGURES 'H200 ~ H100')"),
    _gemm_peak("H100-PCIe", 756.0),
    _gemm("A100-SXM-80GB", 271.2, ML_ENG),
    _gemm("A100-SXM-40GB", 271.2, f"{ML_ENG} (A100 SXM figure: same GA100 compute and clocks)"),
    _gemm("A100-PCIe", 252.9, ML_ENG),
    _gemm_peak("L40S", 362.0),
    _gemm("B200", 1745.0, ML_ENG_NEW),
    _gemm("B300", 1769.0, f"{ML_ENG_NEW} ('same as B200, newer torch/cuda')"),
    _gemm("GB200", 1822.0, ML_ENG_NEW),
    _copy("H100-SXM", 2540.0),
    _copy("H200-SXM", 3110.0, note="; DCGM stores this SKU's floor as 2333 in GB/s where others use MB/s"),
    _copy("H100-PCIe", 1640.0),
    _copy("A100-SXM-80GB", 1564.0),
    _copy("A100-SXM-40GB", round(1564.0 * _A100_40_SCALE, 1), source=f"{DCGM} (A100 80GB) x HBM spec ratio 1555/2039",
          note="; DCGM's own 20b0 entry (137500) is 10x off and rejected"),
    _copy("A100-PCIe", 1293.0),
    _copy("L40S", 700.0),
    _copy("B200", 5430.0, source=f"{DCGM_NEW} (SKU 2901: 5430000)"),
    _copy("B300", 6164.0, source=f"{DCGM_NEW} (SKU 3182: 6164480, which its comment also gives as 6.02e+03 GiB/s)",
          note="; read in the file's own units like every other SKU"),
    _copy("H100-NVL", 2725.0, source=f"{DCGM_NEW} (SKU 2321 H100NVL: ~2725000)"),
    _copy("A30", 780.0, source=f"{DCGM_NEW} (SKU 20b7: ~780000)"),
    _copy("L4", 264.6, source=f"{DCGM_NEW} (SKU 27b8: ~264610)"),
    _copy("A10G", 483.6, source=f"{DCGM_NEW} (SKU 2237 'A10g - PG133 SKU210': ~483600)"),
    Threshold("gpu.h2d_bw", "pcie-gen5", 48.0, "GB/s", 55.4,
              "azurehpc-health-checks conf (floor 48); 55.4 GB/s measured on H200 (ml-engineering)",
              "aznhc floor 48 GB/s for Gen5 x16 pinned copies = 0.87 x the 55.4 measured, 0.76 x the 63 spec"),
    Threshold("gpu.h2d_bw", "pcie-gen4", 21.0, "GB/s", 25.9,
              "azurehpc-health-checks floor 21; SuperBench A100 baseline 25.9 GB/s",
              "aznhc floor 21 GB/s for Gen4 x16 = 0.81 x the 25.9 SuperBench baseline, 0.68 x the 31 spec"),
    Threshold("gpu.d2h_bw", "pcie-gen5", 48.0, "GB/s", 55.4,
              "azurehpc-health-checks conf (floor 48); 55.4 GB/s measured on H200 (ml-engineering)",
              "same floor as host-to-device: PCIe is symmetric"),
    Threshold("gpu.d2h_bw", "pcie-gen4", 21.0, "GB/s", 25.9,
              "azurehpc-health-checks floor 21; SuperBench A100 baseline 25.9 GB/s",
              "same floor as host-to-device: PCIe is symmetric"),
    _nccl_node("H100-SXM", 476.0, "nccl-tests issue #290: 476 GB/s with NVLS 'in the expected range'"),
    _nccl_node("H200-SXM", 482.0, "482 GB/s measured with NVLS (CERTIFY-FIGURES); aznhc conf 431 agrees"),
    _nccl_node("A100-SXM-80GB", 235.7, "SuperBench v0.4 fleet average 235.7 GB/s at 8 GB"),
    _nccl_node("A100-SXM-40GB", 235.7, "SuperBench v0.4 fleet average 235.7 GB/s at 8 GB (same NVLink3 board)"),
    Threshold("nccl.nic_busbw", "infiniband-400", round(46.0 * NCCL_FRACTION, 1), "GB/s", 46.0,
              "NVIDIA maintainers, nccl-tests #290 and #267: 46-48 GB/s per NDR NIC",
              f"{NCCL_FRACTION} x 46 GB/s per 400 Gb/s NIC, RING all_reduce busbw across nodes"),
    Threshold("nccl.nic_busbw", "infiniband-200", round(191.0 / 8 * NCCL_FRACTION, 1), "GB/s", round(191.0 / 8, 2),
              "DGX A100 with 8x HDR: all_reduce busbw 191 GB/s (NVIDIA DeepOps docs)",
              f"{NCCL_FRACTION} x 191/8 GB/s per 200 Gb/s NIC"),
    Threshold("nccl.nic_busbw", "efa-100", 6.25, "GB/s", 12.5,
              "EFA line rate 100 Gb/s = 12.5 GB/s; ParallelCluster CI floors p4d > 26, p5 > 250 GB/s at 1 GiB",
              "0.5 x line rate per 100 Gb/s EFA NIC (CI floors are 0.52 and 0.63 x line); AWS 2-node figures "
              "above line rate are tree-algorithm numbers, not RING floors"),
    Threshold("net.rdma_bw", "rdma-400", 360.0, "Gb/s", 400.0, "NDR link rate; aznhc ib_write_bw loopback >= 380",
              f"{RDMA_FRACTION} x 400 Gb/s link rate (aznhc's 0.95 is for loopback without a switch)"),
    Threshold("net.rdma_bw", "rdma-200", 180.0, "Gb/s", 200.0, "HDR link rate; aznhc ib_write_bw >= 180 Gb/s",
              f"{RDMA_FRACTION} x 200 Gb/s link rate"),
)

# Published figures deliberately not used, and why (reported by the lead; tested for absence).
REJECTED: tuple[tuple[str, str], ...] = (
    ("DCGM diag-skus 20b0 (A100 SXM4 40GB) minimum_bandwidth 137500", "10x below its own comment (1372500)"),
    ("DCGM diag-skus H200 '2333'", "GB/s where every other SKU is MB/s; used as 3110 x 0.75 in GB/s"),
    ("aznhc README H2D 52 GB/s (Gen5)", "README disagrees with its conf (48); 52 is 0.94 x the best measurement"),
    ("aznhc README H200 NCCL 480 GB/s", "conf says 431; 480 equals the measured typical and fails half the fleet"),
    ("aznhc IB figures labelled GB/s", "they are Gb/s"),
    ("AWS p5 NCCL floor 800 GB/s", "applied to a sweep ending at 128 MB where AWS itself shows 289 GB/s"),
    ("AWS p5 2-node 479/487 GB/s, p4de 78 GB/s", "above the EFA line rate: tree-algorithm figures, not RING"),
    ("AWS NVLink-only floor 500 GB/s (p5)", "above the 476 GB/s NVIDIA calls expected (nccl-tests #290)"),
    ("DCGM diag-skus 26b5 (L40) memory bandwidth '~65400' (floor 49050)",
     "10x below the L40's 864 GB/s GDDR6 (the L40S on the same memory measures ~700000): L40 copy is fleet-only"),
    ("DCGM diag-skus 2941 (GB200) memory bandwidth 3470000",
     "43 % of the 8 TB/s spec where B200 on the same HBM3e measures 5430000: GB200 copy is fleet-only"),
    ("L4 GEMM floor from the datasheet rule (0.5 x 121 TFLOP/s dense BF16)",
     "a healthy L4 measured 59.4 TFLOP/s bf16 at 8192^3 (power-capped at 72 W; zzc0721/torch-performance-test-data "
     "issue #120), below 60.5: L4 GEMM is fleet-only"),
)

# Model and metric without an absolute floor: judged against the fleet only (same model), and why.
FLEET_ONLY: dict[tuple[str, str], str] = {
    **{("gpu.gemm_bf16", m): "no published achievable BF16 GEMM figure; datasheet peaks are not reached under the "
                             "power caps of these cards" for m in ("H100-NVL", "L40", "A30", "L4", "A10G")},
    ("gpu.copy_bw", "L40"): "DCGM's L40 reference is 10x off (see REJECTED)",
    ("gpu.copy_bw", "GB200"): "DCGM's GB200 reference is implausibly low (see REJECTED)",
    **{("nccl.node_busbw", m): "no published 8-GPU all_reduce figure for this board yet" for m in ("B200", "B300")},
    ("nccl.node_busbw", "GB200"): "a GB200 tray's 4 GPUs reach each other through the NVLink switch trays; "
                                  "no published per-tray figure",
}


def find(metric: str, key: str) -> Threshold | None:
    """The table entry for a metric and key, or None."""
    return next((t for t in TABLE if t.metric == metric and t.key == key), None)


def gpu_floor(metric: str, gpu_model: str | None) -> Threshold | None:
    """GEMM or copy floor of a GPU model."""
    return find(metric, gpu_model) if gpu_model else None


def fleet_only_reason(metric: str, gpu_model: str | None) -> str:
    """Why a model has no floor for a metric ("" when none is recorded)."""
    return FLEET_ONLY.get((metric, gpu_model or ""), "")


def pcie_floor(metric: str, gen: int | None, width: int | None) -> Threshold | None:
    """Host<->device floor for a PCIe generation, scaled by lane count below x16."""
    entry = find(metric, f"pcie-gen{gen}") if gen else None
    if entry is None or not width or width >= 16:
        return entry
    return entry.scaled(width / 16, f"x{width} link")


def nccl_node_floor(gpu_model: str | None, gpu_count: int) -> Threshold | None:
    """Single-node all_reduce floor: published only for 8-GPU NVSwitch boards."""
    return find("nccl.node_busbw", gpu_model) if gpu_model and gpu_count == 8 else None


NVSWITCHED = (NVLINK_BASEBOARD, NVLINK_BASEBOARD_NVLSM, NVLINK_SWITCH_TRAY)


def nvswitched(gpu_model: str | None, gpu_count: int) -> bool:
    """Whether a node's GPUs reach each other over NVSwitch, so its NICs, not PCIe, bound busbw across nodes."""
    model = GPU_MODELS.get(gpu_model or "")
    return bool(model and model.nvlink in NVSWITCHED and gpu_count >= 2)


def nccl_cluster_floor(gpu_model: str | None, gpu_count: int, fabric: str, nics: int,
                       nic_rate_gbps: float | None, nodes: int | None = None) -> Threshold | None:
    """Multi-node all_reduce floor: per-NIC floor x line rate x NICs, never above the single-node floor.

    RING all_reduce over N nodes x k GPUs (R = N k ranks): every rank sends 2(R-1)/R of the data, and each
    node's traffic leaves over its NICs, so busbw (algbw x 2(R-1)/R) is bounded by the node's NIC bandwidth
    whatever N is (N >= 2). Only where NVSwitch joins a node's GPUs; on PCIe-only nodes PCIe bounds it lower
    and no published figure exists (None)."""
    if (nodes is not None and nodes < 2) or not nvswitched(gpu_model, gpu_count):
        return None
    rate = nic_rate_gbps or {"infiniband": 400.0, "efa": 100.0}.get(fabric)
    base = {"infiniband": "infiniband-400" if (rate or 0) >= 400 else "infiniband-200", "efa": "efa-100"}.get(fabric)
    entry = find("nccl.nic_busbw", base) if base and nics else None
    if entry is None:
        return None
    nominal = 400.0 if base == "infiniband-400" else 200.0 if base == "infiniband-200" else 100.0
    per_nic = entry.scaled(rate / nominal, f"{rate:g} Gb/s NICs") if rate and rate != nominal else entry
    total = per_nic.scaled(nics, f"{nics} NICs per node")
    node = nccl_node_floor(gpu_model, gpu_count)
    chosen = node if node and node.value < total.value else total
    ring = (f"RING over {nodes} nodes x {gpu_count} GPUs: busbw is bounded by each node's NICs, not by the node "
            "count" if nodes else "RING across nodes: busbw is bounded by each node's NICs")
    capped = f"; capped by the single-node floor {node.value:g} GB/s" if chosen is node else ""
    return replace(chosen, derivation=f"{ring}; {total.derivation}{capped}")


def link_floor(nic_rate_gbps: float | None) -> Threshold | None:
    """ib_write_bw floor for one link of the given rate (none for TCP/iperf3: fleet-relative only)."""
    if not nic_rate_gbps:
        return None
    entry = find("net.rdma_bw", "rdma-400" if nic_rate_gbps >= 400 else "rdma-200")
    nominal = entry.reference
    return entry if nic_rate_gbps == nominal else entry.scaled(nic_rate_gbps / nominal, f"{nic_rate_gbps:g} Gb/s link")
