"""The providers by name: each one's spec section (config model), its semantic checks and its implementation.

spec/ builds the `provider:` union from `configs()` (light modules: pydantic only); a provider's checks and its
Provider class are imported only when used, so reading a spec never loads boto3, and the names alone (help texts,
`init`) load nothing. A new provider is a package under providers/ (config.py, validation.py, provider.py) and one
entry here.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from provision.errors import UsageError

if TYPE_CHECKING:
    from provision.spec.findings import Finding
    from provision.spec.section import ProviderSection


@dataclass(frozen=True)
class Registered:
    """One provider: where its spec section, its checks and its implementation live ("module:attribute")."""

    section: str  # a provision.spec.section.ProviderSection subclass
    implementation: str  # a provision.providers.base.Provider subclass
    checks: str | None = None  # a function ClusterSpec -> list[Finding]: the provider's semantic checks

    @property
    def config(self) -> type[ProviderSection]:
        """The spec section's model, imported now."""
        return _load(self.section)


PROVIDERS: dict[str, Registered] = {
    "sandbox": Registered("provision.providers.sandbox.config:SandboxConfig",
                          "provision.providers.sandbox.provider:SandboxProvider",
                          "provision.providers.sandbox.validation:findings"),
    "static": Registered("provision.providers.static.config:StaticConfig",
                         "provision.providers.static.provider:StaticProvider"),
    "aws": Registered("provision.providers.aws.config:AwsConfig", "provision.providers.aws.provider:AwsProvider",
                      "provision.providers.aws.validation:findings"),
}


def names() -> tuple[str, ...]:
    """The provider names, in the order help texts list them."""
    return tuple(PROVIDERS)


def configs() -> tuple[type[ProviderSection], ...]:
    """Every provider's spec section (the members of the spec's `provider:` union)."""
    return tuple(entry.config for entry in PROVIDERS.values())


def _entry(name: str) -> Registered:
    try:
        return PROVIDERS[name]
    except KeyError:
        raise UsageError(f"unknown provider '{name}'", hint=f"use one of {', '.join(PROVIDERS)}") from None


def _load(target: str) -> object:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def checks(name: str) -> Callable[..., list[Finding]]:
    """The provider's semantic checks on a whole spec (a function returning findings; none: no findings)."""
    target = _entry(name).checks
    return _load(target) if target else (lambda spec: [])


def implementation(name: str) -> type:
    """The provider's class (a provision.providers.base.Provider), imported now."""
    return _load(_entry(name).implementation)
