"""The GPU instance types the tool knows, for checking a spec without calling AWS.

Facts from EC2 DescribeInstanceTypes (GpuInfo, EfaInfo.MaximumEfaInterfaces, VCpuInfo, MemoryInfo).
At `up` the live DescribeInstanceTypes answer is used for the network layout; this table only lets
`provision validate` catch a wrong gpu block or an EFA request on a type without EFA.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuInstanceType:
    """One GPU instance type: its GPUs, EFA interfaces and size."""

    name: str
    gpu_model: str  # a key of provision.certify.probe.gpus.GPU_MODELS
    gpu_count: int
    efa_interfaces: int  # 0 when the type has no EFA
    vcpus: int
    memory_gib: int


def _sizes(family: str, model: str, rows: tuple[tuple[str, int, int, int, int], ...]) -> list[GpuInstanceType]:
    """Expand (size, gpus, efa, vcpus, memory) rows of one family."""
    return [GpuInstanceType(f"{family}.{size}", model, gpus, efa, vcpus, mem) for size, gpus, efa, vcpus, mem in rows]


# g5 and g6 share one size ladder, g6e has twice the memory and more EFA at the top:
# (size, gpus, efa interfaces, vcpus, memory GiB).
_G_LADDER = (("xlarge", 1, 0, 4, 16), ("2xlarge", 1, 0, 8, 32), ("4xlarge", 1, 0, 16, 64),
             ("8xlarge", 1, 1, 32, 128), ("12xlarge", 4, 1, 48, 192), ("16xlarge", 1, 1, 64, 256),
             ("24xlarge", 4, 1, 96, 384), ("48xlarge", 8, 1, 192, 768))
_G6E_LADDER = (("xlarge", 1, 0, 4, 32), ("2xlarge", 1, 0, 8, 64), ("4xlarge", 1, 0, 16, 128),
               ("8xlarge", 1, 1, 32, 256), ("12xlarge", 4, 1, 48, 384), ("16xlarge", 1, 1, 64, 512),
               ("24xlarge", 4, 2, 96, 768), ("48xlarge", 8, 4, 192, 1536))

_TYPES = (
    GpuInstanceType("p5.48xlarge", "H100-SXM", 8, 32, 192, 2048),
    GpuInstanceType("p5.4xlarge", "H100-SXM", 1, 1, 16, 256),
    GpuInstanceType("p5e.48xlarge", "H200-SXM", 8, 32, 192, 2048),
    GpuInstanceType("p5en.48xlarge", "H200-SXM", 8, 16, 192, 2048),
    GpuInstanceType("p4d.24xlarge", "A100-SXM-40GB", 8, 4, 96, 1152),
    GpuInstanceType("p4de.24xlarge", "A100-SXM-80GB", 8, 4, 96, 1152),
    *_sizes("g5", "A10G", _G_LADDER),
    *_sizes("g6", "L4", _G_LADDER),
    *_sizes("g6e", "L40S", _G6E_LADDER),
)

GPU_INSTANCE_TYPES: dict[str, GpuInstanceType] = {t.name: t for t in _TYPES}

_NAME = re.compile(r"^([a-z]+)(\d*)([a-z0-9-]*)\.([a-z0-9]+)$")

# Instance families whose names start with these letters carry accelerators; anything else is a CPU type.
_ACCELERATOR_PREFIXES = ("p", "g", "dl", "inf", "trn", "f", "vt")


def known(name: str) -> GpuInstanceType | None:
    """The table entry for an instance type, or None when the tool does not know it."""
    return GPU_INSTANCE_TYPES.get(name)


def well_formed(name: str) -> bool:
    """Whether a string looks like an EC2 instance type (family.size), e.g. p5.48xlarge."""
    return bool(_NAME.match(name))


def family(name: str) -> str:
    """The family part of a type name: p5.48xlarge -> p5, g6e.xlarge -> g6e."""
    return name.split(".", 1)[0]


def _letters(name: str) -> str:
    """The leading letters of the family: p5en.48xlarge -> p, inf2.xlarge -> inf."""
    match = _NAME.match(name)
    return match.group(1) if match else ""


def is_cpu_only(name: str) -> bool:
    """Whether the type is a plain CPU type (m7i, c6i, r7i, t3...), which never has GPUs or usually EFA."""
    return not _letters(name).startswith(_ACCELERATOR_PREFIXES)


def quota_class(name: str) -> str:
    """The vCPU quota class of a type: 'P', 'G' (G and VT), 'Standard', or another letter group."""
    letters = _letters(name)
    if letters.startswith("p"):
        return "P"
    if letters.startswith(("g", "vt")):
        return "G"
    for prefix, cls in (("dl", "DL"), ("inf", "Inf"), ("trn", "Trn"), ("f", "F"), ("x", "X"), ("u", "HighMem")):
        if letters.startswith(prefix):
            return cls
    return "Standard"


def suggestions(gpu_model: str, gpu_count: int) -> list[str]:
    """Known types that carry exactly this GPU model and count, for a fix message."""
    return [t.name for t in _TYPES if t.gpu_model == gpu_model and t.gpu_count == gpu_count]
