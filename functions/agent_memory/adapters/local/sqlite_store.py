"""`RecordStore` on one SQLite file: records, their change log and the recall log, for every tenant.

Each row is keyed by tenant first and every statement filters on it, so tenant isolation holds by key design,
as it does with DynamoDB partition keys. The record itself is stored as its JSON; the columns next to it are
copies of the fields that lists filter and sort on.
"""

from __future__ import annotations

import builtins
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, TypeAdapter

from ...domain.errors import ConcurrentModification, ValidationFailed
from ...domain.ports import Page, RecordCounts, RecordQuery, RecordWrite, UnreadableRecord
from ...domain.records import ChangeEntry, MemoryRecord, RecallLogEntry, describe_invalid
from ._sqlite import (
    DEFAULT_BUSY_TIMEOUT_MS,
    SqliteDatabase,
    decode_cursor,
    encode_cursor,
    placeholders,
    sortable_time,
    versioned_schema,
)

SCHEMA_VERSION = 1

# SQLite limits bound parameters per statement (32766 since 3.32); stay far below it.
_ID_CHUNK = 500

_SCHEMA = """
-- records_by_hash_created also covers find_by_hash's ORDER BY: with (tenant, namespace, content_hash) alone
-- SQLite chose records_by_namespace and scanned the whole namespace on every remember
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);

CREATE TABLE IF NOT EXISTS records (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    tier TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_access_at TEXT NOT NULL,
    conflict_group TEXT,
    version INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_by_created ON records (tenant, created_at, id);
CREATE INDEX IF NOT EXISTS records_by_namespace ON records (tenant, namespace, created_at, id);
DROP INDEX IF EXISTS records_by_hash;
CREATE INDEX IF NOT EXISTS records_by_hash_created ON records (tenant, namespace, content_hash, created_at, id);
CREATE INDEX IF NOT EXISTS records_by_access ON records (tenant, last_access_at);
CREATE INDEX IF NOT EXISTS records_by_conflict ON records (tenant, conflict_group)
    WHERE conflict_group IS NOT NULL;

CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    record_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS changes_by_id ON changes (tenant, id);
CREATE INDEX IF NOT EXISTS changes_by_at ON changes (tenant, at, seq);
CREATE INDEX IF NOT EXISTS changes_by_record ON changes (tenant, record_id, at, seq);
CREATE INDEX IF NOT EXISTS changes_by_namespace ON changes (tenant, namespace, at, seq);

CREATE TABLE IF NOT EXISTS recalls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS recalls_by_namespace ON recalls (tenant, namespace, at, seq);
"""

_INIT_SCHEMA = versioned_schema(_SCHEMA, SCHEMA_VERSION, "record")

_RECORD_COLUMNS = (
    "tenant, id, namespace, type, status, tier, content_hash, created_at, last_access_at, conflict_group, "
    "version, body"
)

# The JSON form pydantic gives a datetime inside a record, so touch() writes what model_dump_json would.
_DATETIME_JSON = TypeAdapter(datetime)


def _record_row(record: MemoryRecord) -> tuple[object, ...]:
    return (
        record.tenant,
        record.id,
        record.namespace,
        record.type.value,
        record.status.value,
        record.tier.value,
        record.content_hash,
        sortable_time(record.created_at),
        sortable_time(record.last_access_at),
        record.conflict_group,
        record.version,
        record.model_dump_json(),
    )


logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


def _load(model: type[M], tenant: str, key: str, body: str) -> M | None:
    """The stored item, or None when it no longer validates (logged, with no content): one bad row, e.g.
    written by an older version, must never make a whole namespace unreadable. `agent-memory repair`."""
    try:
        return model.model_validate_json(body)
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        problem = describe_invalid(error)
        logger.warning(
            "skipped an unreadable stored %s %s of tenant %s: %s",
            model.__name__,
            key,
            tenant,
            problem,
            extra={"kind": model.__name__, "tenant": tenant, "item_id": key, "problem": problem},
        )
        return None


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _ID_CHUNK):
        yield items[start : start + _ID_CHUNK]


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValidationFailed(f"page limit must be at least 1, got {limit}")


