"""The compatibility table: every fact has a source, lookups are right, and the roles read the same table."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provision.node import compat

ROLE_VARS = Path(__file__).resolve().parents[3] / "playbooks/roles/gpu_base/vars/main.yml"


def _all_rules() -> list[compat.Rule]:
    return [*compat.DRIVER_MAX_CUDA.values(), *compat.NCCL_CUDA_MAJORS.values(), *compat.DCGM_CUDA_MAJORS.values(),
            compat.FABRIC_MANAGER_EQUALS_DRIVER, compat.DCGM_MIN_DRIVER_BRANCH, compat.DCGM_EXPORTER_PACKAGE,
            *compat.DCGM_EXPORTER_CUDA_MAJORS.values()]


def test_every_rule_names_its_source():
    assert all(rule.source.strip() for rule in _all_rules())


def test_the_roles_table_is_generated_from_this_module():
    assert ROLE_VARS.read_text() == compat.render_ansible_vars(), \
        "regenerate: python -m provision.node.compat > playbooks/roles/gpu_base/vars/main.yml"
    assert yaml.safe_load(ROLE_VARS.read_text()) == compat.ansible_vars()


@pytest.mark.parametrize("branch, expected", [(470, "11.4"), (535, "12.2"), (570, "12.8"), (580, "13.0"), (999, None)])
def test_max_cuda_for_branch(branch, expected):
    assert compat.max_cuda_for_branch(branch) == expected


@pytest.mark.parametrize("cuda, expected", [("12.2", 535), ("12.8", 570), ("12.9", 575), ("13.0", 580),
                                            ("11.0", 470), ("14.0", None)])
def test_min_branch_for_cuda(cuda, expected):
    assert compat.min_branch_for_cuda(cuda) == expected


@pytest.mark.parametrize("nccl, cuda, expected", [("2.26.2", "12.8", True), ("2.12.12", "12.8", False),
                                                  ("2.21.5", "11.8", True), ("2.26.2", "11.8", False),
                                                  ("2.27.3", "13.0", True), ("2.26.2", "13.0", False),
                                                  ("2.26.2", "10.2", False)])
def test_nccl_supports_cuda(nccl, cuda, expected):
    assert compat.nccl_supports_cuda(nccl, cuda) is expected


@pytest.mark.parametrize("branch, version, expected", [
    (570, "570.124.06", None),
    (570, "570.86", None),
    (570, "550.54.15", "'550.54.15' is not on branch 570"),
    (570, "570", "'570' is not a driver version"),
    (570, "latest", "'latest' is not a driver version"),
])
def test_driver_version_problem(branch, version, expected):
    assert compat.driver_version_problem(branch, version) == expected


def test_fabric_manager_version_is_the_driver_version():
    assert compat.fabric_manager_version("570.124.06") == "570.124.06"


@pytest.mark.parametrize("branch, package, minimum", [
    (470, "datacenter-gpu-manager-4-cuda11", "4.0"),
    (570, "datacenter-gpu-manager-4-cuda12", "4.0"),
    (580, "datacenter-gpu-manager-4-cuda13", "4.4"),
    (999, None, None),
])
def test_dcgm_package_follows_the_branchs_cuda_major(branch, package, minimum):
    assert compat.dcgm_package_for_branch(branch) == package
    assert compat.dcgm_min_version_for_branch(branch) == minimum


def test_every_cuda_major_with_a_dcgm_package_has_an_exporter_rule():
    assert set(compat.DCGM_EXPORTER_CUDA_MAJORS) == set(compat.DCGM_CUDA_MAJORS)


@pytest.mark.parametrize("branch, minimum", [(535, "4.0.0"), (570, "4.0.0"), (580, "4.5.0"), (999, None)])
def test_dcgm_exporter_minimum_follows_the_branchs_cuda_major(branch, minimum):
    assert compat.dcgm_exporter_min_version_for_branch(branch) == minimum


@pytest.mark.parametrize("branch, version, problem", [
    (570, "4.8.2-1", None),
    (570, "1:4.1.3-1", None),  # an epoch, should NVIDIA's package carry one, is not part of the release
    (580, "4.5.0-1", None),
    (580, "4.4.1-1", "exporter 4.4.1 is older than 4.5.0, the first paired with a DCGM for this branch's CUDA major"),
    (570, "3.3.9-1", "exporter 3.3.9 is not paired with DCGM 4"),
    (570, "latest", "'latest' is not a package version such as 4.8.2-1"),
])
def test_a_pinned_dcgm_exporter_must_be_paired_with_dcgm_4_and_the_cuda_major(branch, version, problem):
    assert compat.dcgm_exporter_version_problem(branch, version) == problem
