"""Build a minimal Debian root file system with debootstrap, reporting its phases as progress lines."""
from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from provision.errors import SandboxError
from provision.providers.base import Progress

SUITE = "bookworm"  # Debian 12: the suite of images built before provider.os existed
PACKAGES = ("openssh-server", "python3", "python3-apt", "sudo", "iproute2", "iputils-ping", "procps")
# Packages (mariadb, munge) declare their /run directories as tmpfiles.d entries, which systemd creates at boot and
# postinst scripts create through systemd-tmpfiles. Trixie's minimal base already carries systemd (which provides
# it, and conflicts with the standalone package); bookworm's needs systemd-standalone-tmpfiles.
SUITE_PACKAGES = {"bookworm": ("systemd-standalone-tmpfiles",)}


def packages(suite: str) -> tuple[str, ...]:
    """What debootstrap adds to the minimal base of one suite."""
    return PACKAGES + SUITE_PACKAGES.get(suite, ())
TIMEOUT_S = 1800

# debootstrap's "I: <Verb> <package>..." lines, grouped into the phases a user cares about.
_PHASES = {"Retrieving": "downloading packages", "Validating": "downloading packages",
           "Extracting": "extracting the base system", "Installing": "installing the base system",
           "Unpacking": "unpacking packages", "Configuring": "configuring packages"}


def command(target: Path, mirror: str, suite: str = SUITE) -> list[str]:
    """The debootstrap invocation for the sandbox base."""
    return ["debootstrap", "--variant=minbase", f"--include={','.join(packages(suite))}", suite, str(target), mirror]


def build(target: Path, mirror: str, progress: Progress, suite: str = SUITE) -> None:
    """Run debootstrap into target, turning its log into at most one progress line per phase and second."""
    progress(f"base image: debootstrap {suite} from {mirror} (about a minute)")
    reporter = PhaseReporter(progress)
    process = subprocess.Popen(command(target, mirror, suite), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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
