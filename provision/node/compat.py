"""Which versions of driver, CUDA, NCCL, fabric manager and DCGM belong together.

Every fact is a `Rule` carrying its source. The GPU roles check the same facts: `ansible_vars()` renders
them into playbooks/roles/gpu_base/vars/main.yml (`python -m provision.node.compat > that file`), and a unit
test keeps the two identical, so plain ansible-playbook refuses what `provision validate` refuses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class Rule:
    """One compatibility fact and where it comes from."""

    key: str
    value: str
    source: str


_CUDA_RELEASE_NOTES = "NVIDIA CUDA Toolkit Release Notes, table 'CUDA Toolkit and Minimum Required Driver Version'"

# Driver branch -> highest CUDA toolkit whose GA release the branch's driver supports without the
# compatibility package (minor-version compatibility aside).
DRIVER_MAX_CUDA: dict[int, Rule] = {
    branch: Rule(str(branch), cuda, _CUDA_RELEASE_NOTES)
    for branch, cuda in {
        470: "11.4",
        525: "12.0",
        530: "12.1",
        535: "12.2",
        545: "12.3",
        550: "12.4",
        555: "12.5",
        560: "12.6",
        565: "12.7",
        570: "12.8",
        575: "12.9",
        580: "13.0",
    }.items()
}

# CUDA major -> NCCL builds published for it (NVIDIA's CUDA repository names libnccl2 X+cudaY.Z).
NCCL_CUDA_MAJORS: dict[str, Rule] = {
    "11": Rule("11", "2.8-2.21", "NVIDIA NCCL release notes: CUDA 11 builds end with 2.21"),
    "12": Rule("12", "2.16-2.27", "NVIDIA NCCL release notes / CUDA repository package list"),
    "13": Rule("13", "2.27-", "NVIDIA NCCL release notes: CUDA 13 builds start with 2.27"),
}

# Fabric manager (NVSwitch systems) is released with every driver and must equal it exactly.
FABRIC_MANAGER_EQUALS_DRIVER = Rule(
    "nvidia-fabricmanager", "driver version",
    "NVIDIA Fabric Manager User Guide: the Fabric Manager package version must match the installed driver "
    "version exactly; the CUDA repository publishes nvidia-fabricmanager-BRANCH at every driver version")

# DCGM 4 ships one package per CUDA major; the right one is the CUDA major the driver supports.
DCGM_MIN_DRIVER_BRANCH = Rule(
    "dcgm", "450", "NVIDIA DCGM User Guide, Supported Platforms: 'CUDA 7.5+ and NVIDIA Driver R450+'")
DCGM_CUDA_MAJORS: dict[str, Rule] = {
    "11": Rule("11", "4.0", "NVIDIA DCGM Installation Guide: datacenter-gpu-manager-4-cuda<MAJOR> matches the "
                            "CUDA major the driver reports"),
    "12": Rule("12", "4.0", "NVIDIA DCGM Installation Guide: datacenter-gpu-manager-4-cuda<MAJOR> matches the "
                            "CUDA major the driver reports"),
    "13": Rule("13", "4.4", "DCGM 4.4 is the first release with CUDA 13 (NVIDIA dcgm-exporter 4.4.0-4.5.0: "
                            "'Update to DCGM 4.4 and Cuda 13.0')"),
}

# NVIDIA's DCGM exporter: one package for every CUDA major (datacenter-gpu-manager-exporter in the CUDA repository,
# versioned by the exporter release alone, e.g. 4.8.2-1), built against one DCGM release: each release is tagged
# <dcgm>-<exporter> and NVIDIA asks to run it with that DCGM. Exporter 4.x goes with DCGM 4, 3.x with DCGM 3.
DCGM_EXPORTER_PACKAGE = Rule(
    "datacenter-gpu-manager-exporter", "4",
    "NVIDIA DCGM documentation, Install DCGM Exporter (docs.nvidia.com/datacenter/dcgm/latest/installation/"
    "install-dcgm-exporter.html): 'Run DCGM Exporter with the DCGM version paired with that exporter release'; "
    "package versions identify the exporter version; the release tags pair DCGM 4 with exporter 4.x from "
    "4.0.0-4.0.1 on (github.com/NVIDIA/dcgm-exporter tags)")
# CUDA major -> the oldest exporter release paired with a DCGM that has that CUDA major (DCGM_CUDA_MAJORS).
DCGM_EXPORTER_CUDA_MAJORS: dict[str, Rule] = {
    "11": Rule("11", "4.0.0", "NVIDIA dcgm-exporter 4.0.0-4.0.1: the first exporter release paired with DCGM 4.0"),
    "12": Rule("12", "4.0.0", "NVIDIA dcgm-exporter 4.0.0-4.0.1: the first exporter release paired with DCGM 4.0"),
    "13": Rule("13", "4.5.0", "NVIDIA dcgm-exporter 4.4.0-4.5.0 (github.com/NVIDIA/dcgm-exporter/pull/545): "
                              "'Update to DCGM 4.4 and Cuda 13.0', the first paired with a DCGM that has CUDA 13"),
}

_DRIVER_VERSION = re.compile(r"^([0-9]{3})\.[0-9]+(\.[0-9]+)?$")  # ASCII digits only: int() reads what it matches


def version_tuple(version: str) -> tuple[int, ...]:
    """Turn "12.4" or "12.4.1" into a comparable tuple."""
    return tuple(int(part) for part in version.split("."))


def known_driver_branches() -> list[int]:
    """The branches the table covers, ascending."""
    return sorted(DRIVER_MAX_CUDA)


def max_cuda_for_branch(branch: int) -> str | None:
    """The newest CUDA the branch supports, or None for a branch the table does not know."""
    rule = DRIVER_MAX_CUDA.get(branch)
    return rule.value if rule else None


def min_branch_for_cuda(cuda: str) -> int | None:
    """The oldest known branch whose driver supports the CUDA version; None if none does."""
    wanted = version_tuple(cuda)[:2]
    for branch in known_driver_branches():
        if version_tuple(DRIVER_MAX_CUDA[branch].value) >= wanted:
            return branch
    return None


def nccl_supports_cuda(nccl: str, cuda: str) -> bool:
    """Whether NVIDIA publishes an NCCL build of this version for this CUDA major."""
    rule = NCCL_CUDA_MAJORS.get(cuda.split(".")[0])
    if rule is None:
        return False
    low, _, high = rule.value.partition("-")
    version = version_tuple(nccl)[:2]
    if version < version_tuple(low):
        return False
    return not high or version <= version_tuple(high)


def driver_version_problem(branch: int, version: str) -> str | None:
    """Why an exact driver version does not fit its branch (None when it does)."""
    match = _DRIVER_VERSION.match(version)
    if not match:
        return f"'{version}' is not a driver version"
    if int(match.group(1)) != branch:
        return f"'{version}' is not on branch {branch}"
    return None


def fabric_manager_version(driver_version: str) -> str:
    """The fabric manager version a driver needs: the same version (FABRIC_MANAGER_EQUALS_DRIVER)."""
    return driver_version


def dcgm_package_for_branch(branch: int) -> str | None:
    """The DCGM 4 package for the CUDA major the branch's driver supports; None if no DCGM fits."""
    max_cuda = max_cuda_for_branch(branch)
    if max_cuda is None or branch < int(DCGM_MIN_DRIVER_BRANCH.value):
        return None
    major = max_cuda.split(".")[0]
    return f"datacenter-gpu-manager-4-cuda{major}" if major in DCGM_CUDA_MAJORS else None


