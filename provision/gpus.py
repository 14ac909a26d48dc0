"""The GPU models the tool knows: identity (PCI ids, names NVML reports) and topology facts."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    """One GPU model as the spec names it, with what preflight, roles and certify need to know."""

    key: str  # the name used in specs, e.g. "H100-SXM"
    description: str
    pci_device_ids: tuple[str, ...]  # lower-case hex, vendor 10de
    nvml_names: tuple[str, ...]  # substrings of nvmlDeviceGetName()
    memory_gib: int
    architecture: str  # ampere, ada, hopper
    form_factor: str  # sxm or pcie
    nvswitch: bool  # 8-GPU baseboards with NVSwitch need fabric manager
    gres_type: str  # the Slurm gres type name, e.g. gpu:h100
    min_driver_branch: int  # the first driver branch that supports the model

    def matches_nvml_name(self, name: str) -> bool:
        """Whether nvmlDeviceGetName() names this model; a name ending in a number ends there ("L4" is not "L40")."""
        return any(re.search(rf"(?<!\w){re.escape(part)}(?!\d)", name, re.IGNORECASE) for part in self.nvml_names)


PCI_VENDOR_NVIDIA = "10de"

# PCI device ids from the PCI ID repository (pci-ids.ucw.cz, vendor 10de); minimum branches from
# NVIDIA's driver release notes (first branch listing the product).
_MODELS = (
    GpuModel("H100-SXM", "NVIDIA H100 SXM5 80GB", ("2330",), ("H100 80GB HBM3", "H100 SXM"), 80,
             "hopper", "sxm", True, "h100", 525),
    GpuModel("H100-PCIe", "NVIDIA H100 PCIe 80GB", ("2331",), ("H100 PCIe",), 80,
             "hopper", "pcie", False, "h100", 525),
    GpuModel("H200-SXM", "NVIDIA H200 SXM 141GB", ("2335",), ("H200",), 141,
             "hopper", "sxm", True, "h200", 550),
    GpuModel("A100-SXM-80GB", "NVIDIA A100 SXM4 80GB", ("20b2",), ("A100-SXM4-80GB", "A100 SXM4 80GB"), 80,
             "ampere", "sxm", True, "a100", 450),
    GpuModel("A100-SXM-40GB", "NVIDIA A100 SXM4 40GB", ("20b0",), ("A100-SXM4-40GB", "A100 SXM4 40GB"), 40,
             "ampere", "sxm", True, "a100", 450),
    GpuModel("A100-PCIe", "NVIDIA A100 PCIe 40/80GB", ("20f1", "20b5"), ("A100-PCIE", "A100 80GB PCIe"), 80,
             "ampere", "pcie", False, "a100", 450),
    GpuModel("L40S", "NVIDIA L40S 48GB", ("26b9",), ("L40S",), 48, "ada", "pcie", False, "l40s", 525),
    GpuModel("L4", "NVIDIA L4 24GB", ("27b8",), ("NVIDIA L4",), 24, "ada", "pcie", False, "l4", 525),
    GpuModel("A10G", "NVIDIA A10G 24GB", ("2237",), ("A10G",), 24, "ampere", "pcie", False, "a10g", 470),
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
