"""The controller's view of each compute node against what the node itself reports.

slurmctld schedules on the NodeName definition (`scontrol show node`); the node's real processors and memory
are what `slurmd -C` reads from its hardware. A definition that claims more than the node has makes jobs
fail or the node drain ("Low RealMemory"); one that claims less wastes the node. Where there are GPUs, the
gres count is compared with NVML's device count (or, without NVML, with the GPU device files Slurm uses).

Pure: the commands are strings; the judgement reads their text.
- slurm.node_definition (compute nodes): CPUs and RealMemory no higher than `slurmd -C`, GPU gres equal to
  the GPUs found.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.records import CheckResult

CONTROLLER_COMMAND = "scontrol show node -o"
HW_MARK = "slurmd_c|"
# Run on the node inside certify's pre-check: the hardware line of `slurmd -C` and the GPU device files.
NODE_COMMAND = (f'echo "{HW_MARK}$(slurmd -C 2>/dev/null | head -n1)"\n'
                'echo "gpu_device_files=$(ls /dev 2>/dev/null | grep -c \'^nvidia[0-9][0-9]*$\')"')
SOURCE = "scontrol show node against slurmd -C on the node"
_GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)")


@dataclass(frozen=True)
class Definition:
    """CPUs, RealMemory (MiB) and GPUs (gres) of one node, as the controller or the node sees it."""

    cpus: int | None
    memory_mb: int | None
    gpus: int = 0


def _field(line: str, key: str) -> str | None:
    match = re.search(rf"(?:^|\s){key}=(\S+)", line)
    return match[1] if match else None


def _number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def gres_gpus(gres: str | None) -> int:
    """GPUs in a Gres value ("gpu:h100:8(S:0-1)", "gpu:2,shard:8"); 0 without any."""
    return sum(int(m[1]) for m in _GRES_GPU.finditer(gres or ""))


def parse_controller(text: str) -> dict[str, Definition]:
    """`scontrol show node -o` (one line per node) -> node -> the definition slurmctld uses."""
    out = {}
    for line in text.splitlines():
        name = _field(line, "NodeName")
        if name:
            out[name] = Definition(_number(_field(line, "CPUTot")), _number(_field(line, "RealMemory")),
                                   gres_gpus(_field(line, "Gres")))
    return out


def parse_node(text: str) -> Definition | None:
    """The node's own `slurmd -C` line from its pre-check output; None when slurmd could not report."""
    for line in text.splitlines():
        if line.startswith(HW_MARK):
            found = line[len(HW_MARK):]
            cpus, memory = _number(_field(found, "CPUs")), _number(_field(found, "RealMemory"))
            return Definition(cpus, memory) if cpus and memory else None
    return None


def judge(node: str, configured: Definition | None, hardware: Definition | None,
          gpus_found: int | None, gpu_source: str) -> CheckResult:
    """slurm.node_definition for one compute node: what slurmctld believes against the node's own report."""
    base = dict(node=node, source=SOURCE, threshold="no more than the node has")
    if configured is None:
        return CheckResult("slurm.node_definition", "fail", **base,
                           detail="the controller has no definition for this node: check slurm.conf's NodeName lines")
    if hardware is None:
        return CheckResult("slurm.node_definition", "fail", **base,
                           detail="`slurmd -C` gave no hardware line on the node: is slurmd installed?")
    problems = []
    if configured.cpus and hardware.cpus and configured.cpus > hardware.cpus:
        problems.append(f"slurm.conf gives it {configured.cpus} CPUs; the node has {hardware.cpus}")
    if configured.memory_mb and hardware.memory_mb and configured.memory_mb > hardware.memory_mb:
        problems.append(f"slurm.conf claims RealMemory={configured.memory_mb} MiB; the node has "
                        f"{hardware.memory_mb} MiB")
    if gpus_found is not None and configured.gpus != gpus_found:
        problems.append(f"gres gives it {configured.gpus} GPUs; {gpu_source} finds {gpus_found}")
    shown = (f"CPUs {configured.cpus} of {hardware.cpus}, RealMemory {configured.memory_mb} of "
             f"{hardware.memory_mb} MiB" + (f", {configured.gpus} GPUs" if configured.gpus else ""))
    if problems:
        return CheckResult("slurm.node_definition", "fail", **base, value=shown,
                           detail="; ".join(problems) + ": correct the node's hardware record (`provision "
                                                        "preflight`), then `provision deploy --tags slurm`")
    return CheckResult("slurm.node_definition", "pass", **base, value=shown)


def gpus_found(probe: ProbeDocument | None, device_files: str | None) -> tuple[int | None, str]:
    """(GPU count, where it was read): NVML's devices from the probe, else the node's /dev/nvidiaN files."""
    if probe is not None and probe.nvml_gpu_count is not None:
        return probe.nvml_gpu_count, "NVML"
    if device_files and device_files.isdigit():
        return int(device_files), "/dev/nvidiaN"
    return None, "nothing"
