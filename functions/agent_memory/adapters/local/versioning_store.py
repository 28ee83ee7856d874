"""`SnapshotStore` and `ReferenceStore` (domain/versioning) on one SQLite file, every tenant, keyed by tenant
first like the other local stores. A snapshot's payload (its bundle as `.tar.gz`) is a BLOB beside its
metadata JSON."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from ...domain.errors import Conflict
from ...domain.versioning.ports import SnapshotMeta
from ._sqlite import DEFAULT_BUSY_TIMEOUT_MS, SqliteDatabase, placeholders, sortable_time, versioned_schema

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versioning_schema_version (version INTEGER NOT NULL);

CREATE TABLE IF NOT EXISTS snapshots (
    tenant TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    meta TEXT NOT NULL,
    payload BLOB NOT NULL,
    PRIMARY KEY (tenant, namespace, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS session_uses (
    tenant TEXT NOT NULL,
    namespace TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    sessions INTEGER NOT NULL,
    PRIMARY KEY (tenant, namespace, content_hash)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS reviews (
    tenant TEXT NOT NULL,
    record_id TEXT NOT NULL,
    reviewed_at TEXT NOT NULL,
    PRIMARY KEY (tenant, record_id)
) WITHOUT ROWID;
"""

_INIT_SCHEMA = versioned_schema(_SCHEMA, SCHEMA_VERSION, "versioning", "versioning_schema_version")


class SqliteVersioningStore:
    """Snapshots, session use counts and reviews in one SQLite file (WAL)."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self._db = SqliteDatabase(path, _INIT_SCHEMA, busy_timeout_ms=busy_timeout_ms)
        self._db.connection()

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ snapshots

    def put(self, tenant: str, meta: SnapshotMeta, payload: bytes) -> None:
        with self._db.transaction() as conn:
            try:
                conn.execute(
                    "INSERT INTO snapshots (tenant, namespace, name, created_at, meta, payload) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        tenant,
                        meta.namespace,
                        meta.name,
                        sortable_time(meta.created_at),
                        meta.model_dump_json(),
                        payload,
                    ),
                )
            except sqlite3.IntegrityError as error:
                raise Conflict(
                    f"namespace {meta.namespace} already has a snapshot named {meta.name!r}; snapshots are "
                    "immutable: choose another name",
                    snapshot=meta.name,
                ) from error

    def get(self, tenant: str, namespace: str, name: str) -> tuple[SnapshotMeta, bytes] | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT meta, payload FROM snapshots WHERE tenant = ? AND namespace = ? AND name = ?",
                (tenant, namespace, name),
            )
            .fetchone()
        )
        return None if row is None else (SnapshotMeta.model_validate_json(row[0]), bytes(row[1]))

    def list(self, tenant: str, namespace: str) -> list[SnapshotMeta]:
        rows = self._db.connection().execute(
            "SELECT meta FROM snapshots WHERE tenant = ? AND namespace = ? ORDER BY created_at, name",
            (tenant, namespace),
        )
        return [SnapshotMeta.model_validate_json(meta) for (meta,) in rows]

    # ------------------------------------------------------------------ references

    def add_session_uses(self, tenant: str, namespace: str, content_hashes: Sequence[str]) -> None:
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT INTO session_uses (tenant, namespace, content_hash, sessions) VALUES (?, ?, ?, 1) "
                "ON CONFLICT (tenant, namespace, content_hash) DO UPDATE SET sessions = sessions + 1",
                [(tenant, namespace, digest) for digest in content_hashes],
            )

    def session_uses(self, tenant: str, namespace: str) -> dict[str, int]:
        rows = self._db.connection().execute(
            "SELECT content_hash, sessions FROM session_uses WHERE tenant = ? AND namespace = ?",
            (tenant, namespace),
        )
        return {digest: count for digest, count in rows}

    def mark_reviewed(self, tenant: str, record_id: str, at: datetime) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO reviews (tenant, record_id, reviewed_at) VALUES (?, ?, ?) "
                "ON CONFLICT (tenant, record_id) DO UPDATE SET reviewed_at = excluded.reviewed_at",
                (tenant, record_id, at.isoformat()),
            )

    def reviewed(self, tenant: str, record_ids: Sequence[str]) -> dict[str, datetime]:
        ids = list(dict.fromkeys(record_ids))
        found: dict[str, datetime] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self._db.connection().execute(
                f"SELECT record_id, reviewed_at FROM reviews WHERE tenant = ? AND record_id IN ({placeholders(len(chunk))})",
                (tenant, *chunk),
            )
            found.update({record_id: datetime.fromisoformat(at) for record_id, at in rows})
        return found
