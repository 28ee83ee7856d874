"""SQLite plumbing shared by the local adapters: one connection per thread and process, WAL, busy timeout,
explicit `BEGIN IMMEDIATE` transactions, and schema creation that is safe when several processes (the local
server and the CLI) open the same file at once."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...domain.errors import ValidationFailed
from ...domain.retry import Retry, RetryPolicy

DEFAULT_BUSY_TIMEOUT_MS = 10_000

SchemaInit = Callable[[sqlite3.Connection], None]


_CACHE_KIB = 16 * 1024


class SqliteDatabase:
    """Hands out a connection per (process, thread).

    sqlite3 connections must not cross threads, and a connection inherited through `fork` must never be used by
    the child (it would share the parent's file locks), so connections are keyed by thread *and* pid."""

    def __init__(
        self, path: str | Path, init_schema: SchemaInit, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
    ) -> None:
        self.path = Path(path)
        self._init_schema = init_schema
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[tuple[int, sqlite3.Connection]] = []
        self._initialised_pid: int | None = None
        self._closed = False

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            return conn
        if self._closed:
            raise RuntimeError(f"the SQLite database {self.path} has been closed")
        conn = self._open()
        self._local.conn = conn
        self._local.pid = os.getpid()
        return conn

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: we issue BEGIN ourselves, so a read never silently holds a transaction open.
        # check_same_thread=False only so close() can close every thread's connection; each is used by one.
        conn = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        self._set_wal(conn)
        # NORMAL is durable against process crashes in WAL mode (an OS crash may lose the last commits).
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # SQLite's default page cache is 2 MiB; 10k records are ~10 MiB, so recall's hydration of ~20 random
        # rows kept re-reading pages through the OS (measured at 10k: get_many p50 1.75 -> 0.86 ms, whole
        # recall 9.0 -> 6.7 ms). 16 MiB is an upper bound per connection (one per thread), reached only by a
        # database at least that large.
        conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        with self._lock:
            self._all.append((os.getpid(), conn))
            needs_init = self._initialised_pid != os.getpid()
        if needs_init:
            with self.transaction(conn):
                self._init_schema(conn)
            with self._lock:
                self._initialised_pid = os.getpid()
        return conn

    def _set_wal(self, conn: sqlite3.Connection) -> None:
        # Switching a fresh file to WAL needs a moment of exclusive access; the busy handler does not cover it,
        # so a process racing another one at first start retries briefly.
        # The last "locked" error propagates once the busy timeout is spent.
        wait = RetryPolicy(
            max_attempts=1_000,
            base_delay=0.005,
            max_delay=0.05,
            deadline=max(self._busy_timeout_ms / 1000, 1e-3),
        )
        Retry(wait).call(
            lambda: conn.execute("PRAGMA journal_mode = WAL"),
            retry_on=lambda error: isinstance(error, sqlite3.OperationalError) and "locked" in str(error),
        )

    @contextmanager
    def transaction(self, conn: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock up front (no lock upgrade deadlocks between
        processes) and rolls back on any exception."""
        conn = conn or self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            connections, self._all = self._all, []
            self._closed = True
        for pid, conn in connections:
            # A connection inherited through fork belongs to the parent: closing it here could checkpoint or
            # remove the parent's WAL files.
            if pid != os.getpid():
                continue
            with contextlib.suppress(sqlite3.Error):  # already closed: nothing left to release
                conn.close()


def placeholders(count: int) -> str:
    return ",".join("?" * count)


def sortable_time(moment: datetime) -> str:
    """A fixed-width UTC text form whose string order is time order (SQLite compares TEXT bytewise).
    Naive datetimes are taken as UTC, the service's convention."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode_cursor(kind: str, *key: str | int) -> str:
    raw = json.dumps([kind, *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str, types: tuple[type, ...]) -> list[Any]:
    """The key stored in a cursor from `encode_cursor(kind, ...)`; a forged or foreign cursor is rejected."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (ValueError, binascii.Error) as error:
        raise ValidationFailed(
            "invalid page cursor: pass back the next_cursor of the previous page"
        ) from error
    if (
        not isinstance(value, list)
        or len(value) != len(types) + 1
        or value[0] != kind
        or not all(isinstance(v, t) for v, t in zip(value[1:], types, strict=True))
    ):
        raise ValidationFailed("invalid page cursor: it does not belong to this listing")
    return value[1:]


def versioned_schema(
    schema: str, version: int, what: str, version_table: str = "schema_version"
) -> Callable[[sqlite3.Connection], None]:
    """A schema initialiser: run the `;`-separated DDL (idempotent CREATE ... IF NOT EXISTS statements), then
    record `version`, refusing a database written by newer code (its schema may mean something else)."""

    def init(conn: sqlite3.Connection) -> None:
        for statement in schema.split(";"):
            if statement.strip():
                conn.execute(statement)
        row = conn.execute(f"SELECT MAX(version) FROM {version_table}").fetchone()
        stored = row[0] if row else None
        if stored is None:
            conn.execute(f"INSERT INTO {version_table} (version) VALUES (?)", (version,))
        elif stored > version:
            raise RuntimeError(
                f"the {what} database uses schema version {stored}, newer than this code supports "
                f"({version}); upgrade agent-memory"
            )

    return init
