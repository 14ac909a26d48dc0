"""A spec's fingerprint: SHA-256 of its file's bytes, or of its canonical JSON when only the model is at hand.

The canonical JSON is the validated model (defaults filled in) with sorted keys and no whitespace, so comments,
key order and formatting of the file do not change it; two specs with the same digest describe the same cluster.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from provision.spec.model import ClusterSpec

PREFIX = "sha256:"


def canonical_json(spec: ClusterSpec) -> str:
    """The model as compact JSON with sorted keys."""
    return json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def of_spec(spec: ClusterSpec) -> str:
    """"sha256:<hex>" of the spec's canonical JSON."""
    return PREFIX + hashlib.sha256(canonical_json(spec).encode("utf-8")).hexdigest()


def of_file(path: Path) -> str:
    """"sha256:<hex>" of a spec file's bytes."""
    return PREFIX + hashlib.sha256(path.read_bytes()).hexdigest()
