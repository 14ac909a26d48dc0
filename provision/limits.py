"""Bounds on every input, in one place: a spec is read, expanded and rendered in bounded time and memory.

docs/security.md documents these figures; change them together.
"""
from __future__ import annotations

# Nodes: checked before a hostlist is expanded (provision.hostlist), and summed over the cluster by the spec model.
MAX_NODES_PER_GROUP = 10_000
MAX_NODES_PER_CLUSTER = 20_000
MAX_NODE_GROUPS = 256
MAX_HOSTLIST_CHARS = 4_096  # a hostlist expression or an address expression

# The spec file (provision.spec.reader).
MAX_SPEC_BYTES = 1024 * 1024  # a regular file of at most 1 MiB
MAX_YAML_DEPTH = 32  # nested mappings and lists
MAX_YAML_NODES = 100_000  # scalars and collections after every alias is expanded
MAX_SCALAR_CHARS = 4_096  # one value or key

# Paths (provision.files): what Linux filesystems take; longer ones fail with ENAMETOOLONG.
MAX_NAME_BYTES = 255  # one component of a path (NAME_MAX)
MAX_PATH_BYTES = 4_095  # a whole path (PATH_MAX, 4,096 with its NUL)

# Messages: a value is shown cut to this many characters.
SHOWN_VALUE_CHARS = 80


def clip(value: object, width: int = SHOWN_VALUE_CHARS) -> str:
    """A value as shown in a message: its repr, cut to `width` characters with the full length named."""
    return cut(repr(value), width)


def cut(text: str, width: int = SHOWN_VALUE_CHARS) -> str:
    """Plain text cut to `width` characters, with the full length named."""
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"
