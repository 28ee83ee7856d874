"""The memory table's record-store items: key and time text, page cursors, and each item's (de)serialization.

The key design is in `dynamodb_store` (and docs/dynamodb-keys.md); this module only builds and reads the items
it names. Times are fixed-width UTC text (`2026-11-30T09:15:00.000000Z`) so string order is time order."""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
from datetime import UTC, datetime
from typing import Any, TypeVar

from aws_lambda_powertools import Logger
from pydantic import BaseModel

from ...domain.errors import ValidationFailed
from ...domain.records import (
    ChangeEntry,
    MemoryRecord,
    describe_invalid,
    is_valid_namespace,
    is_valid_tenant,
)
from ._dynamo import attr, dynamo_item, read_number, read_text

Item = dict[str, dict[str, Any]]
M = TypeVar("M", bound=BaseModel)
UNREADABLE = (ValueError, KeyError, TypeError)
"""What a stored item that no longer validates raises (pydantic's ValidationError is a ValueError)."""

TREE_SEPARATOR = "#"
"""Between the namespace and the creation position in `gsi3sk`: below every character a namespace may hold
(`-` is the lowest), so a namespace's records sort before those of any namespace it is a prefix of."""

logger = Logger()
"""The service's Powertools logger (the handlers' service name, so the same output and keys)."""


# --------------------------------------------------------------------------- text of keys, times and cursors


