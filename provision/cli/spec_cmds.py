"""Commands on the spec alone: init, validate, inventory."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from provision import inventory as inventory_mod
from provision import lifecycle
from provision.cli.output import err, out, print_findings, print_json
from provision.errors import EXIT_BAD_INPUT, UsageError
from provision.limits import clip
from provision.spec import errors, load_spec, validate_file
from provision.spec.model import NAME_HINT, NAME_PATTERN
from provision.templating import environment

SpecArg = Annotated[Path, typer.Argument(help="the cluster spec (YAML)", show_default=False)]


def init(
    provider: Annotated[str, typer.Option("--provider", "-p", help="sandbox | static | aws")] = "sandbox",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="write here instead of stdout")] = None,
    name: Annotated[str, typer.Option(help="cluster name")] = "demo",
    force: Annotated[bool, typer.Option(help="overwrite an existing file")] = False,
) -> None:
    """Write a commented example spec that validates."""
    if provider not in ("sandbox", "static", "aws"):
        raise UsageError(f"--provider: {clip(provider)} is not a provider", hint="use sandbox, static or aws")
    if not re.fullmatch(NAME_PATTERN, name):
        raise UsageError(f"--name: {clip(name)} is not a cluster name", hint=f"use {NAME_HINT}")
    text = environment().get_template(f"spec/{provider}.yaml.j2").render(
        name=name, file_name=str(output or "cluster.yaml"))
    if output is None:
        typer.echo(text, nl=False)
        return
    _write_new(output, text, force)
    err.print(f"wrote {output}")


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


def validate(spec: SpecArg, json_out: Annotated[bool, typer.Option("--json", help="findings as JSON")] = False) -> None:
    """Check a spec's structure and meaning; print every finding; exit 2 on any error."""
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


def inventory(
    spec: SpecArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="directory to write the inventory into")],
) -> None:
    """Render the Ansible inventory (hosts, groups, group_vars) for a spec."""
    cluster_spec = load_spec(spec)
    cluster = lifecycle.current_cluster(cluster_spec)
    for path in inventory_mod.write(cluster_spec, cluster, output):
        out.print(str(path))
