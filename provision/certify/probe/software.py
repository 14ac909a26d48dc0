"""The node's software inventory: kernel release, OS, Slurm and NCCL versions ("n/a" where absent).

Standard library only. Every command runs with a timeout and without a shell; a missing tool, a timeout or
output that cannot be read gives NA, never an exception. The NVIDIA driver, CUDA and each GPU's VBIOS come
from NVML (nvml.py), not from here.
"""
from __future__ import annotations

import platform
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

NA = "n/a"
COMMAND_TIMEOUT_S = 10.0
OS_RELEASE = (Path("/etc/os-release"), Path("/usr/lib/os-release"))
SLURM_COMMANDS: tuple[tuple[str, ...], ...] = (("slurmd", "-V"), ("sinfo", "-V"), ("srun", "--version"))
NCCL_PACKAGES: tuple[tuple[str, ...], ...] = (  # Debian/Ubuntu, then RPM-based
    ("dpkg-query", "-W", "-f", "${Version}", "libnccl2"),
    ("rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", "libnccl"),
)
NCCL_LIBRARY_DIRS = (Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib/aarch64-linux-gnu"), Path("/usr/lib64"),
                     Path("/usr/local/lib"), Path("/usr/local/cuda/lib64"))
_SLURM = re.compile(r"^slurm(?:-wlm)?\s+(\d[\w.\-]*)")
_NCCL_FILE = re.compile(r"^libnccl\.so\.(\d+\.\d+\.\d+)$")
_PACKAGE_VERSION = re.compile(r"^\d[\w.+~:\-]*$")


@dataclass(frozen=True)
class SoftwareInventory:
    """What the node runs, each entry a version string or NA."""

    kernel: str = NA
    os: str = NA
    slurm: str = NA
    nccl: str = NA

    def to_dict(self) -> dict[str, str]:
        """Plain dict for the probe's document."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> SoftwareInventory:
        """Read back; unknown keys are ignored and anything not a string becomes NA."""
        data = data if isinstance(data, dict) else {}
        return cls(**{key: _text(data.get(key)) for key in ("kernel", "os", "slurm", "nccl")})


def read() -> SoftwareInventory:
    """Everything at once; never raises."""
    return SoftwareInventory(kernel=platform.release() or NA, os=os_name(), slurm=slurm_version(),
                             nccl=nccl_version())


def os_name(paths: tuple[Path, ...] = OS_RELEASE) -> str:
    """PRETTY_NAME of os-release (e.g. "Debian GNU/Linux 12 (bookworm)"), NAME VERSION_ID without it."""
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        fields = parse_os_release(text)
        name = fields.get("PRETTY_NAME") or " ".join(filter(None, (fields.get("NAME"), fields.get("VERSION_ID"))))
        return name or NA
    return NA


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines of os-release, quotes taken off."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            out[key] = value.strip().strip("\"'")
    return out


def slurm_version(commands: tuple[tuple[str, ...], ...] = SLURM_COMMANDS) -> str:
    """"22.05.8" from the first Slurm command that answers "slurm 22.05.8"."""
    for command in commands:
        match = _SLURM.match(run(command).strip())
        if match:
            return match.group(1)
    return NA


def nccl_version(packages: tuple[tuple[str, ...], ...] = NCCL_PACKAGES,
                 library_dirs: tuple[Path, ...] = NCCL_LIBRARY_DIRS) -> str:
    """The installed libnccl package's version, else the X.Y.Z of a libnccl.so.X.Y.Z file."""
    for command in packages:
        found = run(command).strip()
        if _PACKAGE_VERSION.match(found):
            return found
    for directory in library_dirs:
        try:
            names = sorted(p.name for p in directory.glob("libnccl.so.*"))
        except OSError:
            continue
        versions = [m.group(1) for m in map(_NCCL_FILE.match, names) if m]
        if versions:
            return versions[-1]
    return NA


def run(command: tuple[str, ...], timeout_s: float = COMMAND_TIMEOUT_S) -> str:
    """A command's stdout when it exits 0; "" when it is missing, fails or outlasts the timeout."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _text(value: object) -> str:
    return value if isinstance(value, str) and value else NA
