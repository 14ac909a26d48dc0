"""The GPU models the tool knows: identity (PCI ids, names NVML reports) and topology facts.

Standard library only: the node-side probe imports it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# How a model's GPUs are joined by NVLink (`GpuModel.nvlink`); what certify may expect of a node follows
# from it together with the node's GPU count, the NVSwitches on its PCI bus and NVML's fabric state.
NVLINK_BASEBOARD = "baseboard"  # HGX baseboard NVSwitches, visible on the host PCI bus (A100, H100, H200)
NVLINK_BASEBOARD_NVLSM = "baseboard-nvlsm"  # HGX Blackwell baseboard: switches managed by fabric manager
#   with the NVLink subnet manager; not listed as NVSwitch bridges on the host bus (AWS ParallelCluster's
#   fabric-manager cookbook counts B200 GPUs instead of switches for P6, PR aws-parallelcluster-cookbook#2987)
NVLINK_SWITCH_TRAY = "switch-tray"  # GB200 NVL: NVLink switch trays outside the node; fabric via NVML state
NVLINK_BRIDGE = "bridge"  # optional NVLink bridges between pairs of PCIe cards
NVLINK_NONE = "none"
NVLINK_KINDS = (NVLINK_BASEBOARD, NVLINK_BASEBOARD_NVLSM, NVLINK_SWITCH_TRAY, NVLINK_BRIDGE, NVLINK_NONE)


@dataclass(frozen=True)
class GpuModel:
    """One GPU model as the spec names it, with what preflight, roles and certify need to know."""

    key: str  # the name used in specs, e.g. "H100-SXM"
    description: str
    pci_device_ids: tuple[str, ...]  # lower-case hex, vendor 10de
    nvml_names: tuple[str, ...]  # names (or their distinctive part) nvmlDeviceGetName() reports
    memory_gib: int
    architecture: str  # ampere, ada, hopper, blackwell
    form_factor: str  # sxm or pcie
    nvswitch: bool  # NVSwitch-based NVLink fabric: fabric manager (and, on Blackwell HGX, NVLSM) needed
    gres_type: str  # the Slurm gres type name, e.g. gpu:h100
    min_driver_branch: int  # the first driver branch that supports the model
    nvlink: str = NVLINK_NONE  # one of NVLINK_KINDS
    board_gpus: int = 1  # GPUs one NVLink domain of a node holds: 8 on HGX, 4 in a GB200 compute tray

    def matches_nvml_name(self, name: str) -> bool:
        """Whether nvmlDeviceGetName() names this model: a catalogue name matches as a whole word, so "L4"
        is not "L40" and "L40" is not "L40S"."""
        return any(re.search(rf"(?<!\w){re.escape(part)}(?!\w)", name, re.IGNORECASE) for part in self.nvml_names)


PCI_VENDOR_NVIDIA = "10de"

# NVSwitch PCI device ids (vendor 10de, class 0680 "bridge"), from the PCI ID repository (pci-ids.ucw.cz;
# pciutils/pciids @c1c12547): 1af1 "GA100 [A100 NVSwitch]", 22a3 "GH100 [H100 NVSwitch]". Older NVIDIA
# chipsets (MCP51/MCP61 Ethernet) also use class 0680, so the id decides, not the class.
NVSWITCH_PCI_IDS: dict[str, str] = {"1af1": "A100 NVSwitch (GA100)", "22a3": "H100 NVSwitch (GH100)"}

# Sources, for every entry:
# - PCI device ids: the PCI ID repository (pci-ids.ucw.cz; pciutils/pciids @c1c12547), and where it lacks one
#   (B300), NVIDIA's driver README "Compatible GPUs" table (as carried by the 610-branch open kernel module
#   README, github.com/aikitoria/open-gpu-kernel-modules README.md @08dc3455: "NVIDIA B300 SXM6 AC | 3182").
# - NVML names: the product names of that README table (what nvmlDeviceGetName() returns).
# - minimum branches: NVIDIA's driver release notes (first branch listing the product); Blackwell: the GPU
#   Operator platform notes ("HGX B200 requires ... 570.133.20 or later"); B300 is first listed by the R580
#   production branch (nvidia-smi output of B300 SXM6 AC on 580.126.09 in public benchmark reports).
# - NVLink facts: the Fabric Manager user guide (HGX A100/H100/B200 baseboards: 8 GPUs on NVSwitches), the
#   Base Command Manager GB200 NVLink chapter (GB200 NVL: NVLink switch trays, 4 GPUs per compute tray).
_MODELS = (
    GpuModel("H100-SXM", "NVIDIA H100 SXM5 80GB", ("2330",), ("H100 80GB HBM3", "H100 SXM"), 80,
             "hopper", "sxm", True, "h100", 525, NVLINK_BASEBOARD, 8),
    GpuModel("H100-PCIe", "NVIDIA H100 PCIe 80GB", ("2331",), ("H100 PCIe",), 80,
             "hopper", "pcie", False, "h100", 525, NVLINK_BRIDGE, 2),
    # README table: "NVIDIA H100 NVL | 2321"; pci.ids names 2321 "H100L 94GB". Pairs joined by NVLink bridges.
    GpuModel("H100-NVL", "NVIDIA H100 NVL 94GB", ("2321",), ("H100 NVL",), 94,
             "hopper", "pcie", False, "h100nvl", 535, NVLINK_BRIDGE, 2),
    GpuModel("H200-SXM", "NVIDIA H200 SXM 141GB", ("2335",), ("H200",), 141,
             "hopper", "sxm", True, "h200", 550, NVLINK_BASEBOARD, 8),
    GpuModel("A100-SXM-80GB", "NVIDIA A100 SXM4 80GB", ("20b2",), ("A100-SXM4-80GB", "A100 SXM4 80GB"), 80,
             "ampere", "sxm", True, "a100", 450, NVLINK_BASEBOARD, 8),
    GpuModel("A100-SXM-40GB", "NVIDIA A100 SXM4 40GB", ("20b0",), ("A100-SXM4-40GB", "A100 SXM4 40GB"), 40,
             "ampere", "sxm", True, "a100", 450, NVLINK_BASEBOARD, 8),
    GpuModel("A100-PCIe", "NVIDIA A100 PCIe 40/80GB", ("20f1", "20b5"), ("A100-PCIE", "A100 80GB PCIe"), 80,
             "ampere", "pcie", False, "a100", 450, NVLINK_BRIDGE, 2),
    # pci.ids: 20b7 "GA100GL [A30 PCIe]"; README table "NVIDIA A30 | 20B7". NVLink bridge for pairs.
    GpuModel("A30", "NVIDIA A30 24GB", ("20b7",), ("A30",), 24, "ampere", "pcie", False, "a30", 450,
             NVLINK_BRIDGE, 2),
    GpuModel("L40S", "NVIDIA L40S 48GB", ("26b9",), ("L40S",), 48, "ada", "pcie", False, "l40s", 525),
    # pci.ids: 26b5 "AD102GL [L40]"; README table "NVIDIA L40 | 26B5". No NVLink.
    GpuModel("L40", "NVIDIA L40 48GB", ("26b5",), ("L40",), 48, "ada", "pcie", False, "l40", 525),
    GpuModel("L4", "NVIDIA L4 24GB", ("27b8",), ("NVIDIA L4",), 24, "ada", "pcie", False, "l4", 525),
    GpuModel("A10G", "NVIDIA A10G 24GB", ("2237",), ("A10G",), 24, "ampere", "pcie", False, "a10g", 470),
    # pci.ids: 2901 "GB100 [B200]", 2909 "GB100 [HGX B200 168GB]"; README table "NVIDIA B200 | 2901, 2909".
    GpuModel("B200", "NVIDIA B200 SXM 180GB", ("2901", "2909"), ("B200",), 180,
             "blackwell", "sxm", True, "b200", 570, NVLINK_BASEBOARD_NVLSM, 8),
    # README table: "NVIDIA B300 SXM6 AC | 3182" (not yet in pci.ids).
    GpuModel("B300", "NVIDIA B300 SXM6 AC 288GB", ("3182",), ("B300 SXM6 AC", "B300"), 288,
             "blackwell", "sxm", True, "b300", 580, NVLINK_BASEBOARD_NVLSM, 8),
    # The GB200 compute tray as NVML reports it: 4 GPUs named "NVIDIA GB200" (pci.ids 2941 "GB100 [HGX GB200]",
    # README table "NVIDIA GB200 | 2941"), NVLinks to switch trays outside the node, no NVSwitch on its bus.
    GpuModel("GB200", "NVIDIA GB200 (Grace Blackwell compute tray, 4 GPUs)", ("2941",), ("GB200",), 186,
             "blackwell", "sxm", False, "gb200", 570, NVLINK_SWITCH_TRAY, 4),
)

GPU_MODELS: dict[str, GpuModel] = {m.key: m for m in _MODELS}


def gpu_model(key: str) -> GpuModel:
    """Look a model up by its spec name; KeyError if unknown (the spec validator reports it first)."""
    return GPU_MODELS[key]


def model_for_pci_device(device_id: str) -> GpuModel | None:
    """Map an lspci device id (e.g. "2330") to a model, so preflight can compare with the spec."""
    wanted = device_id.lower().removeprefix("0x")
    return next((m for m in _MODELS if wanted in m.pci_device_ids), None)


def model_for_nvml_name(name: str) -> GpuModel | None:
    """Map nvmlDeviceGetName() (e.g. "NVIDIA H100 80GB HBM3") to a model; None for one not in the catalogue."""
    return next((m for m in _MODELS if m.matches_nvml_name(name)), None)


def is_nvswitch(device_id: str) -> bool:
    """Whether a PCI device id of vendor 10de is an NVSwitch (NVSWITCH_PCI_IDS)."""
    return device_id.lower().removeprefix("0x") in NVSWITCH_PCI_IDS
