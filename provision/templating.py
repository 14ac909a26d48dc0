"""The one Jinja2 environment factory: StrictUndefined always, templates from the package data."""
from __future__ import annotations

import json

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from provision.resources import templates_dir


def _yaml_scalar(value: object) -> str:
    """Render a value as a YAML-safe scalar or flow collection (JSON is valid YAML)."""
    return json.dumps(value, sort_keys=False)


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
