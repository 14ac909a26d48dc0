"""The cluster spec's JSON Schema, generated from the pydantic models: for editors (yaml-language-server) and other
tools. It checks structure only; `provision validate` adds the semantic checks (and line numbers)."""
from __future__ import annotations

import json

from provision.spec.model import ClusterSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"  # the dialect pydantic writes


def json_schema() -> dict:
    """The schema as a mapping."""
    return {"$schema": DIALECT, **ClusterSpec.model_json_schema(), "title": "gpu-provision cluster spec"}


def schema_text() -> str:
    """The schema as JSON text, keys in a stable order, ending with a newline."""
    return json.dumps(json_schema(), indent=2) + "\n"
