"""Which versions of driver, CUDA, NCCL, fabric manager and DCGM belong together."""
from __future__ import annotations

from dataclasses import dataclass


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
