"""The NVML adaptor against a fake pynvml: every field read, per-field and per-GPU errors contained."""
from __future__ import annotations

import certify_fake_nvml as fakes
import pynvml
import pytest

from provision.certify.probe import nvml


def test_snapshot_reads_every_field_of_a_healthy_gpu(fake):
    fake([fakes.FakeGpu(power_mw=123_456, pids=[])], driver="570.86.15", cuda=12080)
    snap = nvml.snapshot()
    assert snap.available and snap.driver_version == "570.86.15" and snap.cuda_driver_version == "12.8"
    gpu = snap.gpus[0]
    assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.pci_bus_id == "00000000:1B:00.0"
    assert gpu.ecc_enabled is True and gpu.ecc_pending_enabled is True and gpu.ecc_volatile_uncorrected == 0
    assert (gpu.remap_pending, gpu.remap_failure) == (False, False)
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (5, 5, 16, 16)
    assert len(gpu.nvlinks) == 18 and all(link.active for link in gpu.nvlinks)
    assert (gpu.fabric_state, gpu.fabric_status) == (nvml.FABRIC_STATE_COMPLETED, 0)
    assert gpu.power_w == pytest.approx(123.456) and gpu.power_limit_w == pytest.approx(700.0)
    assert (gpu.temperature_c, gpu.temperature_slowdown_c, gpu.temperature_shutdown_c) == (45, 87, 92)
    assert gpu.compute_pids == [] and gpu.mig_current is False and gpu.persistence_mode is True
    assert gpu.errors == {} and gpu.error is None


@pytest.mark.parametrize("cuda, expected", [(12080, "12.8"), (13000, "13.0"), (12040, "12.4"), (11040, "11.4")])
def test_cuda_driver_version_is_major_dot_minor(fake, cuda, expected):
    fake(cuda=cuda)
    assert nvml.snapshot().cuda_driver_version == expected


def test_not_supported_field_is_listed_and_others_still_read(fake):
    fake([fakes.FakeGpu(unsupported={"nvmlDeviceGetRemappedRows", "nvmlDeviceGetGpuFabricInfoV"})])
    gpu = nvml.snapshot().gpus[0]
    assert "remap_pending" in gpu.unsupported and gpu.remap_pending is None
    assert "fabric_state" in gpu.unsupported and gpu.fabric_state is None
    assert gpu.ecc_enabled is True and gpu.temperature_c == 45
    assert gpu.errors == {}


def test_other_nvml_error_on_a_field_is_recorded_not_raised(fake):
    fake([fakes.FakeGpu(failing={"nvmlDeviceGetTotalEccErrors": pynvml.NVML_ERROR_GPU_IS_LOST})])
    gpu = nvml.snapshot().gpus[0]
    assert "ecc_volatile_uncorrected" in gpu.errors and "lost" in gpu.errors["ecc_volatile_uncorrected"].lower()
    assert gpu.ecc_volatile_uncorrected is None
    assert gpu.name == "NVIDIA H100 80GB HBM3"


def test_gpu_without_handle_becomes_an_error_record_and_others_are_read(fake):
    fake([fakes.FakeGpu(handle_error=pynvml.NVML_ERROR_GPU_IS_LOST), fakes.FakeGpu(bus_id="00000000:2A:00.0")])
    snap = nvml.snapshot()
    assert snap.gpus[0].error and "GPU 0" in snap.gpus[0].error and snap.gpus[0].name is None
    assert snap.gpus[1].error is None and snap.gpus[1].pci_bus_id == "00000000:2A:00.0"


def test_init_failure_gives_unavailable_snapshot_with_reason(fake):
    fake(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    snap = nvml.snapshot()
    assert snap.available is False and "Driver Not Loaded" in snap.reason and snap.gpus == []


def test_missing_package_is_unavailable(monkeypatch):
    monkeypatch.setattr(nvml, "pynvml", None)
    snap = nvml.snapshot()
    assert snap.available is False and "nvidia-ml-py" in snap.reason


def test_nvlinks_stop_at_first_unsupported_link_and_keep_error_counters(fake):
    links = [(1, {1: 2}), (0, {}), (1, {2: 5})]
    fake([fakes.FakeGpu(nvlinks=links)])
    gpu = nvml.snapshot().gpus[0]
    assert [link.active for link in gpu.nvlinks] == [True, False, True]
    assert gpu.nvlinks[0].errors["recovery"] == 2 and gpu.nvlinks[2].errors["crc_flit"] == 5


def test_gpu_without_nvlink_lists_nvlinks_unsupported(fake):
    fake([fakes.FakeGpu(nvlinks=[], unsupported={"nvmlDeviceGetNvLinkState"})])
    gpu = nvml.snapshot().gpus[0]
    assert gpu.nvlinks is None and "nvlinks" in gpu.unsupported


def test_old_driver_falls_back_to_throttle_reasons_and_old_temperature_call(fake):
    nv = fake([fakes.FakeGpu(reasons=nvml.EVENT_HW_SLOWDOWN, temperature=61)])
    nv.missing_functions = {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetTemperatureV"}
    gpu = nvml.snapshot().gpus[0]
    assert gpu.clocks_event_reasons == nvml.EVENT_HW_SLOWDOWN and gpu.temperature_c == 61
    assert nv.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 1 and nv.calls["nvmlDeviceGetTemperature"] == 1


def test_live_sample_reads_the_load_fields(fake):
    fake([fakes.FakeGpu(pcie_gen=4, pcie_width=8, reasons=nvml.EVENT_SW_POWER_CAP, temperature=70, power_mw=650_000)])
    with nvml.Session() as session:
        sample = session.live(0)
    assert (sample.pcie_gen_current, sample.pcie_width_current, sample.temperature_c) == (4, 8, 70)
    assert sample.clocks_event_reasons == nvml.EVENT_SW_POWER_CAP and sample.power_w == pytest.approx(650.0)


def test_snapshot_is_plain_data_for_json(fake):
    import json

    fake()
    text = json.dumps(nvml.snapshot().to_dict())
    assert '"nvlinks": [{"link": 0, "active": true' in text


def test_fabric_state_constants_are_pynvmls_and_the_health_mask_is_read(fake):
    assert [nvml.FABRIC_STATE_NOT_SUPPORTED, nvml.FABRIC_STATE_NOT_STARTED, nvml.FABRIC_STATE_IN_PROGRESS,
            nvml.FABRIC_STATE_COMPLETED] == [pynvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED,
                                             pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED,
                                             pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS,
                                             pynvml.NVML_GPU_FABRIC_STATE_COMPLETED]
    assert nvml.FABRIC_HEALTH_DEGRADED_BW_TRUE == pynvml.NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE
    fake([fakes.FakeGpu(fabric=(0, 0), fabric_health=1)])
    gpu = nvml.snapshot().gpus[0]
    assert (gpu.fabric_state, gpu.fabric_status, gpu.fabric_health_mask) == (0, 0, 1)
