"""DynamoDB helpers every memory-table store uses: items through boto3's `TypeSerializer`/`TypeDeserializer`,
batch calls that resend what DynamoDB left unprocessed, and the tenant's validated client.

Attribute values are never spelled by hand: `dynamo_item(...)` serializes plain Python values (str -> S, int or
Decimal -> N, bytes -> B, bool -> BOOL, None -> NULL, list -> L, dict -> M, set of str -> SS), so the stored
format is exactly the one the stores wrote before (the same names and types; numbers as their decimal text).
`plain(...)` reads an item back: numbers come back as `Decimal` (int() them where an int is meant), binary as
`bytes`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

from ...domain.errors import UpstreamUnavailable, ValidationFailed
from ...domain.records import is_valid_tenant
from ...domain.retry import DYNAMODB_BATCH, Retry
from ._errors import upstream_errors

Item = dict[str, Any]
"""An item (or key) in DynamoDB's wire format: attribute name -> attribute value."""

_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()


def attr(plain_value: Any) -> dict[str, Any]:
    """One attribute value."""
    return _SERIALIZER.serialize(plain_value)


def dynamo_item(**attributes: Any) -> Item:
    """An item or key from plain values (every attribute given is written; None would be a NULL value)."""
    return {name: _SERIALIZER.serialize(v) for name, v in attributes.items()}


def expr_values(**named: Any) -> Item:
    """ExpressionAttributeValues: `expr_values(pk=x)` is `{":pk": {"S": x}}`."""
    return {f":{name}": _SERIALIZER.serialize(v) for name, v in named.items()}


def plain(stored: Mapping[str, Any]) -> dict[str, Any]:
    """An item read from DynamoDB as plain values (numbers as Decimal, binary as bytes)."""
    return {name: _unwrap(_DESERIALIZER.deserialize(v)) for name, v in stored.items()}


_MISSING: Any = object()


def _read(stored: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    """Attribute `name` deserialized, if it is of `kind`; else `default`, or KeyError when none is given (as
    indexing a missing attribute or type would)."""
    wire = stored.get(name)
    read = _unwrap(_DESERIALIZER.deserialize(wire)) if isinstance(wire, Mapping) and len(wire) == 1 else None
    if isinstance(read, kind):
        return read
    if default is _MISSING:
        raise KeyError(f"attribute {name!r} is missing or not {kind}")
    return default


def read_text(stored: Mapping[str, Any], name: str, default: Any = _MISSING) -> Any:
    """The string attribute `name` (`default` when it is absent or not a string; KeyError without one)."""
    return _read(stored, name, str, default)


def read_number(stored: Mapping[str, Any], name: str, default: Any = _MISSING) -> Any:
    """The number attribute `name` as an int (`default` when absent or not a number; KeyError without one)."""
    read = _read(stored, name, Decimal, _MISSING if default is _MISSING else None)
    if read is None:
        return default
    if read != read.to_integral_value():
        raise ValueError(f"attribute {name!r} is not an integer: {read}")
    return int(read)


def read_decimal(stored: Mapping[str, Any], name: str, default: Any = _MISSING) -> Any:
    """The number attribute `name` as it is stored (a Decimal: amounts with a fraction)."""
    return _read(stored, name, Decimal, default)


def read_binary(stored: Mapping[str, Any], name: str, default: Any = _MISSING) -> Any:
    """The binary attribute `name` as bytes."""
    return _read(stored, name, bytes, default)


def read_flag(stored: Mapping[str, Any], name: str, default: Any = _MISSING) -> Any:
    """The boolean attribute `name`."""
    return _read(stored, name, bool, default)


def read_strings(stored: Mapping[str, Any], name: str) -> list[str]:
    """The list-of-strings attribute `name` (an empty list when absent)."""
    read = _read(stored, name, list, [])
    return [v for v in read if isinstance(v, str)]


def _unwrap(read: Any) -> Any:
    return read.value if isinstance(read, Binary) else read


def tenant_client(client_factory: Callable[[str], Any], tenant: str) -> Any:
    """The tenant's client (its credentials confine it to `<tenant>#` keys), after checking the tenant id: an
    id that is not one could reach another tenant's keys by its prefix."""
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")
    return client_factory(tenant)


# --------------------------------------------------------------------------- batch calls


def until_processed(
    send: Callable[[dict[str, Any]], dict[str, Any]],
    request: dict[str, Any],
    *,
    operation: str,
    advice: str,
    retry: Retry | None = None,
) -> Iterator[dict[str, Any]]:
    """Each answer to a BatchWriteItem or BatchGetItem `request` and to the calls that resend what it left
    unprocessed (the table is throttling), with the full-jitter backoff of `retry` in between. When items are
    still unprocessed after the attempts or the deadline, raises `UpstreamUnavailable` (503) naming the keys
    that were not written or read, plus `advice` (what the caller can do): never a silent partial result."""
    unprocessed = "UnprocessedKeys" if operation == "BatchGetItem" else "UnprocessedItems"
    retry = retry or Retry(DYNAMODB_BATCH)
    pending = request
    run = retry.attempts()
    for _ in run:
        with upstream_errors("DynamoDB", operation):
            response = send(pending)
        yield response
        pending = response.get(unprocessed) or {}
        if not pending:
            return
    keys = pending_keys(pending)
    attempts = run.exhausted.attempts if run.exhausted else retry.policy.max_attempts
    shown = ", ".join(f"{pk}/{sk}" for pk, sk in keys[:10]) + (" ..." if len(keys) > 10 else "")
    raise UpstreamUnavailable(
        f"DynamoDB left {len(keys)} item(s) unprocessed during {operation} after {attempts} attempts "
        f"(the table is throttling): {shown}; {advice}",
        service="DynamoDB",
        operation=operation,
        unprocessed=[list(key) for key in keys],
        retry_after_seconds=retry.policy.retry_after,
    )


def write_all(
    send: Callable[[dict[str, Any]], dict[str, Any]],
    request: dict[str, Any],
    *,
    advice: str,
    retry: Retry | None = None,
) -> None:
    """A BatchWriteItem `request` until every item is written (`until_processed`: 503 naming what was not)."""
    for _ in until_processed(send, request, operation="BatchWriteItem", advice=advice, retry=retry):
        pass


def pending_keys(pending: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (pk, sk) of every request left in an UnprocessedItems or UnprocessedKeys map."""
    keys: list[Mapping[str, Any]] = []
    for requests in pending.values():
        if isinstance(requests, Mapping):  # BatchGetItem: {"Keys": [...], ...}
            keys.extend(requests.get("Keys", []))
            continue
        for request in requests:  # BatchWriteItem: [{"PutRequest": {"Item"}} | {"DeleteRequest": {"Key"}}]
            put, delete = request.get("PutRequest"), request.get("DeleteRequest")
            keys.append(put["Item"] if put else delete["Key"])
    return [(str(read_text(key, "pk", "")), str(read_text(key, "sk", ""))) for key in keys]
