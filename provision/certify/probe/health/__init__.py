"""GPU health from NVML records, judged against the node's expectation; every check a CheckResult.

Standard library only (runs inside the node-side probe). `evaluate` is the entry point.
"""
from __future__ import annotations

from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.gpus import GPU_MODELS
from provision.certify.probe.health import links, memory, node, state
from provision.certify.probe.health.context import GpuContext, LoadSummary
from provision.certify.probe.nvml import NvmlSnapshot
from provision.certify.probe.pci import NvSwitchScan
from provision.certify.probe.records import CheckResult

# Per-GPU checks in report order: identity and persistence, memory, links, then the operating state.
GPU_CHECKS = (state.model, state.persistence, *memory.CHECKS, *links.CHECKS, state.throttle, state.temperature,
              state.power, state.processes, state.mig)

__all__ = ["GPU_CHECKS", "LoadSummary", "evaluate"]


def evaluate(snap: NvmlSnapshot, expect: NodeExpectation, load: dict[int, LoadSummary] | None = None,
             switches: NvSwitchScan | None = None) -> list[CheckResult]:
    """Node-level checks, then every per-GPU check for every GPU NVML sees; `switches` is the node's PCI bus
    (what NVLink the node can have follows from it, the GPU count and NVML's fabric state)."""
    if not snap.available:
        return node.unavailable(snap, expect)
    results = node.checks(snap, expect)
    model = GPU_MODELS.get(expect.gpu_model) if expect.gpu_model else None
    for gpu in snap.gpus:
        ctx = GpuContext(node=expect.node, expect=expect, model=model, gpu=gpu, load=(load or {}).get(gpu.index),
                         switches=switches)
        if gpu.error:
            results.append(ctx.result("gpu.readable", "fail", value="unreadable", threshold="readable",
                                      source="nvmlDeviceGetHandleByIndex", detail=gpu.error))
            continue
        results.extend(check(ctx) for check in GPU_CHECKS)
    return results