def dcgm_min_version_for_branch(branch: int) -> str | None:
    """The oldest DCGM 4 release with a package for the branch's CUDA major."""
    max_cuda = max_cuda_for_branch(branch)
    rule = DCGM_CUDA_MAJORS.get(max_cuda.split(".")[0]) if max_cuda else None
    return rule.value if rule else None


def dcgm_exporter_min_version_for_branch(branch: int) -> str | None:
    """The oldest DCGM exporter release paired with a DCGM that has the branch's CUDA major."""
    max_cuda = max_cuda_for_branch(branch)
    rule = DCGM_EXPORTER_CUDA_MAJORS.get(max_cuda.split(".")[0]) if max_cuda else None
    return rule.value if rule else None


def dcgm_exporter_version_problem(branch: int, version: str) -> str | None:
    """Why a pinned exporter package version (4.8.2-1, with or without an epoch) does not fit the branch's DCGM."""
    upstream = version.split(":")[-1].rsplit("-", 1)[0]
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*", upstream):
        return f"'{version}' is not a package version such as 4.8.2-1"
    if upstream.split(".")[0] != DCGM_EXPORTER_PACKAGE.value:
        return f"exporter {upstream} is not paired with DCGM {DCGM_EXPORTER_PACKAGE.value}"
    minimum = dcgm_exporter_min_version_for_branch(branch)
    if minimum and version_tuple(upstream) < version_tuple(minimum):
        return f"exporter {upstream} is older than {minimum}, the first paired with a DCGM for this branch's CUDA major"
    return None


def ansible_vars() -> dict:
    """The table as the GPU roles read it (gpu_base_compat), sources included."""
    return {"gpu_base_compat": {
        "driver_max_cuda": {branch: rule.value for branch, rule in sorted(DRIVER_MAX_CUDA.items())},
        "nccl_cuda_majors": {major: {"min": rule.value.partition("-")[0], "max": rule.value.partition("-")[2]}
                             for major, rule in NCCL_CUDA_MAJORS.items()},
        "dcgm_cuda_majors": {major: {"package": f"datacenter-gpu-manager-4-cuda{major}", "min_version": rule.value}
                             for major, rule in DCGM_CUDA_MAJORS.items()},
        "dcgm_min_driver_branch": int(DCGM_MIN_DRIVER_BRANCH.value),
        "dcgm_exporter": {"package": DCGM_EXPORTER_PACKAGE.key, "major": DCGM_EXPORTER_PACKAGE.value,
                          "cuda_majors": {major: {"min_version": rule.value}
                                          for major, rule in DCGM_EXPORTER_CUDA_MAJORS.items()}},
        "sources": {
            "driver_max_cuda": _CUDA_RELEASE_NOTES,
            "nccl_cuda_majors": "; ".join(f"CUDA {k}: {r.source}" for k, r in NCCL_CUDA_MAJORS.items()),
            "fabric_manager": FABRIC_MANAGER_EQUALS_DRIVER.source,
            "dcgm": "; ".join([DCGM_MIN_DRIVER_BRANCH.source]
                              + [f"CUDA {k}: {r.source}" for k, r in DCGM_CUDA_MAJORS.items()]),
            "dcgm_exporter": "; ".join([DCGM_EXPORTER_PACKAGE.source]
                                       + [f"CUDA {k}: {r.source}" for k, r in DCGM_EXPORTER_CUDA_MAJORS.items()]),
        },
    }}


def render_ansible_vars() -> str:
    """The text of playbooks/roles/gpu_base/vars/main.yml."""
    header = ("---\n# GENERATED from provision/node/compat.py by `python -m provision.node.compat`; "
              "do not edit by hand.\n"
              "# tests/unit/node/test_compat.py fails when this file and the Python table disagree.\n")
    return header + yaml.safe_dump(ansible_vars(), sort_keys=False, width=120)


if __name__ == "__main__":
    print(render_ansible_vars(), end="")
