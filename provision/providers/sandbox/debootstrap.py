"""Build a minimal Debian root file system with debootstrap, reporting its phases as progress lines."""
from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from provision.errors import SandboxError
from provision.providers.base import Progress

SUITE = "bookworm"  # Debian 12, the release the roles target
# systemd-standalone-tmpfiles: packages (mariadb, munge) declare their /run directories as tmpfiles.d entries,
# which systemd creates at boot and postinst scripts create through systemd-tmpfiles.
PACKAGES = ("openssh-server", "python3", "python3-apt", "sudo", "iproute2", "iputils-ping", "procps",
            "systemd-standalone-tmpfiles")
TIMEOUT_S = 1800

# debootstrap's "I: <Verb> <package>..." lines, grouped into the phases a user cares about.
_PHASES = {"Retrieving": "downloading packages", "Validating": "downloading packages",
           "Extracting": "extracting the base system", "Installing": "installing the base system",
           "Unpacking": "unpacking packages", "Configuring": "configuring packages"}


def command(target: Path, mirror: str) -> list[str]:
    """The debootstrap invocation for the sandbox base."""
    return ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(target), mirror]


def build(target: Path, mirror: str, progress: Progress) -> None:
    """Run debootstrap into target, turning its log into at most one progress line per phase and second."""
    progress(f"base image: debootstrap {SUITE} from {mirror} (about a minute)")
    reporter = PhaseReporter(progress)
    process = subprocess.Popen(command(target, mirror), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    watchdog = threading.Timer(TIMEOUT_S, process.kill)
    watchdog.start()
    tail: list[str] = []
    try:
        for line in process.stdout or []:
            tail = (tail + [line.rstrip()])[-5:]
            reporter.feed(line)
    finally:
        watchdog.cancel()
    if process.wait() != 0:
        raise SandboxError(f"debootstrap failed (exit {process.returncode}): {' / '.join(tail)}",
                           hint=f"check that {mirror} is reachable from this machine; see {target}/debootstrap/")


class PhaseReporter:
    """Counts debootstrap's per-package lines and reports a phase when it starts, then at most every second."""

    def __init__(self, progress: Progress, interval: float = 1.0) -> None:
        self.progress = progress
        self.interval = interval
        self.phase: str | None = None
        self.count = 0
        self.last = 0.0

    def feed(self, line: str) -> None:
        """Take one line of debootstrap output."""
        words = line.split()
        if len(words) < 2 or words[0] != "I:" or words[1] not in _PHASES:
            return
        phase = _PHASES[words[1]]
        now = time.monotonic()
        if phase != self.phase:
            self.phase, self.count = phase, 0
        self.count += 1
        if self.count == 1 or now - self.last >= self.interval:
            self.last = now
            self.progress(f"base image: {phase} ({self.count})")
