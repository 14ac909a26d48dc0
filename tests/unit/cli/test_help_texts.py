"""Every option and argument of every command says what it is for, in its own words: no empty help, no two of a
command sharing one (`init --force` once showed `up --force`'s help: two option types of one name in options.py),
no Python type where a metavar belongs."""
from __future__ import annotations

import ast
from pathlib import Path

import click
import pytest

from provision.cli import main, options

COMMANDS = main._command().commands


def _params(command: click.Command) -> list[click.Parameter]:
    return [p for p in command.params if p.name != "help"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_and_argument_has_its_own_help(name):
    command = COMMANDS[name]
    helps = {p.name: (getattr(p, "help", None) or "").strip() for p in _params(command)}
    assert all(helps.values()), {p: h for p, h in helps.items() if not h}
    shared = {h for h in helps.values() if list(helps.values()).count(h) > 1}
    assert not shared, f"{name}: options sharing a help text: {shared}"
    assert (command.help or "").strip(), f"{name} has no description"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_option_shows_a_python_type_as_its_metavar(name):
    context = click.Context(COMMANDS[name], info_name=name)
    for param in _params(COMMANDS[name]):
        if isinstance(param, click.Option):
            shown = param.get_help_record(context)[0]
            assert "list[" not in shown and "range>" not in shown, shown


def test_options_py_defines_each_name_once():
    tree = ast.parse(Path(options.__file__).read_text())
    names = [target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
             if isinstance(target, ast.Name)]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


@pytest.mark.parametrize("command, option, words", [
    ("init", "force", "overwrite the file"), ("up", "force", "cancel the jobs"), ("deploy", "check", "diff"),
    ("exec", "node", "all"), ("exec", "timeout", "stopped"), ("certify", "level", "standard")])
def test_an_option_s_help_is_about_that_option(command, option, words):
    param = next(p for p in COMMANDS[command].params if p.name == option)
    assert words in param.help
