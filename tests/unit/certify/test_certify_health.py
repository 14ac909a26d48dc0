"""GPU health checks, fed through the real NVML adaptor from a fake pynvml: pass and fail for every check."""
from __future__ import annotations

import certify_fake_nvml as fakes
import pynvml
import pytest

from provision.certify.probe import nvml
from provision.certify.probe import health
from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.health import LoadSummary

EXPECT = NodeExpectation(node="gpu01", gpu_model="H100-SXM", gpu_count=1, driver_branch=570, cuda_version="12.8")


def run(fake, gpus=None, expect=EXPECT, load=None, **kwargs):
    fake(gpus if gpus is not None else [fakes.FakeGpu()], **kwargs)
    return health.evaluate(nvml.snapshot(), expect, load)


def result(results, check, subject="gpu0"):
    matches = [r for r in results if r.check == check and r.subject == subject]
    assert len(matches) == 1, f"{check}: {matches}"
    return matches[0]


def test_healthy_gpu_passes_every_check(fake):
    results = run(fake)
    verdicts = {r.check: r.verdict for r in results}
    assert verdicts.pop("gpu.retired_pages") == "na"  # Hopper remaps rows instead
    assert set(verdicts.values()) == {"pass"}, verdicts
    assert {c.__name__ for c in health.GPU_CHECKS} >= {"ecc_mode", "pcie_link", "throttle", "mig"}


# (check, how the GPU differs from a healthy one, expected verdict, expectation override)
CASES = [
    ("gpu.model", dict(name="NVIDIA A100-SXM4-80GB"), "fail", {}),
    ("gpu.persistence_mode", dict(persistence=0), "fail", {}),
    ("gpu.ecc.mode", dict(ecc=(0, 0)), "fail", {}),
    ("gpu.ecc.mode", dict(ecc=(1, 0)), "warn", {}),
    ("gpu.ecc.mode", dict(ecc=(0, 0)), "pass", {"ecc": False}),
    ("gpu.ecc.volatile_uncorrected", dict(ecc_volatile_uncorrected=3), "fail", {}),
    ("gpu.row_remap.pending", dict(remapped=(0, 1, 1, 0)), "fail", {}),
    ("gpu.row_remap.failure", dict(remapped=(0, 0, 0, 1)), "fail", {}),
    ("gpu.row_remap.pending", dict(unsupported={"nvmlDeviceGetRemappedRows"}), "na", {}),
    ("gpu.retired_pages", dict(unsupported={"nvmlDeviceGetRemappedRows"}), "pass", {}),
    ("gpu.retired_pages", dict(unsupported={"nvmlDeviceGetRemappedRows"}, retired_pending=1), "fail", {}),
    ("gpu.retired_pages", dict(unsupported={"nvmlDeviceGetRemappedRows"}, retired_sbe=60), "fail", {}),
    ("gpu.retired_pages", dict(unsupported={"nvmlDeviceGetRemappedRows"}, retired_dbe=2), "warn", {}),
    ("gpu.pcie.link", dict(pcie_width=8), "warn", {}),
    ("gpu.pcie.link", dict(pcie_gen=1), "pass", {}),  # idle down-training is not judged
    ("gpu.pcie.link", dict(pcie_gen_max=4, pcie_gen=4), "warn", {}),  # H100 in a Gen4 slot
    # an 8-GPU node whose GPU NVML places on a fabric (state 3): every link must be up (see test_gpu_nvlink_topology)
    ("gpu.nvlink.links", dict(nvlinks=[(1, {})] * 17 + [(0, {})]), "fail", {"gpu_count": 8}),
    ("gpu.nvlink.links", dict(nvlinks=[], unsupported={"nvmlDeviceGetNvLinkState"}), "fail", {"gpu_count": 8}),
    ("gpu.nvlink.errors", dict(nvlinks=[(1, {3: 7})] + [(1, {})] * 17), "warn", {}),
    ("gpu.nvlink.fabric", dict(fabric=(2, 0)), "fail", {}),
    ("gpu.nvlink.fabric", dict(fabric=(3, pynvml.NVML_ERROR_UNKNOWN)), "fail", {}),
    ("gpu.nvlink.fabric", dict(unsupported={"nvmlDeviceGetGpuFabricInfoV"}), "na", {}),
    ("gpu.throttle", dict(reasons=nvml.EVENT_HW_SLOWDOWN), "fail", {}),
    ("gpu.throttle", dict(reasons=nvml.EVENT_HW_THERMAL | nvml.EVENT_GPU_IDLE), "fail", {}),
    ("gpu.throttle", dict(reasons=nvml.EVENT_HW_POWER_BRAKE), "fail", {}),
    ("gpu.throttle", dict(reasons=nvml.EVENT_SW_THERMAL), "warn", {}),
    ("gpu.throttle", dict(reasons=nvml.EVENT_SW_POWER_CAP | nvml.EVENT_GPU_IDLE), "pass", {}),
    ("gpu.temperature", dict(temperature=88), "fail", {}),
    ("gpu.temperature", dict(temperature=84), "warn", {}),
    ("gpu.power", dict(power_mw=800_000), "fail", {}),
    ("gpu.power", dict(power_mw=720_000), "warn", {}),
    ("gpu.processes", dict(pids=[4242]), "fail", {}),
    ("gpu.mig", dict(mig=(1, 1)), "fail", {}),
    ("gpu.mig", dict(mig=(0, 1)), "warn", {}),
    ("gpu.mig", dict(mig=(1, 1)), "pass", {"mig": True}),
    ("gpu.mig", dict(unsupported={"nvmlDeviceGetMigMode"}), "fail", {"mig": True}),
    ("gpu.mig", dict(unsupported={"nvmlDeviceGetMigMode"}), "pass", {}),
]


