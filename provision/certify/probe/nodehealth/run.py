"""Commands under one deadline: a command that overruns is killed and abandoned, never waited for (a process stuck
in a hung filesystem cannot be killed, and the pass must still end)."""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

KILL_GRACE_S = 0.2


@dataclass(frozen=True)
class Done:
    """How a command ended: exit code (None: it overran and was abandoned), its output."""

    rc: int | None
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        """It ran to the end with exit 0."""
        return self.rc == 0

    def first_error(self) -> str:
        """The first line of what it said, for a drain reason."""
        if self.rc is None:
            return "no answer before the deadline"
        text = (self.stderr.strip() or self.stdout.strip() or f"exit {self.rc}").splitlines()[0]
        return text[:160]


class Deadline:
    """The time left for this pass."""

    def __init__(self, seconds: float, clock=time.monotonic) -> None:
        self._clock = clock
        self._end = clock() + seconds

    def left(self, cap: float | None = None) -> float:
        """Seconds left (never negative), at most `cap`."""
        left = max(0.0, self._end - self._clock())
        return left if cap is None else min(left, cap)


def run(argv: list[str], deadline: Deadline, cap_s: float = 5.0, stdin: str | None = None,
        env: dict[str, str] | None = None) -> Done:
    """Run argv (never a shell) for at most min(cap_s, time left); bytes of its output that are not UTF-8 read as
    U+FFFD (an admin's drain reason may be in any encoding)."""
    timeout = deadline.left(cap_s)
    if timeout <= 0:
        return Done(None)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                env=env)
    except OSError as exc:
        return Done(127, stderr=f"{argv[0]}: {exc.strerror}")
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass  # stuck in the kernel: abandoned
        return Done(None)
    return Done(proc.returncode, out, err)
