"""The Typer app and the single place that turns errors into one line and an exit code."""
from __future__ import annotations

import functools
import sys
import traceback

import typer
import typer.core
from typer.exceptions import TyperException

from provision import __version__
from provision.cli import certify_cmd, cluster_cmds, deploy_cmd, preflight_cmd, spec_cmds
from provision.cli.output import err, escape, print_findings, out
from provision.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ProvisionError, SpecError

app = typer.Typer(
    name="provision",
    help="Turn bare servers or cloud instances into a certified GPU cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", help="show tracebacks for errors")) -> None:
    """Global options."""


@app.command()
def version() -> None:
    """Print the version."""
    out.print(__version__)


app.command()(spec_cmds.init)
app.command()(spec_cmds.validate)
app.command()(spec_cmds.inventory)
app.command()(cluster_cmds.plan)
app.command()(cluster_cmds.up)
app.command()(preflight_cmd.preflight)
app.command()(deploy_cmd.deploy)
app.command()(certify_cmd.certify)
app.command()(cluster_cmds.status)
app.command()(cluster_cmds.down)
app.command("exec")(cluster_cmds.exec_)


def _report(exc: ProvisionError) -> int:
    """Print a ProvisionError as one red line (plus spec findings) and return its exit code."""
    if isinstance(exc, SpecError) and exc.findings:
        print_findings(exc.findings)
    err.print(f"[red]error:[/red] {escape(str(exc))}", markup=True, highlight=False)
    return exc.exit_code


@functools.cache
def _command() -> typer.core.TyperGroup:
    """The click command typer builds from the app, built once per process (it costs ~10 ms per build)."""
    return typer.main.get_command(app)


def run(argv: list[str] | None = None) -> None:
    """Entry point: run the app; ProvisionError -> one line on stderr, its exit code; no traceback unless --debug."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]  # accepted anywhere on the line
    try:
        code = _command()(args=args, prog_name="provision", standalone_mode=False)
    except ProvisionError as exc:
        if debug:
            traceback.print_exc()
        sys.exit(_report(exc))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except TyperException as exc:  # usage errors: unknown option, missing argument
        exc.show()
        sys.exit(getattr(exc, "exit_code", EXIT_BAD_INPUT))
    sys.exit(code if isinstance(code, int) else 0)  # non-standalone click returns Exit codes
