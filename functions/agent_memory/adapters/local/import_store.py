"""`ImportStore` in SQLite (`<data_dir>/imports.db`): reports, per-item outcomes and imported source refs. It
is also the purge's `ImportRows` (domain/erasure/imports.py): list, rewrite in place, delete."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ...domain.interop.model import ImportReport, ItemOutcome
from ._sqlite import SqliteDatabase, placeholders, versioned_schema

_SCHEMA = versioned_schema(
    """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS imports (
    tenant TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (tenant, id)
);
CREATE TABLE IF NOT EXISTS import_items (
    tenant TEXT NOT NULL, import_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (tenant, import_id, seq)
);
CREATE TABLE IF NOT EXISTS import_refs (
    tenant TEXT NOT NULL, namespace TEXT NOT NULL, ref TEXT NOT NULL, import_id TEXT NOT NULL,
    PRIMARY KEY (tenant, namespace, ref)
)
""",
    1,
    "imports",
)


class SqliteImportStore:
    def __init__(self, path: str | Path) -> None:
        self._db = SqliteDatabase(path, _SCHEMA)
        self._db.connection()

    def save(self, report: ImportReport) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO imports (tenant, id, body) VALUES (?, ?, ?) "
                "ON CONFLICT DO UPDATE SET body = excluded.body",
                (report.tenant, report.id, report.model_dump_json()),
            )

    def get(self, tenant: str, import_id: str) -> ImportReport | None:
        row = (
            self._db.connection()
            .execute("SELECT body FROM imports WHERE tenant = ? AND id = ?", (tenant, import_id))
            .fetchone()
        )
        return ImportReport.model_validate_json(row[0]) if row else None

    def seen(self, tenant: str, namespace: str, refs: Sequence[str]) -> set[str]:
        if not refs:
            return set()
        rows = (
            self._db.connection()
            .execute(
                f"SELECT ref FROM import_refs WHERE tenant = ? AND namespace = ? AND ref IN ({placeholders(len(refs))})",
                (tenant, namespace, *refs),
            )
            .fetchall()
        )
        return {row[0] for row in rows}

    def add_outcomes(
        self, tenant: str, import_id: str, namespace: str, outcomes: Sequence[ItemOutcome]
    ) -> None:
        if not outcomes:
            return
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM import_items WHERE tenant = ? AND import_id = ?",
                (tenant, import_id),
            ).fetchone()
            first = int(row[0]) + 1
            conn.executemany(
                "INSERT INTO import_items (tenant, import_id, seq, body) VALUES (?, ?, ?, ?)",
                [(tenant, import_id, first + i, o.model_dump_json()) for i, o in enumerate(outcomes)],
            )
            conn.executemany(
                "INSERT INTO import_refs (tenant, namespace, ref, import_id) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO UPDATE SET import_id = excluded.import_id",
                [(tenant, namespace, o.ref, import_id) for o in outcomes],
            )

    def outcomes(self, tenant: str, import_id: str) -> list[ItemOutcome]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT body FROM import_items WHERE tenant = ? AND import_id = ? ORDER BY seq",
                (tenant, import_id),
            )
            .fetchall()
        )
        return [ItemOutcome.model_validate_json(row[0]) for row in rows]

    def release(self, tenant: str, namespace: str, refs: Sequence[str]) -> None:
        with self._db.transaction() as conn:
            conn.executemany(
                "DELETE FROM import_refs WHERE tenant = ? AND namespace = ? AND ref = ?",
                [(tenant, namespace, ref) for ref in refs],
            )

    # ------------------------------------------------------------------ the purge's `ImportRows`
    # Rewrites and deletes overwrite the old pages (`secure_delete`) and truncate the WAL afterwards, as the
    # other local stores of the purge do (adapters/local/erasure.py).

    @contextmanager
    def _scrubbing(self) -> Iterator[sqlite3.Connection]:
        conn = self._db.connection()
        conn.execute("PRAGMA secure_delete = ON")
        with self._db.transaction(conn):
            yield conn
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def import_ids(self, tenant: str) -> list[str]:
        rows = self._db.connection().execute("SELECT id FROM imports WHERE tenant = ? ORDER BY id", (tenant,))
        return [row[0] for row in rows]

    def rewrite(self, report: ImportReport) -> None:
        with self._scrubbing() as conn:
            conn.execute(
                "UPDATE imports SET body = ? WHERE tenant = ? AND id = ?",
                (report.model_dump_json(), report.tenant, report.id),
            )

    def replace_outcomes(self, tenant: str, import_id: str, outcomes: Sequence[ItemOutcome]) -> None:
        by_ref = {o.ref: o for o in outcomes}
        with self._scrubbing() as conn:
            rows = conn.execute(
                "SELECT seq, body FROM import_items WHERE tenant = ? AND import_id = ?", (tenant, import_id)
            ).fetchall()
            for seq, body in rows:
                replacement = by_ref.get(ItemOutcome.model_validate_json(body).ref)
                if replacement is not None:
                    conn.execute(
                        "UPDATE import_items SET body = ? WHERE tenant = ? AND import_id = ? AND seq = ?",
                        (replacement.model_dump_json(), tenant, import_id, seq),
                    )

    def delete_import(self, tenant: str, import_id: str) -> None:
        with self._scrubbing() as conn:
            conn.execute("DELETE FROM import_items WHERE tenant = ? AND import_id = ?", (tenant, import_id))
            conn.execute("DELETE FROM imports WHERE tenant = ? AND id = ?", (tenant, import_id))

    def ref_namespaces(self, tenant: str) -> list[str]:
        rows = self._db.connection().execute(
            "SELECT DISTINCT namespace FROM import_refs WHERE tenant = ? ORDER BY namespace", (tenant,)
        )
        return [row[0] for row in rows]

    def count_refs(self, tenant: str, namespace: str) -> int:
        row = (
            self._db.connection()
            .execute(
                "SELECT COUNT(*) FROM import_refs WHERE tenant = ? AND namespace = ?", (tenant, namespace)
            )
            .fetchone()
        )
        return int(row[0])

    def forget_namespace(self, tenant: str, namespace: str) -> int:
        with self._scrubbing() as conn:
            deleted = conn.execute(
                "DELETE FROM import_refs WHERE tenant = ? AND namespace = ?", (tenant, namespace)
            ).rowcount
        return int(deleted)
