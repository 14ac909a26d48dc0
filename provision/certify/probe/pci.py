"""NVSwitch devices on the node's PCI bus, read from sysfs (standard library only).

An HGX A100/H100/H200 baseboard shows its NVSwitches to the host as NVIDIA bridges (class 0680, device ids
in provision.certify.probe.gpus.NVSWITCH_PCI_IDS). A cloud VM with one GPU, or a slice of a board whose switches stay
with the hypervisor, shows none: then NVLink and the fabric cannot be expected of it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from provision.certify.probe.gpus import PCI_VENDOR_NVIDIA, is_nvswitch

SYSFS_PCI_DEVICES = Path("/sys/bus/pci/devices")
BRIDGE_OTHER_CLASS = "0680"  # PCI class 06 (bridge), subclass 80 (other): how NVSwitches enumerate


@dataclass(frozen=True)
class NvSwitchScan:
    """What the PCI bus shows: NVSwitch addresses, and other NVIDIA bridges that are not known NVSwitches."""

    readable: bool  # False: sysfs could not be read, nothing can be concluded
    nvswitches: tuple[str, ...] = ()  # PCI addresses, e.g. "0000:07:00.0"
    device_ids: tuple[str, ...] = ()  # their device ids, e.g. "22a3"
    other_bridges: tuple[str, ...] = ()  # "0000:00:07.0 (03ef)": NVIDIA class-0680 devices not in the catalogue
    error: str | None = None
    source: str = str(SYSFS_PCI_DEVICES)

    @property
    def count(self) -> int | None:
        """How many NVSwitches; None when the bus could not be read."""
        return len(self.nvswitches) if self.readable else None

    def to_dict(self) -> dict:
        """Plain dict for the probe's JSON document."""
        return asdict(self)


def _attribute(device: Path, name: str) -> str:
    """One sysfs attribute without its 0x prefix, lower case ("0x10de\\n" -> "10de")."""
    return (device / name).read_text().strip().lower().removeprefix("0x")


def scan(root: Path = SYSFS_PCI_DEVICES) -> NvSwitchScan:
    """Every NVIDIA class-0680 device under root; never raises (an unreadable bus gives readable=False)."""
    try:
        devices = sorted(root.iterdir())
    except OSError as exc:
        return NvSwitchScan(readable=False, error=f"{root}: {exc.strerror or exc}", source=str(root))
    switches, ids, others = [], [], []
    for device in devices:
        try:
            vendor, klass, device_id = (_attribute(device, n) for n in ("vendor", "class", "device"))
        except OSError:
            continue  # a device vanishing while we read, or an attribute we may not read
        if vendor != PCI_VENDOR_NVIDIA or not klass.startswith(BRIDGE_OTHER_CLASS):
            continue
        if is_nvswitch(device_id):
            switches.append(device.name)
            ids.append(device_id)
        else:
            others.append(f"{device.name} ({device_id})")
    return NvSwitchScan(True, tuple(switches), tuple(ids), tuple(others), source=str(root))
