"""Run the real CLI in this process: exit code, stdout, stderr; an exception it does not handle escapes as is."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

from provision.cli.main import run


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


def provision(*argv: str) -> Outcome:
    """`provision ARGV` in-process; an unhandled exception propagates (the test sees the traceback)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            run(list(argv))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return Outcome(code, out.getvalue(), err.getvalue())
