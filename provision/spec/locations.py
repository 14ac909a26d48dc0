"""Where a pydantic error points in the spec's data, and which model fields are allowed at a place in it.

pydantic's error locations carry tags the data does not have (the provider discriminator, union members); `data_loc`
takes them out, so a location names keys and list indexes of the YAML as written. `models_at` walks the spec's models
along such a location (list items, the provider union), for "did you mean" and for what a place's default is.
"""
from __future__ import annotations

import typing

from pydantic import BaseModel

from provision.providers import registry
from provision.spec.model import ClusterSpec

__all__ = ["data_loc", "has_default", "known_keys", "models_at"]
_TYPE_TAGS = ("str", "int", "bool", "float", "list", "dict")


def data_loc(loc: tuple, data: dict) -> tuple:
    """Drop the tags pydantic inserts: the provider discriminator (provider.sandbox.subnet -> provider.subnet) and
    union members (addresses.str, addresses.list[str]), which are never keys of the data."""
    out: list = []
    node = data
    for part in loc:
        absent = isinstance(part, str) and not (isinstance(node, dict) and part in node)
        if absent and (part in registry.names() and out and out[-1] == "provider" or part in _TYPE_TAGS
                       or "[" in part):
            continue
        out.append(part)
        node = node.get(part) if isinstance(node, dict) else (
            node[part] if isinstance(node, list) and isinstance(part, int) and part < len(node) else None)
    return tuple(out)


def models_at(loc: tuple) -> list[type[BaseModel]]:
    """The models whose fields are allowed at a data path, following list items and the provider union."""
    models: list[type[BaseModel]] = [ClusterSpec]
    for part in loc:
        if isinstance(part, int):
            continue
        models = [m for model in models if part in model.model_fields
                  for m in _models_in(model.model_fields[part].annotation)]
    return models


def known_keys(loc: tuple) -> set[str]:
    """The field names allowed at a data path."""
    return {name for model in models_at(loc) for name in model.model_fields}


def has_default(loc: tuple) -> bool:
    """Whether the key a data path ends in may be left out (a field with a default in every model that has it, or
    no field at all: an unknown key)."""
    fields = [m.model_fields[loc[-1]] for m in models_at(loc[:-1]) if loc[-1] in m.model_fields]
    return all(not field.is_required() for field in fields)


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """Every model class inside Optional[X], list[X] or Annotated[Union[...], ...]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
