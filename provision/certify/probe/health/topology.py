"""What NVLink a node can have, from the node itself: GPU count, NVSwitches on the bus, NVML fabric state.

The SKU's name alone is not enough: an H100 SXM can be a one-GPU cloud VM with no NVSwitch visible (NVML:
no NVLink, fabric state 0 = not supported) or one of eight GPUs on an HGX board. Standard library only.
"""
from __future__ import annotations

from dataclasses import dataclass

from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.gpus import GpuModel
from provision.certify.probe.nvml import FABRIC_STATE_NAMES, FABRIC_STATE_NOT_SUPPORTED
from provision.certify.probe.pci import NvSwitchScan


@dataclass(frozen=True)
class NvlinkExpectation:
    """Whether every NVLink must be up on this node: True, False, or None when it cannot be told; and why."""

    required: bool | None
    reason: str


def fabric_state_name(state: int | None) -> str:
    """'completed', 'not supported', ... for an nvmlGpuFabricState_t value."""
    return FABRIC_STATE_NAMES.get(state, f"unknown state {state}") if state is not None else "not read"


def on_fabric(state: int | None) -> bool:
    """NVML places the GPU on an NVLink fabric (state 1-3: not started, in progress, completed)."""
    return state is not None and state != FABRIC_STATE_NOT_SUPPORTED


def nvlink_expectation(expect: NodeExpectation, model: GpuModel | None, switches: NvSwitchScan | None,
                       fabric_state: int | None) -> NvlinkExpectation:
    """The node's own evidence first: one GPU needs no NVLink; NVSwitches on the bus or a GPU NVML places on a
    fabric need every link up; otherwise nothing joins the GPUs by NVLink that certify could require."""
    if expect.gpu_count <= 1:
        return NvlinkExpectation(False, f"the node has {expect.gpu_count} GPU: no NVLink peer")
    if switches is not None and switches.count:
        return NvlinkExpectation(True, f"{switches.count} NVSwitches on the PCI bus")
    if on_fabric(fabric_state):
        return NvlinkExpectation(True, "NVML places the GPU on an NVLink fabric "
                                       f"(state {fabric_state_name(fabric_state)})")
    if (switches is None or not switches.readable) and model is not None and model.nvswitch:
        why = switches.error if switches is not None and switches.error else "PCI bus not scanned"
        return NvlinkExpectation(None, f"{model.key} boards carry NVSwitches, but the bus could not be read ({why})")
    return NvlinkExpectation(False, "no NVSwitch on the PCI bus and NVML reports no NVLink fabric "
                                    "(fabric state 0 = not supported)")
