"""Finding the cluster's resources by tag: adoption after a crash, and the teardown audit."""
from __future__ import annotations

from provision.adaptors.aws import Aws
from provision.providers.aws import tags


def one_by_tag(aws: Aws, operation: str, key: str, id_field: str, owner: tags.Owner, resource: str) -> str | None:
    """The id of the EC2 resource carrying the cluster's tags and a state key, or None."""
    items = aws.pages("ec2", operation, key, Filters=owner.filters(resource=resource))
    return items[0][id_field] if items else None
