"""`SessionStore` on one SQLite file: sessions (with their frozen snapshot) and their turns, every tenant.

Rows are keyed by tenant first and every statement filters on it, as the record store does. The session and
each turn are stored as their JSON (a turn adds its token figures to the session's `usage` in the same
transaction); the columns beside them are what statements filter on. Expired sessions
are purged (with their turns) when a new session is created, as DynamoDB's TTL does in AWS.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

from ...domain.errors import ConcurrentModification
from ...domain.sessions.ports import SessionClosed, SessionRecord, SessionStatus, TurnRecord
from ._sqlite import DEFAULT_BUSY_TIMEOUT_MS, SqliteDatabase, sortable_time, versioned_schema

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS session_schema_version (version INTEGER NOT NULL);

CREATE TABLE IF NOT EXISTS sessions (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    status TEXT NOT NULL,
    ended_at TEXT,
    expires_at TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at);

CREATE TABLE IF NOT EXISTS session_turns (
    tenant TEXT NOT NULL,
    session_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (tenant, session_id, idx)
) WITHOUT ROWID;
"""

_INIT_SCHEMA = versioned_schema(_SCHEMA, SCHEMA_VERSION, "session", "session_schema_version")


class SqliteSessionStore:
    """Sessions and turns in one SQLite file (WAL); safe for several threads and processes."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self._db = SqliteDatabase(path, _INIT_SCHEMA, busy_timeout_ms=busy_timeout_ms)
        self._db.connection()  # a bad path fails at start-up, not on the first request

    @property
    def path(self) -> Path:
        return self._db.path

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ sessions

    def create(self, session: SessionRecord) -> None:
        with self._db.transaction() as conn:
            self._purge_expired(conn, session.created_at)
            try:
                conn.execute(
                    "INSERT INTO sessions (tenant, id, namespace, status, ended_at, expires_at, body) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        session.tenant,
                        session.id,
                        session.namespace,
                        session.status.value,
                        sortable_time(session.ended_at) if session.ended_at else None,
                        sortable_time(session.expires_at),
                        session.model_dump_json(),
                    ),
                )
            except sqlite3.IntegrityError as error:
                raise ConcurrentModification(
                    f"session {session.id} already exists", session_id=session.id
                ) from error

    @staticmethod
    def _purge_expired(conn: sqlite3.Connection, now: datetime) -> None:
        cutoff = sortable_time(now)
        conn.execute(
            "DELETE FROM session_turns WHERE (tenant, session_id) IN "
            "(SELECT tenant, id FROM sessions WHERE expires_at <= ?)",
            (cutoff,),
        )
        conn.execute("DELETE FROM sessions WHERE expires_at <= ?", (cutoff,))

    def count_open(
        self,
        tenant: str,
        now: datetime,
        *,
        limit: int,
        actor: str | None = None,
        namespace: str | None = None,
    ) -> int:
        where = "tenant = ? AND status = ? AND expires_at > ?"
        params: list[object] = [tenant, SessionStatus.OPEN.value, sortable_time(now)]
        if actor is not None:
            where += " AND json_extract(body, '$.actor') = ?"
            params.append(actor)
        if namespace is not None:
            where += " AND json_extract(body, '$.namespace') = ?"
            params.append(namespace)
        row = (
            self._db.connection()
            .execute(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM sessions WHERE {where} LIMIT ?)",
                (*params, max(limit, 0)),
            )
            .fetchone()
        )
        return int(row[0])

    def get(self, tenant: str, session_id: str) -> SessionRecord | None:
        row = (
            self._db.connection()
            .execute("SELECT body FROM sessions WHERE tenant = ? AND id = ?", (tenant, session_id))
            .fetchone()
        )
        return SessionRecord.model_validate_json(row[0]) if row else None

    def end(self, tenant: str, session_id: str, at: datetime) -> SessionRecord | None:
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT body FROM sessions WHERE tenant = ? AND id = ?", (tenant, session_id)
            ).fetchone()
            if row is None:
                return None
            session = SessionRecord.model_validate_json(row[0])
            if session.status is SessionStatus.ENDED:
                return session
            ended = session.model_copy(update={"status": SessionStatus.ENDED, "ended_at": at})
            conn.execute(
                "UPDATE sessions SET status = ?, ended_at = ?, body = ? WHERE tenant = ? AND id = ?",
                (ended.status.value, sortable_time(at), ended.model_dump_json(), tenant, session_id),
            )
            return ended

    # ------------------------------------------------------------------ turns

    def append_turn(self, turn: TurnRecord, *, now: datetime) -> None:
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT status, expires_at, body FROM sessions WHERE tenant = ? AND id = ?",
                (turn.tenant, turn.session_id),
            ).fetchone()
            if row is None or row[0] != SessionStatus.OPEN.value or row[1] <= sortable_time(now):
                raise SessionClosed(
                    f"session {turn.session_id} is no longer open (ended, expired or deleted); the turn was "
                    "not saved",
                    session_id=turn.session_id,
                )
            try:
                conn.execute(
                    "INSERT INTO session_turns (tenant, session_id, idx, body) VALUES (?, ?, ?, ?)",
                    (turn.tenant, turn.session_id, turn.index, turn.model_dump_json()),
                )
            except sqlite3.IntegrityError as error:
                raise ConcurrentModification(
                    f"another turn {turn.index + 1} of session {turn.session_id} was saved first; send the "
                    "message again",
                    session_id=turn.session_id,
                    turn=turn.index + 1,
                ) from error
            # The session's totals change in the same transaction (BEGIN IMMEDIATE: no lost update).
            session = SessionRecord.model_validate_json(row[2])
            counted = session.model_copy(update={"usage": session.usage.plus(turn)})
            conn.execute(
                "UPDATE sessions SET body = ? WHERE tenant = ? AND id = ?",
                (counted.model_dump_json(), turn.tenant, turn.session_id),
            )

    def list_turns(self, tenant: str, session_id: str) -> list[TurnRecord]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT body FROM session_turns WHERE tenant = ? AND session_id = ? ORDER BY idx",
                (tenant, session_id),
            )
            .fetchall()
        )
        return [TurnRecord.model_validate_json(row[0]) for row in rows]
