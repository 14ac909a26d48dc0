"""The Typer app and the single place that turns errors into one line and an exit code."""
from __future__ import annotations

import functools
import sys
import traceback

import typer
import typer.core
from rich.text import Text
from typer.exceptions import TyperException

from provision import __version__
from provision.cli import (certify_cmd, cluster_cmds, deploy_cmd, exec_cmd, health_cmd, preflight_cmd, spec_cmds,
                           ssh_cmd, users_cmd)
from provision.cli.options import JsonOpt
from provision.cli.output import err, out, print_findings, print_json
from provision.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ProvisionError, SpecError
from provision.spec.findings import errors

app = typer.Typer(
    name="provision",
    help="Turn bare servers or cloud instances into a certified GPU cluster.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is printed as written: "compute[01-03]" stays
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    """--version: print the version and stop."""
    if value:
        out.print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="show tracebacks for errors"),
    show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                      help="print the version and exit"),
) -> None:
    """Global options."""


@app.command()
def version(json_out: JsonOpt = False) -> None:
    """Print the version."""
    if json_out:
        print_json({"version": __version__})
    else:
        out.print(__version__)


app.command()(spec_cmds.init)
app.command()(spec_cmds.validate)
app.command()(spec_cmds.inventory)
app.command()(spec_cmds.schema)
app.command()(cluster_cmds.plan)
app.command()(cluster_cmds.up)
app.command()(preflight_cmd.preflight)
app.command()(deploy_cmd.deploy)
app.command()(certify_cmd.certify)
app.command("list")(cluster_cmds.list_)
app.command()(cluster_cmds.status)
app.command()(cluster_cmds.down)
app.command("exec")(exec_cmd.exec_)
app.command()(ssh_cmd.ssh)
app.command()(health_cmd.health)
app.command()(users_cmd.users)


def _report(exc: ProvisionError) -> int:
    """Print a ProvisionError as one red line and return its exit code; spec findings are the red lines (one
    `error:` line per problem), followed by the summary as a plain line, as `validate` prints them."""
    findings = exc.findings if isinstance(exc, SpecError) else []
    print_findings(findings)
    if errors(findings):
        err.print(str(exc))
    else:
        err.print(Text.assemble(("error:", "red"), " ", str(exc)))
    return exc.exit_code


def split_debug(args: list[str]) -> tuple[list[str], bool]:
    """Take --debug out wherever it stands before `--`; what follows `--` (exec's command) is left untouched."""
    end = args.index("--") if "--" in args else len(args)
    before = [a for a in args[:end] if a != "--debug"]
    return before + args[end:], len(before) < end


@functools.cache
def _command() -> typer.core.TyperGroup:
    """The click command typer builds from the app, built once per process (it costs ~10 ms per build)."""
    return typer.main.get_command(app)


def run(argv: list[str] | None = None) -> None:
    """Entry point: run the app; ProvisionError -> one line on stderr, its exit code; no traceback unless --debug."""
    args, debug = split_debug(sys.argv[1:] if argv is None else argv)
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