@pytest.mark.parametrize("check, change, verdict, override", CASES,
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_each_check_flags_its_fault(fake, check, change, verdict, override):
    expect = NodeExpectation(**{**EXPECT.to_dict(), **override})
    got = result(run(fake, [fakes.FakeGpu(**change)], expect), check)
    assert got.verdict == verdict, got
    assert got.node == "gpu01" and got.subject == "gpu0"


def test_every_per_gpu_check_has_a_failing_case():
    checks_with_fail = {c[0] for c in CASES if c[2] == "fail"}
    produced = {"gpu.model", "gpu.persistence_mode", "gpu.ecc.mode", "gpu.ecc.volatile_uncorrected",
                "gpu.row_remap.pending", "gpu.row_remap.failure", "gpu.retired_pages", "gpu.nvlink.links",
                "gpu.nvlink.fabric", "gpu.throttle", "gpu.temperature", "gpu.power", "gpu.processes", "gpu.mig"}
    assert produced <= checks_with_fail


def test_pcie_link_below_maximum_under_load_fails(fake):
    load = {0: LoadSummary(samples=10, pcie_gen_max_seen=4, pcie_width_max_seen=16)}
    got = result(run(fake, [fakes.FakeGpu(pcie_gen=1)], load=load), "gpu.pcie.link")
    assert got.verdict == "fail" and got.value == "Gen4 x16" and got.threshold == "Gen5 x16"


def test_pcie_link_at_maximum_under_load_passes_although_idle_reading_is_low(fake):
    load = {0: LoadSummary(samples=3, pcie_gen_max_seen=5, pcie_width_max_seen=16)}
    assert result(run(fake, [fakes.FakeGpu(pcie_gen=1)], load=load), "gpu.pcie.link").verdict == "pass"


def test_throttle_seen_only_under_load_still_fails(fake):
    load = {0: LoadSummary(samples=5, event_reasons=nvml.EVENT_HW_POWER_BRAKE)}
    assert result(run(fake, load=load), "gpu.throttle").verdict == "fail"


def test_hottest_and_highest_power_under_load_are_judged(fake):
    load = {0: LoadSummary(samples=5, temperature_max_c=90, power_max_w=790.0)}
    results = run(fake, load=load)
    assert result(results, "gpu.temperature").verdict == "fail"
    assert result(results, "gpu.power").verdict == "fail"


def test_pcie_model_without_nvlink_is_not_applicable(fake):
    expect = NodeExpectation(**{**EXPECT.to_dict(), "gpu_model": "L40S"})
    gpu = fakes.FakeGpu(name="NVIDIA L40S", nvlinks=[], unsupported={"nvmlDeviceGetNvLinkState"}, pcie_gen_max=4,
                        pcie_gen=4, fabric=(0, 0))  # fabric state 0: not supported
    results = run(fake, [gpu], expect)
    assert result(results, "gpu.nvlink.links").verdict == "na"
    assert result(results, "gpu.nvlink.errors").verdict == "na"
    assert result(results, "gpu.nvlink.fabric").verdict == "na"
    assert result(results, "gpu.pcie.link").verdict == "pass"


def test_unsupported_field_is_na_and_failed_read_is_warn(fake):
    gpus = [fakes.FakeGpu(unsupported={"nvmlDeviceGetPowerUsage"}),
            fakes.FakeGpu(failing={"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_UNKNOWN})]
    results = run(fake, gpus, NodeExpectation(**{**EXPECT.to_dict(), "gpu_count": 2}))
    assert result(results, "gpu.power", "gpu0").verdict == "na"
    assert result(results, "gpu.power", "gpu1").verdict == "warn"


def test_unreadable_gpu_fails_instead_of_crashing(fake):
    gpus = [fakes.FakeGpu(handle_error=pynvml.NVML_ERROR_GPU_IS_LOST), fakes.FakeGpu()]
    results = run(fake, gpus, NodeExpectation(**{**EXPECT.to_dict(), "gpu_count": 2}))
    assert result(results, "gpu.readable", "gpu0").verdict == "fail"
    assert result(results, "gpu.model", "gpu1").verdict == "pass"


# Node-level checks: (fake NVML settings, expectation override, check, verdict)
NODE_CASES = [
    (dict(gpus=[fakes.FakeGpu()] * 7), {"gpu_count": 8}, "gpu.count", "fail"),
    (dict(gpus=[fakes.FakeGpu()] * 9), {"gpu_count": 8}, "gpu.count", "warn"),
    (dict(gpus=[fakes.FakeGpu()] * 8), {"gpu_count": 8}, "gpu.count", "pass"),
    (dict(driver="565.57.01"), {}, "gpu.driver.version", "fail"),
    (dict(driver="570.86.15"), {"driver_version": "570.124.06"}, "gpu.driver.version", "fail"),
    (dict(driver="570.124.06"), {"driver_version": "570.124.06"}, "gpu.driver.version", "pass"),
    (dict(cuda=12040), {}, "gpu.driver.cuda_version", "fail"),
    (dict(cuda=13000), {}, "gpu.driver.cuda_version", "pass"),
    (dict(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED), {}, "gpu.nvml", "fail"),
    (dict(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED), {}, "gpu.count", "fail"),
    (dict(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND), {"gpu_count": 0, "gpu_model": None}, "gpu.nvml", "na"),
]


@pytest.mark.parametrize("nvml_kwargs, override, check, verdict", NODE_CASES)
def test_node_level_checks(fake, nvml_kwargs, override, check, verdict):
    expect = NodeExpectation(**{**EXPECT.to_dict(), **override})
    got = result(run(fake, expect=expect, **nvml_kwargs), check, subject=None)
    assert got.verdict == verdict, got


def test_no_nvml_and_no_gpu_expected_reports_every_node_check_na_with_reason(fake):
    expect = NodeExpectation(node="login01")
    results = run(fake, expect=expect, init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    assert {r.verdict for r in results} == {"na"}
    assert all("NVML Shared Library Not Found" in r.detail for r in results)