def sortable_time(moment: datetime) -> str:
    """Fixed-width UTC text whose string order is time order. Naive datetimes are taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


_stamp_lock = threading.Lock()
_last_stamp = 0


def next_stamp() -> int:
    """Strictly increasing within this process, close to wall-clock order across processes."""
    global _last_stamp
    with _stamp_lock:
        _last_stamp = max(_last_stamp + 1, time.time_ns())
        return _last_stamp


def stamp_text(base: int, position: int) -> str:
    return f"{base:020d}{position:05d}"


def encode_cursor(kind: str, position: str) -> str:
    raw = json.dumps([kind, position], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor_value(cursor: str) -> list[Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error) as error:
        raise ValidationFailed(
            "invalid page cursor: pass back the next_cursor of the previous page"
        ) from error
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)):
        raise ValidationFailed("invalid page cursor: it does not belong to this listing")
    return value


def cursor_kind(cursor: str | None) -> str | None:
    """The listing a cursor belongs to (None without a cursor)."""
    return None if cursor is None else str(_cursor_value(cursor)[0])


def decode_cursor(cursor: str | None, kind: str) -> str | None:
    if cursor is None:
        return None
    value = _cursor_value(cursor)
    if value[0] != kind:
        raise ValidationFailed("invalid page cursor: it does not belong to this listing")
    return str(value[1])


def check_tenant(tenant: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")


def check_namespace(namespace: str) -> None:
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")


def check_limit(limit: int) -> None:
    if limit < 1:
        raise ValidationFailed(f"page limit must be at least 1, got {limit}")


# --------------------------------------------------------------------------- record items


def record_position(record: MemoryRecord) -> str:
    """Where a record sorts in creation order (gsi1sk after `REC#`, gsi2sk)."""
    return f"{sortable_time(record.created_at)}#{record.id}"


def tree_position(namespace: str, position: str) -> str:
    """Where a record sorts in a namespace tree (`gsi3sk`): by namespace, then in creation order."""
    return f"{namespace}{TREE_SEPARATOR}{position}"


def record_tree_position(record: MemoryRecord) -> str:
    return tree_position(record.namespace, record_position(record))


def record_item(record: MemoryRecord) -> Item:
    t, position = record.tenant, record_position(record)
    item: Item = dynamo_item(
        pk=f"{t}#REC#{record.id}",
        sk="REC",
        gsi1pk=f"{t}#NS#{record.namespace}",
        gsi1sk=f"REC#{position}",
        gsi2pk=f"{t}#REC",
        gsi2sk=position,
        gsi3sk=tree_position(record.namespace, position),
        kind="record",
        tenant=t,
        record_id=record.id,
        namespace=record.namespace,
        type=record.type.value,
        status=record.status.value,
        tier=record.tier.value,
        content_hash=record.content_hash,
        created_at=sortable_time(record.created_at),
        last_access_at=sortable_time(record.last_access_at),
        access_count=record.access_count,
        version=record.version,
        doc=record.model_dump_json(),
    )
    if record.conflict_group is not None:
        item["conflict_group"] = attr(record.conflict_group)
    return item


def pointer_item(pk: str, record: MemoryRecord) -> Item:
    return dynamo_item(pk=pk, sk=f"REC#{record.id}", kind="pointer", record_id=record.id)


def hash_pk(tenant: str, namespace: str, content_hash: str) -> str:
    return f"{tenant}#HASH#{namespace}#{content_hash}"


def conflict_pk(tenant: str, group: str) -> str:
    return f"{tenant}#CONFLICT#{group}"


def change_item(change: ChangeEntry, stamp: str) -> Item:
    t, position = change.tenant, f"{sortable_time(change.at)}#{stamp}#{change.id}"
    return dynamo_item(
        pk=f"{t}#CHG#{change.record_id}",
        sk=position,
        gsi1pk=f"{t}#NS#{change.namespace}",
        gsi1sk=f"CHG#{position}",
        gsi2pk=f"{t}#CHG",
        gsi2sk=position,
        kind="change",
        namespace=change.namespace,
        doc=change.model_dump_json(),
    )


# --------------------------------------------------------------------------- reading items back


def text(item: Item, attribute: str) -> str:
    return str(read_text(item, attribute, ""))


def record_from_item(item: Item) -> MemoryRecord:
    data = json.loads(read_text(item, "doc"))
    # touch() updates these two attributes in place without rewriting `doc`: they are authoritative.
    data["access_count"] = int(read_number(item, "access_count"))
    stored_access = read_text(item, "last_access_at")
    if sortable_time(datetime.fromisoformat(data["last_access_at"])) != stored_access:
        data["last_access_at"] = parse_time(stored_access).isoformat()
    return MemoryRecord.model_validate(data)


def read_record(item: Item, tenant: str) -> MemoryRecord | None:
    """The record, or None when it no longer validates (logged without content): one bad item, e.g.
    written by an older version, must never make a whole namespace unreadable. `agent-memory repair`."""
    try:
        return record_from_item(item)
    except UNREADABLE as error:
        warn_unreadable("MemoryRecord", tenant, item, error)
        return None


def read_model(model: type[M], item: Item, tenant: str) -> M | None:
    try:
        return model.model_validate_json(read_text(item, "doc"))
    except UNREADABLE as error:
        warn_unreadable(model.__name__, tenant, item, error)
        return None


def overlaid_doc(item: Item) -> str:
    """`doc` with the access attributes touch() keeps beside it, as the record's JSON (as stored if it is
    not a JSON object, so repair keeps it whole)."""
    raw = text(item, "doc")
    try:
        data = json.loads(raw)
        if isinstance(data, dict):
            data["access_count"] = int(read_number(item, "access_count"))
            data["last_access_at"] = parse_time(read_text(item, "last_access_at")).isoformat()
            return json.dumps(data)
    except UNREADABLE:
        pass
    return raw


def warn_unreadable(kind: str, tenant: str, item: Item, error: Exception) -> None:
    item_id = text(item, "record_id") or text(item, "sk")
    logger.warning(
        f"skipped an unreadable stored {kind}",
        extra={"kind": kind, "tenant": tenant, "item_id": item_id, "problem": describe_invalid(error)},
    )


def belongs_to(item: Item, tenant: str) -> bool:
    """Whether the item's base-table partition key is the tenant's (every pk starts with `<tenant>#`)."""
    pk = read_text(item, "pk", None)
    return isinstance(pk, str) and pk.startswith(f"{tenant}#")


def own_items(items: list[Item], tenant: str, index: str) -> list[Item]:
    """The tenant's items of a GSI response. LeadingKeys confined only the base pk of whoever wrote an item,
    not its GSI keys: another tenant's item is dropped (and counted in a warning, never its content)."""
    own = [item for item in items if belongs_to(item, tenant)]
    if len(own) < len(items):
        logger.warning(
            "dropped items of another tenant from a GSI query",
            extra={"index": index, "dropped": len(items) - len(own), "tenant": tenant},
        )
    return own