class SqliteRecordStore:
    """Records, change log and recall log in one SQLite file (WAL). Safe for several threads and several
    processes on the same file: writers serialise on SQLite's write lock (`BEGIN IMMEDIATE`)."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self._db = SqliteDatabase(path, _INIT_SCHEMA, busy_timeout_ms=busy_timeout_ms)
        # Open (and create the schema) now, so a bad path fails at start-up rather than on the first request.
        self._db.connection()

    @property
    def path(self) -> Path:
        return self._db.path

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteRecordStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writes

    def commit(self, writes: Sequence[RecordWrite], changes: Sequence[ChangeEntry]) -> None:
        if not writes and not changes:
            return
        with self._db.transaction() as conn:
            for write in writes:
                self._apply(conn, write)
            for change in changes:
                cursor = conn.execute(
                    "INSERT INTO changes (tenant, id, record_id, namespace, at, body) VALUES (?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (tenant, id) DO NOTHING",
                    (
                        change.tenant,
                        change.id,
                        change.record_id,
                        change.namespace,
                        sortable_time(change.at),
                        change.model_dump_json(),
                    ),
                )
                if cursor.rowcount != 1:
                    raise ConcurrentModification(
                        f"change entry {change.id} was already recorded; retry the operation",
                        change_id=change.id,
                    )

    def _apply(self, conn: sqlite3.Connection, write: RecordWrite) -> None:
        record = write.record
        row = _record_row(record)
        if write.expected_version is None:
            cursor = conn.execute(
                f"INSERT INTO records ({_RECORD_COLUMNS}) VALUES ({placeholders(len(row))}) "
                "ON CONFLICT (tenant, id) DO NOTHING",
                row,
            )
            if cursor.rowcount != 1:
                raise ConcurrentModification(
                    f"record {record.id} already exists; it cannot be created twice", record_id=record.id
                )
            return
        # The guard and the write are one statement inside the commit's BEGIN IMMEDIATE transaction: of two
        # writers expecting the same version (and status), exactly one matches the row.
        guard = "version = ?"
        guard_args: list[object] = [write.expected_version]
        if write.expected_status is not None:
            guard += " AND status = ?"
            guard_args.append(write.expected_status.value)
        cursor = conn.execute(
            "UPDATE records SET namespace = ?, type = ?, status = ?, tier = ?, content_hash = ?, "
            "created_at = ?, last_access_at = ?, conflict_group = ?, version = ?, body = ? "
            f"WHERE tenant = ? AND id = ? AND {guard}",
            (*row[2:], record.tenant, record.id, *guard_args),
        )
        if cursor.rowcount == 1:
            return
        current = conn.execute(
            "SELECT version, status FROM records WHERE tenant = ? AND id = ?", (record.tenant, record.id)
        ).fetchone()
        if current is None:
            raise ConcurrentModification(
                f"record {record.id} does not exist, so version {write.expected_version} cannot be replaced",
                record_id=record.id,
                expected_version=write.expected_version,
            )
        wanted_status = write.expected_status.value if write.expected_status is not None else None
        statuses = {"expected_status": wanted_status, "stored_status": current[1]} if wanted_status else {}
        raise ConcurrentModification(
            f"record {record.id} was changed by someone else (stored version {current[0]}, expected "
            f"{write.expected_version}"
            + (f"; stored status {current[1]}, expected {wanted_status}" if statuses else "")
            + "); read it again and retry",
            record_id=record.id,
            expected_version=write.expected_version,
            stored_version=current[0],
            **statuses,
        )

    def touch(self, tenant: str, record_ids: Sequence[str], at: datetime) -> None:
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return
        column = sortable_time(at)
        json_value = _DATETIME_JSON.dump_python(at, mode="json")
        with self._db.transaction() as conn:
            for chunk in _chunks(ids):
                # version is deliberately untouched: access bookkeeping must never fail a concurrent update.
                conn.execute(
                    "UPDATE records SET last_access_at = ?, body = json_set(body, '$.last_access_at', ?, "
                    "'$.access_count', json_extract(body, '$.access_count') + 1) "
                    f"WHERE tenant = ? AND id IN ({placeholders(len(chunk))})",
                    (column, json_value, tenant, *chunk),
                )

    def log_recall(self, entry: RecallLogEntry) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO recalls (tenant, id, namespace, at, body) VALUES (?, ?, ?, ?, ?)",
                (entry.tenant, entry.id, entry.namespace, sortable_time(entry.at), entry.model_dump_json()),
            )

    # ------------------------------------------------------------------ reads

    def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        row = (
            self._db.connection()
            .execute("SELECT body FROM records WHERE tenant = ? AND id = ?", (tenant, record_id))
            .fetchone()
        )
        return _load(MemoryRecord, tenant, record_id, row[0]) if row else None

    def get_many(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        """Existing records among `record_ids`, in the order given; missing and repeated ids are skipped."""
        ids = list(dict.fromkeys(record_ids))
        found: dict[str, MemoryRecord] = {}
        conn = self._db.connection()
        for chunk in _chunks(ids):
            rows = conn.execute(
                f"SELECT id, body FROM records WHERE tenant = ? AND id IN ({placeholders(len(chunk))})",
                (tenant, *chunk),
            )
            for record_id, body in rows:
                record = _load(MemoryRecord, tenant, record_id, body)
                if record is not None:
                    found[record_id] = record
        return [found[record_id] for record_id in ids if record_id in found]

    def find_by_hash(self, tenant: str, namespace: str, content_hash: str) -> list[MemoryRecord]:
        rows = self._db.connection().execute(
            "SELECT id, body FROM records WHERE tenant = ? AND namespace = ? AND content_hash = ? "
            "ORDER BY created_at, id",
            (tenant, namespace, content_hash),
        )
        loaded = (_load(MemoryRecord, tenant, record_id, body) for record_id, body in rows)
        return [record for record in loaded if record is not None]

    def list(self, tenant: str, query: RecordQuery) -> Page[MemoryRecord]:
        _check_limit(query.limit)
        clauses = ["tenant = ?"]
        params: list[object] = [tenant]
        if query.namespaces or query.namespaces_below:
            # A subtree is an index range: strictly below `/me` is ['/me/', '/me0') ('0' follows '/').
            either = [f"namespace IN ({placeholders(len(query.namespaces))})"] if query.namespaces else []
            params.extend(query.namespaces)
            bounds = [(ns, ns + "\x00") for ns in query.namespaces]
            for parent in query.namespaces_below:
                either.append("(namespace >= ? AND namespace < ?)")
                bounds.append((parent.rstrip("/") + "/", parent.rstrip("/") + "0"))
                params.extend(bounds[-1])
            # The envelope of the ranges as well, so the index is read as one range, not the whole tenant.
            clauses.append(f"({' OR '.join(either)}) AND namespace >= ? AND namespace < ?")
            params.extend((min(lo for lo, _ in bounds), max(hi for _, hi in bounds)))
        for column, values in (
            ("type", tuple(v.value for v in query.types)),
            ("status", tuple(v.value for v in query.statuses)),
            ("tier", tuple(v.value for v in query.tiers)),
        ):
            if values:
                clauses.append(f"{column} IN ({placeholders(len(values))})")
                params.extend(values)
        if query.conflict_group is not None:
            clauses.append("conflict_group = ?")
            params.append(query.conflict_group)
        if query.last_access_before is not None:
            clauses.append("last_access_at < ?")
            params.append(sortable_time(query.last_access_before))
        # A tree lists by namespace, then oldest first (the DynamoDB tree index's order): one index range.
        tree = bool(query.namespaces_below)
        order = ("namespace", "created_at", "id") if tree else ("created_at", "id")
        if query.cursor is not None:
            kind, types = ("tree", (str, str, str)) if tree else ("records", (str, str))
            clauses.append(f"({', '.join(order)}) > ({placeholders(len(order))})")
            params.extend(decode_cursor(query.cursor, kind, types))
        rows = (
            self._db.connection()
            .execute(
                f"SELECT {', '.join(order)}, body FROM records WHERE {' AND '.join(clauses)} "
                f"ORDER BY {', '.join(order)} LIMIT ?",
                (*params, query.limit + 1),
            )
            .fetchall()
        )
        # One row beyond the page tells whether a next page exists without a second query.
        page, more = rows[: query.limit], len(rows) > query.limit
        loaded = [_load(MemoryRecord, tenant, row[-2], row[-1]) for row in page]
        items = [record for record in loaded if record is not None]
        next_cursor = encode_cursor("tree" if tree else "records", *page[-1][:-1]) if more else None
        return Page(items=items, next_cursor=next_cursor, skipped=len(loaded) - len(items))

    def counts(self, tenant: str, namespace: str | None = None) -> RecordCounts:
        sql = "SELECT status, tier, type, COUNT(*) FROM records WHERE tenant = ?"
        params: list[object] = [tenant]
        if namespace is not None:
            sql += " AND namespace = ?"
            params.append(namespace)
        counts = RecordCounts()
        for status, tier, type_, count in self._db.connection().execute(
            sql + " GROUP BY status, tier, type", params
        ):
            counts.by_status[status] = counts.by_status.get(status, 0) + count
            counts.by_tier[tier] = counts.by_tier.get(tier, 0) + count
            counts.by_type[type_] = counts.by_type.get(type_, 0) + count
        return counts

    def list_changes(
        self,
        tenant: str,
        *,
        record_id: str | None = None,
        namespace: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Page[ChangeEntry]:
        """Change entries oldest first: by `at`, then by the order they were committed."""
        _check_limit(limit)
        clauses = ["tenant = ?"]
        params: list[object] = [tenant]
        if record_id is not None:
            clauses.append("record_id = ?")
            params.append(record_id)
        if namespace is not None:
            clauses.append("namespace = ?")
            params.append(namespace)
        if cursor is not None:
            at, seq = decode_cursor(cursor, "changes", (str, int))
            clauses.append("(at, seq) > (?, ?)")
            params.extend((at, seq))
        rows = (
            self._db.connection()
            .execute(
                f"SELECT at, seq, body FROM changes WHERE {' AND '.join(clauses)} ORDER BY at, seq LIMIT ?",
                (*params, limit + 1),
            )
            .fetchall()
        )
        page, more = rows[:limit], len(rows) > limit
        loaded = [_load(ChangeEntry, tenant, str(seq), body) for _, seq, body in page]
        items = [entry for entry in loaded if entry is not None]
        next_cursor = encode_cursor("changes", page[-1][0], page[-1][1]) if more else None
        return Page(items=items, next_cursor=next_cursor, skipped=len(loaded) - len(items))

    def list_recalls(self, tenant: str, namespace: str, since: datetime) -> builtins.list[RecallLogEntry]:
        """Recalls at or after `since`, oldest first."""
        rows = self._db.connection().execute(
            "SELECT id, body FROM recalls WHERE tenant = ? AND namespace = ? AND at >= ? ORDER BY at, seq",
            (tenant, namespace, sortable_time(since)),
        )
        loaded = (_load(RecallLogEntry, tenant, entry_id, body) for entry_id, body in rows)
        return [entry for entry in loaded if entry is not None]

    def unreadable(self, tenant: str, namespace: str | None = None) -> builtins.list[UnreadableRecord]:
        sql = "SELECT id, namespace, type, status, version, created_at, body FROM records WHERE tenant = ?"
        params: list[object] = [tenant]
        if namespace is not None:
            sql += " AND namespace = ?"
            params.append(namespace)
        found = []
        for record_id, ns, type_, status, version, created_at, body in self._db.connection().execute(
            sql + " ORDER BY created_at, id", params
        ):
            try:
                MemoryRecord.model_validate_json(body)
            except ValueError as error:
                found.append(
                    UnreadableRecord(
                        tenant=tenant,
                        record_id=record_id,
                        namespace=ns,
                        type=type_,
                        status=status,
                        version=version,
                        created_at=created_at,
                        body=body,
                        error=describe_invalid(error),
                    )
                )
        return found
