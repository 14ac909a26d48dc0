"""What the probe reads from the node itself: the kernel log since boot and the RDMA ports in sysfs."""
from __future__ import annotations

import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from provision.certify.probe.expect import NodeExpectation
from provision.certify.probe.records import CheckResult

SYSFS_INFINIBAND = Path("/sys/class/infiniband")
_RATE = re.compile(r"(?P<rate>[0-9.]+)\s*Gb/sec")

# Tried in order; journalctl first because dmesg may be restricted to root (kernel.dmesg_restrict).
KERNEL_LOG_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"),
    ("dmesg",),
)


class KernelLogUnavailable(Exception):
    """No command could read the kernel log."""


def read_kernel_log(timeout_s: float = 30.0) -> tuple[str, str]:
    """(text, which command) of the kernel log since boot; KernelLogUnavailable with every reason if none works."""
    reasons = []
    for command in KERNEL_LOG_COMMANDS:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"{command[0]}: {exc}")
            continue
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout, " ".join(command)
        reasons.append(f"{command[0]}: exit {done.returncode} {done.stderr.strip()[:120]}")
    raise KernelLogUnavailable("; ".join(reasons))


@dataclass(frozen=True)
class RdmaPort:
    """One port of an RDMA device as sysfs shows it."""

    device: str
    port: int
    state: str  # "ACTIVE", "DOWN", ...
    rate_gbps: float | None
    link_layer: str | None  # "InfiniBand", "Ethernet"

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        return asdict(self)


def rdma_ports(root: Path = SYSFS_INFINIBAND) -> list[RdmaPort]:
    """Every port of every RDMA device (mlx5_*, rdmap* for EFA); empty when there are none."""
    ports = []
    for port_dir in sorted(root.glob("*/ports/*")):
        state = _read(port_dir / "state")
        rate = _RATE.search(_read(port_dir / "rate") or "")
        ports.append(RdmaPort(device=port_dir.parent.parent.name, port=int(port_dir.name),
                              state=(state or "UNKNOWN").split(":")[-1].strip(),
                              rate_gbps=float(rate["rate"]) if rate else None,
                              link_layer=_read(port_dir / "link_layer")))
    return ports


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def check_rdma(ports: list[RdmaPort], expect: NodeExpectation) -> CheckResult:
    """As many active RDMA ports as the node group has fabric NICs."""
    active = [p for p in ports if p.state == "ACTIVE"]
    rates = sorted({p.rate_gbps for p in active if p.rate_gbps})
    detail = f"active: {', '.join(f'{p.device}/{p.port}' for p in active) or 'none'}"
    if rates:
        detail += f"; rates {', '.join(f'{r:g}' for r in rates)} Gb/s"
    if expect.interconnect == "none" or not expect.interconnect_nics:
        return CheckResult("net.rdma.ports", "na", node=expect.node, value=len(active), unit="ports",
                           detail=f"no fabric NICs expected; {detail}")
    want = expect.interconnect_nics
    verdict = "pass" if len(active) >= want else "fail"
    return CheckResult("net.rdma.ports", verdict, node=expect.node, value=len(active), unit="ports",
                       threshold=f">= {want}", source=f"spec interconnect.nics ({expect.interconnect})",
                       detail=detail)
