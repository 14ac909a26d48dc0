"""The one Jinja2 environment factory: StrictUndefined always, templates from the package data."""
from __future__ import annotations

import json

import yaml

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from provision.resources import templates_dir

_RESOLVER = yaml.resolver.Resolver()  # the YAML 1.1 resolver Ansible's loader uses


def _yaml_scalar(value: object) -> str:
    """Render a value as YAML for Ansible, in flow style, with every string that could be a template tagged !unsafe.

    Strings in an inventory come from the spec, which is data: `!unsafe` tells Ansible never to evaluate them as
    templates (a "{{ lookup('pipe', ...) }}" stays that text). Keys are strings too and are tagged the same way.
    """
    if isinstance(value, str):
        return f"!unsafe {_double_quoted(value)}" if _stays_text(value) else _double_quoted(value)
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_yaml_scalar(k)}: {_yaml_scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_scalar(item) for item in value) + "]"
    return _yaml_scalar(str(value))  # a Path or another value with a text form


def _stays_text(text: str) -> bool:
    """Whether YAML reads the text as a string when it is not quoted.

    Ansible (2.19) resolves an !unsafe scalar as if it were plain: !unsafe "12.8" would become a float and
    !unsafe "" null. Those strings (numbers, booleans, null, dates) hold no '{', so they cannot be templates and are
    written quoted without the tag; every other string carries it.
    """
    return _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == "tag:yaml.org,2002:str"


def _double_quoted(text: str) -> str:
    """A YAML double-quoted scalar: printable ASCII as is, everything else as an escape YAML reads back exactly."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def environment(autoescape: bool = False) -> Environment:
    """A Jinja2 environment over templates/ where a missing variable is an error, never ''."""
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=autoescape,
    )
    env.filters["y"] = _yaml_scalar
    return env
