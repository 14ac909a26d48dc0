"""Provider registry: a name maps to an implementation, imported only when used."""
from __future__ import annotations

import importlib

from provision.errors import UsageError
from provision.providers.base import Provider
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

_REGISTRY: dict[str, str] = {
    "sandbox": "provision.providers.sandbox:SandboxProvider",
    "static": "provision.providers.static:StaticProvider",
    "aws": "provision.providers.aws:AwsProvider",
}


def provider_class(name: str) -> type[Provider]:
    """Import and return the provider class registered under a name."""
    try:
        module_name, _, attr = _REGISTRY[name].partition(":")
    except KeyError:
        raise UsageError(f"unknown provider '{name}'", hint=f"use one of {', '.join(_REGISTRY)}") from None
    return getattr(importlib.import_module(module_name), attr)


def get_provider(spec: ClusterSpec) -> Provider:
    """The provider instance for a spec, bound to the cluster's state directory."""
    return provider_class(spec.provider.type)(spec, ClusterState.for_spec(spec))
