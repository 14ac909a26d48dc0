"""What NVLink and the fabric must show follows from the node: GPU count, NVSwitches on the PCI bus, NVML's
fabric state. Each case is fed through the real NVML adaptor from the fake pynvml, the bus from a sysfs tree."""
from __future__ import annotations

import json

import certify_fake_nvml as fakes
import pynvml
import pytest

from provision.certify.probe import nvml
from provision.certify.probe import health
from provision.certify.probe import pci
from provision.certify.probe.expect import NodeExpectation

NOT_SUPPORTED, NOT_STARTED, IN_PROGRESS, COMPLETED = (pynvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED,
                                                       pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED,
                                                       pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS,
                                                       pynvml.NVML_GPU_FABRIC_STATE_COMPLETED)
NO_NVLINK = dict(nvlinks=[], unsupported={"nvmlDeviceGetNvLinkState"})
SIX_SWITCHES = pci.NvSwitchScan(True, tuple(f"0000:0{i}:00.0" for i in range(6)), ("22a3",) * 6)
NO_SWITCH = pci.NvSwitchScan(True)
UNREADABLE = pci.NvSwitchScan(False, error="/sys/bus/pci/devices: Permission denied")


def verdicts(fake, gpu: fakes.FakeGpu, *, count: int, model: str = "H100-SXM",
             switches: pci.NvSwitchScan | None = None) -> dict[str, str]:
    fake([gpu])
    expect = NodeExpectation(node="n1", gpu_model=model, gpu_count=count)
    results = health.evaluate(nvml.snapshot(), expect, switches=switches)
    return {r.check: (r.verdict, r.detail) for r in results if r.check.startswith("gpu.nvlink")}


def test_fabric_state_values_are_nvmls():
    assert (nvml.FABRIC_STATE_NOT_SUPPORTED, nvml.FABRIC_STATE_NOT_STARTED, nvml.FABRIC_STATE_IN_PROGRESS,
            nvml.FABRIC_STATE_COMPLETED) == (NOT_SUPPORTED, NOT_STARTED, IN_PROGRESS, COMPLETED) == (0, 1, 2, 3)


def test_single_gpu_vm_as_measured_on_a_real_h100_is_not_applicable(fake):
    """1x H100 80GB HBM3 in a VM: NVML reports no NVLink and fabric state 0 (CERTIFY-FIGURES, issue 15)."""
    got = verdicts(fake, fakes.FakeGpu(**NO_NVLINK, fabric=(NOT_SUPPORTED, 0)), count=1, switches=NO_SWITCH)
    assert got["gpu.nvlink.links"][0] == "na" and "1 GPU" in got["gpu.nvlink.links"][1]
    assert got["gpu.nvlink.fabric"][0] == "na" and "state 0 = not supported" in got["gpu.nvlink.fabric"][1]
    assert got["gpu.nvlink.errors"][0] == "na"


def test_single_gpu_whose_links_all_report_down_is_not_applicable(fake):
    got = verdicts(fake, fakes.FakeGpu(nvlinks=[(0, {})] * 18, fabric=(NOT_SUPPORTED, 0)), count=1)
    assert got["gpu.nvlink.links"][0] == "na" and "18 NVLinks are down, as expected" in got["gpu.nvlink.links"][1]


def test_multi_gpu_node_without_nvswitch_on_the_bus_is_not_applicable(fake):
    got = verdicts(fake, fakes.FakeGpu(**NO_NVLINK, fabric=(NOT_SUPPORTED, 0)), count=8, switches=NO_SWITCH)
    assert got["gpu.nvlink.links"][0] == "na" and "no NVSwitch on the PCI bus" in got["gpu.nvlink.links"][1]
    assert got["gpu.nvlink.fabric"][0] == "na"


def test_pcie_cards_without_nvlink_are_not_applicable(fake):
    gpu = fakes.FakeGpu(name="NVIDIA L40S", **NO_NVLINK, fabric=(NOT_SUPPORTED, 0), pcie_gen_max=4, pcie_gen=4)
    got = verdicts(fake, gpu, count=4, model="L40S", switches=NO_SWITCH)
    assert {check: v for check, (v, _) in got.items()} == {"gpu.nvlink.links": "na", "gpu.nvlink.errors": "na",
                                                           "gpu.nvlink.fabric": "na"}


def test_fabric_not_supported_by_the_gpu_is_not_applicable_and_links_are_judged(fake):
    """HGX A100: NVSwitches on the bus, NVML has no fabric info for Ampere (NotSupported); 12 links up."""
    gpu = fakes.FakeGpu(name="NVIDIA A100-SXM4-80GB", nvlinks=[(1, {})] * 12,
                        unsupported={"nvmlDeviceGetGpuFabricInfoV"}, pcie_gen_max=4, pcie_gen=4)
    got = verdicts(fake, gpu, count=8, model="A100-SXM-80GB", switches=SIX_SWITCHES)
    assert got["gpu.nvlink.fabric"][0] == "na" and "gpu.nvlink.links" in got["gpu.nvlink.fabric"][1]
    assert got["gpu.nvlink.links"][0] == "pass"


def test_fabric_state_zero_beside_nvswitches_is_na_but_links_must_be_up(fake):
    gpu = fakes.FakeGpu(nvlinks=[(1, {})] * 16 + [(0, {})] * 2, fabric=(NOT_SUPPORTED, 0))
    got = verdicts(fake, gpu, count=8, switches=SIX_SWITCHES)
    assert got["gpu.nvlink.fabric"][0] == "na"
    assert got["gpu.nvlink.links"][0] == "fail" and "links down: 16, 17" in got["gpu.nvlink.links"][1]


