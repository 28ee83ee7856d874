"""Powertools idempotency persistence on SQLite, so the local runtime honours `Idempotency-Key` like AWS.

Written by hand because Powertools ships DynamoDB, Redis and cache layers only; the four methods mirror the
semantics of its DynamoDB layer (conditional put unless expired or an in-progress record timed out)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS idempotency (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    expiration INTEGER NOT NULL,
    in_progress_expiration INTEGER,
    response_data TEXT NOT NULL DEFAULT '',
    payload_hash TEXT NOT NULL DEFAULT ''
)
"""


class SqliteIdempotencyStore(BasePersistenceLayer):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self._path = str(path)
        self._local = threading.local()
        with self._connection() as connection:
            connection.execute(_SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self._path, timeout=10, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            self._local.connection = connection
        return connection

    def _get_record(self, idempotency_key: str) -> DataRecord:
        row = (
            self._connection()
            .execute(
                "SELECT status, expiration, in_progress_expiration, response_data, payload_hash "
                "FROM idempotency WHERE id = ?",
                (idempotency_key,),
            )
            .fetchone()
        )
        if row is None:
            raise IdempotencyItemNotFoundError
        return DataRecord(
            idempotency_key=idempotency_key,
            status=row[0],
            expiry_timestamp=row[1],
            in_progress_expiry_timestamp=row[2],
            response_data=row[3],
            payload_hash=row[4],
        )

    def _put_record(self, data_record: DataRecord) -> None:
        now = time.time()
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            existing = connection.execute(
                "SELECT status, expiration, in_progress_expiration FROM idempotency WHERE id = ?",
                (data_record.idempotency_key,),
            ).fetchone()
            if existing is not None:
                status, expiration, in_progress_expiration = existing
                expired = expiration < now
                stale_in_progress = (
                    status == "INPROGRESS"
                    and in_progress_expiration is not None
                    and in_progress_expiration < now * 1000
                )
                if not (expired or stale_in_progress):
                    # No old record attached: Powertools then reads it through get_record, which also
                    # validates the payload hash (a reused key with another body is refused).
                    raise IdempotencyItemAlreadyExistsError
            connection.execute(
                "INSERT OR REPLACE INTO idempotency (id, status, expiration, in_progress_expiration, payload_hash) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    data_record.idempotency_key,
                    data_record.status,
                    data_record.expiry_timestamp,
                    data_record.in_progress_expiry_timestamp,
                    data_record.payload_hash or "",
                ),
            )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _update_record(self, data_record: DataRecord) -> None:
        self._connection().execute(
            "UPDATE idempotency SET status = ?, expiration = ?, response_data = ? WHERE id = ?",
            (
                data_record.status,
                data_record.expiry_timestamp,
                data_record.response_data,
                data_record.idempotency_key,
            ),
        )

    def _delete_record(self, data_record: DataRecord) -> None:
        self._connection().execute("DELETE FROM idempotency WHERE id = ?", (data_record.idempotency_key,))
