"""The GPU catalogue maps what lspci and NVML report back to the model a spec names."""
from __future__ import annotations

import pytest

from provision import gpus


@pytest.mark.parametrize("name, key", [("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA H100 PCIe", "H100-PCIe"),
                                       ("NVIDIA H200", "H200-SXM"), ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
                                       ("NVIDIA L40S", "L40S"), ("NVIDIA A10G", "A10G"),
                                       ("NVIDIA A100-PCIE-40GB", "A100-PCIe"), ("NVIDIA L4", "L4")])
def test_nvml_names_map_to_models(name, key):
    assert gpus.model_for_nvml_name(name).key == key


def test_unknown_names_and_ids_map_to_none():
    assert gpus.model_for_nvml_name("NVIDIA GeForce RTX 4090") is None
    assert gpus.model_for_nvml_name("NVIDIA L40") is None  # not the L4, though its name starts so
    assert gpus.model_for_pci_device("0x2684") is None


def test_pci_ids_map_to_models():
    assert gpus.model_for_pci_device("0x2330").key == "H100-SXM"
    assert gpus.model_for_pci_device("26B9").key == "L40S"


def test_every_model_is_found_by_its_own_names_and_ids():
    for model in gpus.GPU_MODELS.values():
        assert all(gpus.model_for_pci_device(i) is model for i in model.pci_device_ids)
        assert all(gpus.model_for_nvml_name(f"NVIDIA {n}") is model for n in model.nvml_names), model.key
