"""`provision init`: a commented example spec for a provider, one that validates; and the providers it knows."""
from __future__ import annotations

import re

from provision.errors import UsageError
from provision.limits import clip
from provision.providers import registry


def providers() -> tuple[str, ...]:
    """The providers `init` writes an example for; loads no provider and no model (help texts name them)."""
    return registry.names()


def example(provider: str, name: str, file_name: str) -> str:
    """The example spec text for a provider and cluster name (`file_name` is how its comments refer to it)."""
    # Imported here, not with the module, so that the CLI's help names the providers without loading pydantic.
    from provision.spec.model import NAME_HINT, NAME_PATTERN
    from provision.templating import environment

    names = providers()
    if provider not in names:
        raise UsageError(f"--provider: {clip(provider)} is not a provider",
                         hint=f"use {', '.join(names[:-1])} or {names[-1]}")
    if not re.fullmatch(NAME_PATTERN, name):
        raise UsageError(f"--name: {clip(name)} is not a cluster name", hint=f"use {NAME_HINT}")
    return environment().get_template(f"spec/{provider}.yaml.j2").render(name=name, file_name=file_name)
