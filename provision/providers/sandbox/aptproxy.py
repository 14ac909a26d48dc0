"""The cluster's apt proxy: apt-cacher-ng with its own config, on the bridge address only, cache kept."""
from __future__ import annotations

import socket
import time
from pathlib import Path

from provision.errors import SandboxError
from provision.providers.sandbox import processes
from provision.providers.sandbox.mirror import Mirrors
from provision.providers.sandbox.record import Proc

PORT = 3142
SUPPORT_DIR = Path("/usr/lib/apt-cacher-ng")
SECURITY_PREFIXES = ("security.debian.org", "security.debian.org/debian-security", "deb.debian.org/debian-security",
                     "/debian-security")


def config(bind: str, state_dir: Path, cache_dir: Path, mirrors: Mirrors) -> str:
    """acng.conf: bound to one address, Debian requests sent to this machine's own mirror."""
    lines = [
        "# Written by gpu-provision for one sandbox cluster; not the system apt-cacher-ng.",
        f"CacheDir: {cache_dir}",
        f"LogDir: {state_dir / 'log'}",
        f"SupportDir: {SUPPORT_DIR}",
        f"SocketPath: {state_dir / 'socket'}",
        f"PidFile: {state_dir / 'pid'}",
        f"BindAddress: {bind}",
        f"Port: {PORT}",
        "ForeGround: 1",
        "ReportPage: acng-report.html",
        "ExThreshold: 4",
        "FollowIndexFileRemoval: 1",
        # The package's default backends are mirrors this network may refuse: use the host's mirror.
        f"Remap-debrep: file:deb_mirror*.gz /debian ; {mirrors.archive}/",
    ]
    if mirrors.security:
        lines.append(f"Remap-secdeb: {' '.join(SECURITY_PREFIXES)} ; {mirrors.security}/")
    return "\n".join(lines) + "\n"


def prepare(state_dir: Path, cache_dir: Path, bind: str, mirrors: Mirrors) -> None:
    """Write the config and create the directories the proxy writes to."""
    for path in (state_dir, state_dir / "log", cache_dir):
        path.mkdir(parents=True, exist_ok=True)
    (state_dir / "acng.conf").write_text(config(bind, state_dir, cache_dir, mirrors))


def start(state_dir: Path) -> Proc:
    """Start apt-cacher-ng in the foreground of its own session; the caller records it at once.

    It runs as root: its config and cache sit in root's private state directory (0700), which the
    package's unprivileged user cannot reach; it listens on the bridge address only."""
    proc = processes.spawn(["apt-cacher-ng", "-c", str(state_dir)], state_dir / "log" / "stdout.log")
    if proc is None:
        raise SandboxError(f"apt-cacher-ng exited at once; see {state_dir / 'log'}")
    return proc


def wait_ready(proc: Proc, bind: str, state_dir: Path, timeout: float = 15.0) -> None:
    """Wait until the proxy accepts connections on the bridge address."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not processes.running(proc):
            break
        try:
            with socket.create_connection((bind, PORT), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SandboxError(f"the apt proxy did not start listening on {bind}:{PORT}",
                       hint=f"see {state_dir / 'log'}; another program may hold the port")

