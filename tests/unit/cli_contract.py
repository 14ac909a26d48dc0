"""The CLI run in this process, for tests that hold it to its contract: exit code, stderr, bounded time, no traceback.

Imported by test modules in any folder under tests/unit (pytest puts tests/unit on sys.path for its conftest.py).
"""
from __future__ import annotations

import io
import signal
import time
from contextlib import redirect_stderr, redirect_stdout

from provision.cli.main import run

# The bound catches a command that hangs or blows up (a FIFO read, an alias bomb), not a slow one: it is the figure a
# test gives times LOADED, room for a 2-core CI that runs the end-to-end tests beside this suite. Speed is measured
# in bench/, never here.
LOADED = 3


def cli(*argv: str, limit_s: float = 5.0) -> tuple[int, str]:
    """Run `provision ARGV` in this process: (exit code, stderr); fails on a traceback or if it takes too long (a
    command that hangs, on a FIFO say, is stopped a few seconds past the limit rather than hanging the suite)."""
    code, _, err = invoke(*argv, limit_s=limit_s)
    return code, err


def invoke(*argv: str, limit_s: float = 5.0) -> tuple[int, str, str]:
    """cli(), returning stdout too: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _hung)
    bound = limit_s * LOADED
    signal.setitimer(signal.ITIMER_REAL, bound + 5)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                run(list(argv))
                code = 0
            except SystemExit as exc:
                code = exc.code
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - start < bound, f"provision {' '.join(argv)} took {time.monotonic() - start:.1f} s"
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def _hung(signum, frame) -> None:
    raise TimeoutError("the command hung")


def one_error_line(stderr: str, expected: str) -> None:
    """The output holds exactly one `error:` line, the one that says `expected`, and no traceback."""
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and expected in lines[0], stderr
    assert "Traceback" not in stderr
