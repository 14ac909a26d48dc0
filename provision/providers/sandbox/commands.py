"""The one adaptor for host commands (ip, mount, debootstrap, ...): failures become SandboxError."""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from provision.errors import SandboxError

DEFAULT_TIMEOUT = 120.0


def run(argv: Sequence[str], *, check: bool = True, timeout: float = DEFAULT_TIMEOUT,
        input: str | None = None) -> subprocess.CompletedProcess:
    """Run a command without a shell; a failure names the command and its stderr."""
    try:
        result = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, input=input)
    except FileNotFoundError as exc:
        raise SandboxError(f"command not found: {argv[0]}", hint=install_hint(argv[0])) from exc
    except subprocess.TimeoutExpired as exc:
        raise SandboxError(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from exc
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise SandboxError(f"`{' '.join(argv)}` failed (exit {result.returncode}): "
                           f"{detail[-1] if detail else 'no output'}")
    return result


def succeeds(argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Whether a command exits 0 (for probes where failure is an answer, not an error)."""
    return run(argv, check=False, timeout=timeout).returncode == 0


def output(argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> str:
    """The stdout of a command that must succeed."""
    return run(argv, timeout=timeout).stdout


# Binaries the sandbox calls, with the Debian package that provides each.
REQUIRED_BINARIES: dict[str, str] = {
    "ip": "iproute2",
    "tc": "iproute2",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "setpriv": "util-linux",
    "pivot_root": "util-linux",
    "mount": "mount",
    "debootstrap": "debootstrap",
    "apt-cacher-ng": "apt-cacher-ng",
    "zstd": "zstd",
    "tar": "tar",
    "chroot": "coreutils",
}


def install_hint(binary: str) -> str:
    """How to get a missing binary."""
    package = REQUIRED_BINARIES.get(binary)
    return f"install it with `apt-get install {package}`" if package else "install it and retry"


def missing_binaries() -> list[str]:
    """Required binaries that are not on PATH."""
    return [name for name in REQUIRED_BINARIES if shutil.which(name) is None]
