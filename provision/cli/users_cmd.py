"""`provision users`: who has access to the running cluster, as its controller and Slurm have them."""
from __future__ import annotations

import typer

from provision.cli.options import JsonOpt, SpecArg
from provision.cli.output import err, out, print_json
from provision.errors import EXIT_FAILED


def users(spec: SpecArg, json_out: JsonOpt = False) -> None:
    """List the people of the running cluster: each one's uid, where the account comes from (local: the node's files;
    directory: found only through SSSD), state (active; locked: taken out of the spec, or without a login shell;
    missing: listed but without an account; unmanaged: made by hand; certify: certify's own user), shell, home, Slurm accounts (the default first)
    and the QoS their associations allow; the spec's people first (its users, then the directory's people of
    accounting.users). Asks the controller once. Exit 1 when it cannot say, or a listed person is missing there."""
    from provision.cluster import lifecycle
    from provision.spec.loader import load_spec

    view = lifecycle.people(load_spec(spec))
    if json_out:
        print_json(view.to_dict())
    else:
        _print(view)
    if view.error or any(p.state == "missing" for p in view.people):
        raise typer.Exit(EXIT_FAILED)


def _print(view) -> None:
    from rich.table import Table

    if view.error:
        err.print(f"error: {view.error}")
        return
    table = Table("user", "uid", "from", "state", "spec", "accounts", "qos", "shell", "home", title="people")
    for person in view.people:
        table.add_row(person.name, "-" if person.uid is None else str(person.uid), person.source or "-", person.state,
                      "listed" if person.listed else ("dropped" if person.managed else "-"),
                      ", ".join(person.accounts) or "-", ", ".join(person.qos) or "-", person.shell or "-",
                      person.home or "-")
    out.print(table)
    for note in view.notes:
        out.print(f"note: {note}")