def test_eight_gpu_hgx_with_links_down_fails(fake):
    gpu = fakes.FakeGpu(nvlinks=[(1, {})] * 17 + [(0, {})])
    got = verdicts(fake, gpu, count=8, switches=SIX_SWITCHES)
    assert got["gpu.nvlink.links"][0] == "fail" and "6 NVSwitches on the PCI bus" in got["gpu.nvlink.links"][1]


def test_eight_gpu_hgx_whose_gpu_reports_no_nvlink_fails(fake):
    got = verdicts(fake, fakes.FakeGpu(**NO_NVLINK, fabric=(NOT_SUPPORTED, 0)), count=8, switches=SIX_SWITCHES)
    assert got["gpu.nvlink.links"][0] == "fail" and "NVML reports no NVLink" in got["gpu.nvlink.links"][1]


def test_eight_gpu_hgx_healthy_passes(fake):
    got = verdicts(fake, fakes.FakeGpu(), count=8, switches=SIX_SWITCHES)
    assert {check: v for check, (v, _) in got.items()} == {"gpu.nvlink.links": "pass", "gpu.nvlink.errors": "pass",
                                                           "gpu.nvlink.fabric": "pass"}


@pytest.mark.parametrize("fabric, words", [((COMPLETED, pynvml.NVML_ERROR_UNKNOWN), "registration failed"),
                                           ((NOT_STARTED, 0), "not started"), ((IN_PROGRESS, 0), "in progress")])
def test_fabric_registration_failed_or_stuck_fails(fake, fabric, words):
    got = verdicts(fake, fakes.FakeGpu(fabric=fabric), count=8, switches=SIX_SWITCHES)
    assert got["gpu.nvlink.fabric"][0] == "fail" and words in got["gpu.nvlink.fabric"][1]


def test_fabric_reporting_degraded_bandwidth_warns(fake):
    got = verdicts(fake, fakes.FakeGpu(fabric_health=1), count=8, switches=SIX_SWITCHES)
    assert got["gpu.nvlink.fabric"][0] == "warn" and "degraded bandwidth" in got["gpu.nvlink.fabric"][1]


def test_gb200_tray_has_no_nvswitch_on_its_bus_but_the_fabric_state_requires_its_links(fake):
    gpu = fakes.FakeGpu(name="NVIDIA GB200", nvlinks=[(1, {})] * 17 + [(0, {})])
    got = verdicts(fake, gpu, count=4, model="GB200", switches=NO_SWITCH)
    assert got["gpu.nvlink.links"][0] == "fail" and "NVLink fabric (state completed)" in got["gpu.nvlink.links"][1]
    assert got["gpu.nvlink.fabric"][0] == "pass"


def test_unreadable_bus_on_an_nvswitch_model_warns_instead_of_guessing(fake):
    got = verdicts(fake, fakes.FakeGpu(**NO_NVLINK, fabric=(NOT_SUPPORTED, 0)), count=8, switches=UNREADABLE)
    assert got["gpu.nvlink.links"][0] == "warn" and "Permission denied" in got["gpu.nvlink.links"][1]


def test_links_down_without_any_fabric_warn(fake):
    """Two H100 NVL cards on a bridge: no switch, no fabric; a link down is worth a look, not a failure."""
    gpu = fakes.FakeGpu(name="NVIDIA H100 NVL", nvlinks=[(1, {})] * 11 + [(0, {})], fabric=(NOT_SUPPORTED, 0))
    got = verdicts(fake, gpu, count=2, model="H100-NVL", switches=NO_SWITCH)
    assert got["gpu.nvlink.links"][0] == "warn" and "links down: 11" in got["gpu.nvlink.links"][1]


def _device(root, address: str, vendor: str, klass: str, device: str) -> None:
    path = root / address
    path.mkdir()
    for name, value in (("vendor", vendor), ("class", klass), ("device", device)):
        (path / name).write_text(f"{value}\n")


def test_pci_scan_counts_nvswitches_by_id_not_by_class(tmp_path):
    _device(tmp_path, "0000:07:00.0", "0x10de", "0x068000", "0x22a3")  # H100 NVSwitch
    _device(tmp_path, "0000:08:00.0", "0x10de", "0x068000", "0x22a3")
    _device(tmp_path, "0000:1b:00.0", "0x10de", "0x030200", "0x2330")  # the H100 GPU itself
    _device(tmp_path, "0000:00:07.0", "0x10de", "0x068000", "0x03ef")  # MCP61 Ethernet: also class 0680
    _device(tmp_path, "0000:00:1f.0", "0x8086", "0x068000", "0x1234")
    scan = pci.scan(tmp_path)
    assert scan.readable and scan.count == 2 and scan.nvswitches == ("0000:07:00.0", "0000:08:00.0")
    assert scan.device_ids == ("22a3", "22a3") and scan.other_bridges == ("0000:00:07.0 (03ef)",)
    assert json.loads(json.dumps(scan.to_dict()))["nvswitches"] == ["0000:07:00.0", "0000:08:00.0"]


def test_pci_scan_of_a_missing_bus_says_so_and_counts_nothing(tmp_path):
    scan = pci.scan(tmp_path / "absent")
    assert not scan.readable and scan.count is None and "absent" in scan.error
