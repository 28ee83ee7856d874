"""DynamoDB helpers every memory-table store uses: attribute values and the tenant's validated client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...domain.errors import ValidationFailed
from ...domain.records import is_valid_tenant


def s(value: str) -> dict[str, str]:
    """A string attribute value."""
    return {"S": value}


def n(value: int) -> dict[str, str]:
    """A number attribute value."""
    return {"N": str(value)}


def tenant_client(client_factory: Callable[[str], Any], tenant: str) -> Any:
    """The tenant's client (its credentials confine it to `<tenant>#` keys), after checking the tenant id: an
    id that is not one could reach another tenant's keys by its prefix."""
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")
    return client_factory(tenant)
