"""The GPU catalogue maps what lspci and NVML report back to the model a spec names."""
from __future__ import annotations

import pytest

from provision.certify.probe import gpus
from provision.node import compat


@pytest.mark.parametrize("name, key", [("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA H100 PCIe", "H100-PCIe"),
                                       ("NVIDIA H200", "H200-SXM"), ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
                                       ("NVIDIA L40S", "L40S"), ("NVIDIA A10G", "A10G"),
                                       ("NVIDIA A100-PCIE-40GB", "A100-PCIe"), ("NVIDIA L4", "L4"),
                                       ("NVIDIA L40", "L40"), ("NVIDIA H100 NVL", "H100-NVL"), ("NVIDIA A30", "A30"),
                                       ("NVIDIA B200", "B200"), ("NVIDIA B300 SXM6 AC", "B300"),
                                       ("NVIDIA GB200", "GB200")])
def test_nvml_names_map_to_models(name, key):
    assert gpus.model_for_nvml_name(name).key == key


@pytest.mark.parametrize("name, not_key", [("NVIDIA L40", "L4"), ("NVIDIA L40S", "L40"), ("NVIDIA L40S", "L4"),
                                           ("NVIDIA L4", "L40"), ("NVIDIA GB200", "B200"), ("NVIDIA B200", "GB200"),
                                           ("NVIDIA GB300", "B300"), ("NVIDIA H100 NVL", "H100-SXM"),
                                           ("NVIDIA A30X", "A30")])
def test_a_name_is_not_taken_for_a_neighbour(name, not_key):
    assert not gpus.gpu_model(not_key).matches_nvml_name(name)


def test_unknown_names_and_ids_map_to_none():
    assert gpus.model_for_nvml_name("NVIDIA GeForce RTX 4090") is None
    assert gpus.model_for_nvml_name("NVIDIA GB300") is None  # not the B300, though its name ends so
    assert gpus.model_for_pci_device("0x2684") is None


@pytest.mark.parametrize("device, key", [("0x2330", "H100-SXM"), ("26B9", "L40S"), ("26b5", "L40"),
                                         ("2321", "H100-NVL"), ("20b7", "A30"), ("2901", "B200"), ("2909", "B200"),
                                         ("3182", "B300"), ("2941", "GB200")])
def test_pci_ids_map_to_models(device, key):
    assert gpus.model_for_pci_device(device).key == key


def test_every_model_is_found_by_its_own_names_and_ids():
    for model in gpus.GPU_MODELS.values():
        assert all(gpus.model_for_pci_device(i) is model for i in model.pci_device_ids)
        assert all(gpus.model_for_nvml_name(f"NVIDIA {n}") is model for n in model.nvml_names), model.key


def test_pci_ids_are_unique_and_no_gpu_is_taken_for_an_nvswitch():
    ids = [i for m in gpus.GPU_MODELS.values() for i in m.pci_device_ids]
    assert len(ids) == len(set(ids))
    assert not set(ids) & set(gpus.NVSWITCH_PCI_IDS)
    assert gpus.is_nvswitch("0x22A3") and gpus.is_nvswitch("1af1") and not gpus.is_nvswitch("2330")


@pytest.mark.parametrize("model", list(gpus.GPU_MODELS.values()), ids=lambda m: m.key)
def test_nvlink_facts_agree_with_each_other(model):
    assert model.nvlink in gpus.NVLINK_KINDS
    if model.nvswitch:  # fabric manager boards carry 8 GPUs on baseboard NVSwitches
        assert model.nvlink in (gpus.NVLINK_BASEBOARD, gpus.NVLINK_BASEBOARD_NVLSM) and model.board_gpus == 8
    if model.nvlink == gpus.NVLINK_NONE:
        assert model.board_gpus == 1 and model.form_factor == "pcie"
    assert model.gres_type == model.gres_type.lower() and " " not in model.gres_type


def test_gb200_is_the_compute_tray_nvml_reports():
    tray = gpus.gpu_model("GB200")
    assert tray.board_gpus == 4 and tray.nvlink == gpus.NVLINK_SWITCH_TRAY and not tray.nvswitch


@pytest.mark.parametrize("model", list(gpus.GPU_MODELS.values()), ids=lambda m: m.key)
def test_some_branch_of_the_compat_table_supports_the_model(model):
    assert any(b >= model.min_driver_branch for b in compat.known_driver_branches())


def test_blackwell_needs_a_branch_that_knows_it():
    assert gpus.gpu_model("B200").min_driver_branch >= 570
    assert gpus.gpu_model("B300").min_driver_branch >= gpus.gpu_model("B200").min_driver_branch
