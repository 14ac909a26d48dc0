"""The aws provider (being built; see its issue)."""
from __future__ import annotations

from provision.errors import ProviderError
from provision.providers.base import Provider, Teardown


class AwsProvider(Provider):
    """Placeholder until the aws provider lands: every action fails clearly."""

    name = "aws"

    def create(self, progress=None):
        """Not built yet."""
        raise ProviderError("the aws provider is not implemented yet")

    def describe(self):
        """Not built yet."""
        raise ProviderError("the aws provider is not implemented yet")

    def destroy(self, progress=None) -> Teardown:
        """Not built yet."""
        raise ProviderError("the aws provider is not implemented yet")
