"""Commands on the spec alone: init, validate, inventory, schema."""
from __future__ import annotations

from pathlib import Path

import typer

from provision.cluster import clusters
from provision.cli.options import (FindingsJsonOpt, InitOutputOpt, InventoryOutputOpt, JsonOpt, NameOpt, OverwriteOpt,
                                   ProviderOpt, SchemaOutputOpt, SpecArg)
from provision.cli.output import err, out, print_findings, print_json
from provision.errors import EXIT_BAD_INPUT, UsageError
from provision.spec.example import example
from provision.spec.findings import errors

DEFAULT_NAME = "demo"  # what `init` names a cluster when no cluster of that name exists here

# The spec loader, the models and the lifecycle are imported when a command runs, not when the CLI starts
# (tests/unit/cli/test_startup.py).


def init(provider: ProviderOpt = "sandbox", output: InitOutputOpt = None, name: NameOpt = None,
         force: OverwriteOpt = False) -> None:
    """Write a commented example spec that validates, named after no cluster that exists on this machine unless
    --name says so."""
    text = example(provider, _cluster_name(name), str(output or "cluster.yaml"))
    if output is None:
        typer.echo(text, nl=False)
        return
    _write_new(output, text, force)
    err.print(f"wrote {output}")


def _cluster_name(requested: str | None) -> str:
    """The name to write: --name as given (said on stderr when a cluster of that name exists here), else demo or the
    first free demo-N (said on stderr when demo exists), so a new spec never changes a cluster without a word."""
    if requested is not None:
        if requested in clusters.existing():
            err.print(f"note: cluster {requested} exists on this machine; `up` or `deploy` with the new file would "
                      f"change it, and are refused unless given --rebind")
        return requested
    chosen = clusters.free_name(DEFAULT_NAME)
    if chosen != DEFAULT_NAME:
        err.print(f"note: cluster {DEFAULT_NAME} exists on this machine; the example is named {chosen} (--name NAME "
                  "to choose another)")
    return chosen


def _write_new(output: Path, text: str, force: bool) -> None:
    """Write the example to a new regular file (or over one with --force); never into a FIFO or a device."""
    if output.exists() and not force:
        raise UsageError(f"{output}: already exists", hint="pass --force to overwrite, or choose another path")
    if output.exists() and not output.is_file():
        raise UsageError(f"{output}: is not a regular file", hint="choose a file path for -o")
    try:
        output.write_text(text)
    except OSError as exc:
        raise UsageError(f"{output}: cannot be written ({exc.strerror})", hint="choose a writable path") from exc


def validate(spec: SpecArg, json_out: FindingsJsonOpt = False) -> None:
    """Check a spec's structure and meaning; print every finding; exit 2 on any error."""
    from provision.spec.loader import validate_file

    result = validate_file(spec)
    if json_out:
        print_json({"ok": result.ok, "findings": [f.as_dict() for f in result.findings]})
    else:
        print_findings(result.findings)
        if result.ok:
            warnings = len(result.findings)
            out.print(f"{spec}: valid" + (f" ({warnings} warning(s))" if warnings else ""))
        else:
            err.print(f"{spec}: {len(errors(result.findings))} error(s)")
    if not result.ok:
        raise typer.Exit(EXIT_BAD_INPUT)


def inventory(spec: SpecArg, output: InventoryOutputOpt, json_out: JsonOpt = False) -> None:
    """Render the Ansible inventory (hosts, groups, group_vars) for a spec; print the files written."""
    from provision.cluster import lifecycle
    from provision.spec.loader import load_spec

    paths = lifecycle.write_inventory(load_spec(spec), output)
    if json_out:
        print_json({"files": [str(p) for p in paths]})
        return
    for path in paths:
        out.print(str(path))


def schema(output: SchemaOutputOpt = None) -> None:
    """Print the JSON Schema of the cluster spec (for editors: yaml-language-server and the like)."""
    from provision.spec.schema import schema_text

    text = schema_text()
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text)
    except OSError as exc:
        raise UsageError(f"{output}: cannot be written ({exc.strerror})", hint="choose a writable path") from exc
    err.print(f"wrote {output}")
