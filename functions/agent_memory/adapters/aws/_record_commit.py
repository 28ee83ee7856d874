"""A record store commit as one DynamoDB transaction (`DynamoRecordStore.commit`): its items (each record with
its version condition and its pointers, then the change entries), the transaction's limits, and a cancelled
transaction read back as the domain's refusal (which record, which version or status it expected)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import ConcurrentModification, TooLarge, UpstreamUnavailable
from ...domain.ports import RecordWrite
from ...domain.records import ChangeEntry
from ._dynamo import attr, expr_values, read_number, read_text
from ._record_items import (
    change_item,
    conflict_pk,
    hash_pk,
    next_stamp,
    pointer_item,
    record_item,
    stamp_text,
)

MAX_TRANSACTION_ITEMS = 100
"""DynamoDB's TransactWriteItems maximum. Larger commits are refused, never split: splitting would break
the all-or-nothing promise of `commit()`."""
MAX_TRANSACTION_BYTES = 4_000_000
"""TransactWriteItems accepts at most 4 MB in total; checked (approximately) before the call."""


@dataclass(frozen=True)
class Transaction:
    items: list[dict[str, Any]]
    """The TransactItems, in order."""
    owners: list[str | None]
    """The record id each item guards (None: a pointer or change entry), by position: a cancellation's
    reasons come back in the same order."""
    writes: list[RecordWrite]
    """One write per record (`merge_writes`)."""


def transaction(
    table: str, tenant: str, writes: Sequence[RecordWrite], changes: Sequence[ChangeEntry]
) -> Transaction:
    """The commit's items within DynamoDB's limits (TooLarge beyond them: a commit is never split)."""
    merged = merge_writes(writes)
    items: list[dict[str, Any]] = []
    owners: list[str | None] = []
    for write in merged:
        record = write.record
        items.append(record_put(table, write))
        owners.append(record.id)
        pointers = [hash_pk(tenant, record.namespace, record.content_hash)]
        if record.conflict_group is not None:
            pointers.append(conflict_pk(tenant, record.conflict_group))
        for pk in pointers:
            items.append({"Put": {"TableName": table, "Item": pointer_item(pk, record)}})
            owners.append(None)
    base = next_stamp()
    for position, change in enumerate(changes):
        items.append({"Put": {"TableName": table, "Item": change_item(change, stamp_text(base, position))}})
        owners.append(None)
    _check_limits(items)
    return Transaction(items, owners, merged)


def _check_limits(items: list[dict[str, Any]]) -> None:
    if len(items) > MAX_TRANSACTION_ITEMS:
        raise TooLarge(
            f"this commit needs {len(items)} DynamoDB items but one transaction holds at most "
            f"{MAX_TRANSACTION_ITEMS} (each record write takes 2-3, each change entry 1); "
            "commit fewer records at a time",
            items=len(items),
            limit=MAX_TRANSACTION_ITEMS,
        )
    size = len(json.dumps(items))
    if size > MAX_TRANSACTION_BYTES:
        raise TooLarge(
            f"this commit is about {size} bytes but one DynamoDB transaction holds at most "
            f"{MAX_TRANSACTION_BYTES}; commit fewer records at a time",
            bytes=size,
            limit=MAX_TRANSACTION_BYTES,
        )


def merge_writes(writes: Sequence[RecordWrite]) -> list[RecordWrite]:
    """One write per record: DynamoDB cannot touch an item twice in a transaction. A later write of the
    same record must expect the version the earlier one stores, exactly as if applied in sequence; it
    then replaces the earlier item while the earlier condition guards the stored version."""
    merged: dict[str, RecordWrite] = {}
    for write in writes:
        record = write.record
        earlier = merged.get(record.id)
        if earlier is None:
            merged[record.id] = write
            continue
        if write.expected_version != earlier.record.version:
            raise ConcurrentModification(
                f"record {record.id} is written twice in one commit and the second write expects "
                f"version {write.expected_version}, but the first one stores {earlier.record.version}",
                record_id=record.id,
                expected_version=write.expected_version,
                stored_version=earlier.record.version,
            )
        merged[record.id] = RecordWrite(record, earlier.expected_version, earlier.expected_status)
    return list(merged.values())


def record_put(table: str, write: RecordWrite) -> dict[str, Any]:
    """The record's Put, conditional on the version (and status) it expects, or on its absence."""
    put: dict[str, Any] = {
        "TableName": table,
        "Item": record_item(write.record),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if write.expected_version is None:
        put["ConditionExpression"] = "attribute_not_exists(pk)"
    else:
        put["ConditionExpression"] = "#version = :expected"
        put["ExpressionAttributeNames"] = {"#version": "version"}
        put["ExpressionAttributeValues"] = expr_values(expected=write.expected_version)
        if write.expected_status is not None:
            put["ConditionExpression"] += " AND #status = :expected_status"
            put["ExpressionAttributeNames"]["#status"] = "status"
            put["ExpressionAttributeValues"][":expected_status"] = attr(write.expected_status.value)
    return {"Put": put}


def raise_cancelled(error: ClientError, owners: list[str | None], writes: Sequence[RecordWrite]) -> None:
    """A TransactionCanceledException as the domain's refusal: the first record whose condition failed (it
    exists already, is gone, or has another version or status), a conflicting transaction, or throttling."""
    reasons = error.response.get("CancellationReasons") or []
    expected = {w.record.id: w.expected_version for w in writes}
    expected_status = {w.record.id: w.expected_status.value for w in writes if w.expected_status is not None}
    for index, reason in enumerate(reasons):
        code = reason.get("Code", "None")
        record_id = owners[index] if index < len(owners) else None
        if code == "ConditionalCheckFailed" and record_id is not None:
            _raise_condition_failed(error, record_id, reason.get("Item") or {}, expected, expected_status)
        if code == "TransactionConflict":
            raise ConcurrentModification(
                "another request is changing the same records right now; read them again and retry",
                record_id=record_id,
            ) from error
        if code in {"ThrottlingError", "ProvisionedThroughputExceeded"}:
            raise UpstreamUnavailable(
                "DynamoDB is throttling this table; retry in a few seconds", aws_error=code
            ) from error
    if any(r.get("Code") == "ConditionalCheckFailed" for r in reasons):
        raise ConcurrentModification(
            "a record changed while this commit was applied; read it again and retry"
        ) from error
    raise error


def _raise_condition_failed(
    error: ClientError,
    record_id: str,
    old: dict[str, Any],
    expected: dict[str, int | None],
    expected_status: dict[str, str],
) -> None:
    stored = int(read_number(old, "version")) if "version" in old else None
    if expected[record_id] is None:
        raise ConcurrentModification(
            f"record {record_id} already exists; it cannot be created twice", record_id=record_id
        ) from error
    if stored is None and not old:
        raise ConcurrentModification(
            f"record {record_id} does not exist, so version {expected[record_id]} cannot be replaced",
            record_id=record_id,
            expected_version=expected[record_id],
        ) from error
    wanted_status = expected_status.get(record_id)
    statuses = (
        {"expected_status": wanted_status, "stored_status": read_text(old, "status", None)}
        if wanted_status
        else {}
    )
    raise ConcurrentModification(
        f"record {record_id} was changed by someone else (stored version {stored}, expected "
        f"{expected[record_id]}"
        + (f"; stored status {statuses['stored_status']}, expected {wanted_status}" if statuses else "")
        + "); read it again and retry",
        record_id=record_id,
        expected_version=expected[record_id],
        stored_version=stored,
        **statuses,
    ) from error
