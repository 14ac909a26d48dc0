"""`provision exec`: run one command on one node or many, output folded per distinct result (like clush -b)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.text import Text

from provision.cli.options import EXEC_TIMEOUT_S, CommandArg, ExecTimeoutOpt, JsonOpt, NodesOpt, SpecArg
from provision.cli.output import err, print_json

if TYPE_CHECKING:
    from provision.remote.commands import CommandResult, OutputBlock


def exec_(spec: SpecArg, command: CommandArg, node: NodesOpt = [], timeout: ExecTimeoutOpt = EXEC_TIMEOUT_S,
          json_out: JsonOpt = False) -> None:
    """Run a command over SSH (host keys verified) on the controller, or on the nodes --node names, all at once.

    The arguments after -- arrive as given: several are each quoted (exec SPEC -- bash -c 'echo a b'); a single
    one is a shell command line (exec SPEC -- 'ls /dev | wc -l'). One node passes its output and exit status
    through; several print one block per distinct output with the nodes that gave it, and exit with the highest
    status: 255 for a node that could not be reached, 124 for a command stopped at --timeout."""
    # The library is imported when the command runs, not when the CLI starts (tests/unit/cli/test_startup.py).
    from provision.cluster import lifecycle
    from provision.remote import commands
    from provision.spec.loader import load_spec

    cluster = lifecycle.current_cluster(load_spec(spec))
    nodes = commands.select_nodes(cluster, node)
    results = commands.run_across(cluster, nodes, commands.command_line(command), timeout=timeout)
    if json_out:
        print_json({"rc": commands.worst_rc(results), "nodes": [_as_dict(r) for r in results]})
    elif len(results) == 1:
        _pass_through(results[0].stdout, results[0].stderr)
        _error(results[0].node, results[0].error)
    else:
        for block in commands.fold(results):
            show_block(block)
    raise typer.Exit(commands.worst_rc(results))


def _as_dict(result: CommandResult) -> dict:
    """One node's result for --json; `error` (null when the command ran to its end) says why it did not."""
    return {"node": result.node, "rc": result.rc, "stdout": result.stdout, "stderr": result.stderr,
            "error": result.error}


def show_block(block: OutputBlock) -> None:
    """A header naming the nodes and their exit status, then the output they share (stderr on stderr) and why they
    did not finish, if they did not."""
    rule = "-" * 15
    typer.echo(f"{rule}\n{block.hostlist} ({len(block.nodes)} node{'s' * (len(block.nodes) > 1)}, "
               f"exit {block.rc})\n{rule}")
    _pass_through(block.stdout, block.stderr)
    _error(block.hostlist, block.error)


def _pass_through(stdout: str, stderr: str) -> None:
    """Output as the command wrote it: no markup, no added newline."""
    typer.echo(stdout, nl=False)
    if stderr:
        typer.echo(stderr, nl=False, err=True)


def _error(nodes: str, error: str | None) -> None:
    """`error: compute03: 10.99.0.13:22: timed out; ...` in red on stderr."""
    if error:
        err.print(Text.assemble(("error:", "red"), f" {nodes}: {error}"))
