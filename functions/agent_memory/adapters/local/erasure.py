"""The erasure wing's stores on the local runtime: rows of the SQLite record store (records, change log,
recall log), sessions, idempotency records, the embedding cache, import state (`imports.db`, through
domain/erasure/imports.py), embedding-migration archives (`archive/<tenant>/`, through
domain/erasure/archives.py), and the purge ledger (`purges.db`).

Each works on its own SQLite file with its own connection (WAL: concurrent readers keep reading). After an
erase, each database is checkpointed (the WAL, which holds the deleted pages, is truncated) and FTS5 segments
are merged, so deleted text does not linger in the files the service keeps (docs/security.md)."""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ...domain.erasure.archives import ArchivePart
from ...domain.erasure.model import (
    EraseScope,
    PurgeKind,
    PurgePlan,
    Retention,
    StoreFinding,
    is_tombstone,
)
from ...domain.errors import ConcurrentModification
from ...domain.migration.model import text_hash
from ...domain.sessions.ports import SessionRecord, SessionStatus
from ...domain.sessions.sessions import snapshot_digest
from ._sqlite import placeholders

BUSY_TIMEOUT_S = 10.0
_CHUNK = 500


class _Db:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            conn.execute("PRAGMA secure_delete = ON")  # deleted content is overwritten with zeros
            self._local.conn = conn
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        conn = self.conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def has_table(self, name: str) -> bool:
        row = self.conn().execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return row is not None

    def checkpoint(self) -> None:
        self.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _json(body: str) -> object:
    try:
        return json.loads(body)
    except ValueError:
        return None


class SqliteRecordEraser:
    """Records, change log and recall log in `memory.db`."""

    name = "records"

    def __init__(self, path: Path) -> None:
        self._db = _Db(path)

    def namespaces(self, tenant: str) -> list[str]:
        conn = self._db.conn()
        rows = conn.execute(
            "SELECT namespace FROM records WHERE tenant = ? UNION SELECT namespace FROM changes WHERE tenant = ? "
            "UNION SELECT namespace FROM recalls WHERE tenant = ?",
            (tenant, tenant, tenant),
        ).fetchall()
        return sorted(row[0] for row in rows)

    def _scan(self, scope: EraseScope) -> tuple[list[str], list[int], list[int]]:
        """(record refs `<namespace>#<id>`, change seqs, recall seqs) of the scope."""
        conn = self._db.conn()
        t = scope.tenant
        ids = set(scope.record_ids)
        records: list[str] = []
        for record_id, namespace, body in conn.execute(
            "SELECT id, namespace, body FROM records WHERE tenant = ?", (t,)
        ):
            if (
                record_id in ids
                or scope.in_scope_namespace(namespace)
                or (scope.kind is PurgeKind.SUBJECT and scope.names_record(_json(body)))
            ):
                records.append(f"{namespace}#{record_id}")
        changes = [
            seq
            for seq, record_id, namespace, body in conn.execute(
                "SELECT seq, record_id, namespace, body FROM changes WHERE tenant = ?", (t,)
            )
            if not is_tombstone(body)
            and (record_id in ids or scope.in_scope_namespace(namespace) or scope.names_change(body))
        ]
        recalls = [
            seq
            for seq, namespace, body in conn.execute(
                "SELECT seq, namespace, body FROM recalls WHERE tenant = ?", (t,)
            )
            if scope.in_scope_namespace(namespace) or scope.names_recall(body)
        ]
        return records, changes, recalls

    def find(self, scope: EraseScope) -> StoreFinding:
        records, changes, recalls = self._scan(scope)
        refs = records + [f"change:{seq}" for seq in changes] + [f"recall:{seq}" for seq in recalls]
        return StoreFinding(store=self.name, items=len(refs), refs=refs)

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        records, changes, recalls = self._scan(scope)
        ids = [ref.rpartition("#")[2] for ref in records]
        with self._db.write() as conn:
            for chunk in _chunks(ids):
                conn.execute(
                    f"DELETE FROM records WHERE tenant = ? AND id IN ({placeholders(len(chunk))})",
                    (scope.tenant, *chunk),
                )
            for table, seqs in (("changes", changes), ("recalls", recalls)):
                for part in _chunks([str(s) for s in seqs]):
                    conn.execute(f"DELETE FROM {table} WHERE seq IN ({placeholders(len(part))})", part)
        self._db.checkpoint()
        return len(ids) + len(changes) + len(recalls)


class SqliteSessionEraser:
    """Sessions (`sessions.db`): a session whose snapshot or turns name the purge is invalidated: status
    `purged`, snapshot emptied, turns deleted, so its next turn fails with `session_purged` (409). A tenant
    purge deletes the tenant's sessions."""

    name = "sessions"

    def __init__(self, path: Path) -> None:
        self._db = _Db(path)

    def _matching(self, scope: EraseScope) -> list[str]:
        if not self._db.has_table("sessions"):
            return []
        conn = self._db.conn()
        found = []
        for session_id, namespace, status, body in conn.execute(
            "SELECT id, namespace, status, body FROM sessions WHERE tenant = ?", (scope.tenant,)
        ):
            turns = [
                row[0]
                for row in conn.execute(
                    "SELECT body FROM session_turns WHERE tenant = ? AND session_id = ?",
                    (scope.tenant, session_id),
                )
            ]
            if scope.whole_tenant:
                found.append(session_id)
            elif status == SessionStatus.PURGED.value and not turns:
                continue  # already invalidated: holds no content
            elif (
                scope.in_scope_namespace(namespace)
                or scope.names(_snapshot(body))
                or any(map(scope.names_json, turns))
            ):
                found.append(session_id)
        return found

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(store=self.name, items=len(found), refs=found)

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._matching(scope)
        t = scope.tenant
        with self._db.write() as conn:
            for session_id in found:
                conn.execute("DELETE FROM session_turns WHERE tenant = ? AND session_id = ?", (t, session_id))
                if scope.whole_tenant:
                    conn.execute("DELETE FROM sessions WHERE tenant = ? AND id = ?", (t, session_id))
                    continue
                row = conn.execute(
                    "SELECT body FROM sessions WHERE tenant = ? AND id = ?", (t, session_id)
                ).fetchone()
                purged = _invalidated(SessionRecord.model_validate_json(row[0]))
                conn.execute(
                    "UPDATE sessions SET status = ?, body = ? WHERE tenant = ? AND id = ?",
                    (SessionStatus.PURGED.value, purged.model_dump_json(), t, session_id),
                )
        self._db.checkpoint()
        return len(found)


def _snapshot(body: str) -> str:
    parsed = _json(body)
    return str(parsed.get("snapshot") or "") if isinstance(parsed, dict) else body


def _invalidated(session: SessionRecord) -> SessionRecord:
    return session.model_copy(
        update={"status": SessionStatus.PURGED, "snapshot": "", "snapshot_sha256": snapshot_digest("")}
    )


class SqliteIdempotencyEraser:
    """Idempotency records (`idempotency.db`): their stored responses hold content."""

    name = "idempotency"

    def __init__(self, path: Path) -> None:
        self._db = _Db(path)

    def _matching(self, scope: EraseScope) -> list[str]:
        if not self._db.has_table("idempotency"):
            return []
        rows = self._db.conn().execute("SELECT id, response_data FROM idempotency").fetchall()
        return [key for key, data in rows if scope.names_response(data or "")]

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(store=self.name, items=len(found), refs=[f"key:{k[:16]}" for k in found])

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._matching(scope)
        with self._db.write() as conn:
            for part in _chunks(found):
                conn.execute(f"DELETE FROM idempotency WHERE id IN ({placeholders(len(part))})", part)
        self._db.checkpoint()
        return len(found)


class SqliteJobEraser:
    """Jobs (`jobs.db`, domain/jobs): a finished job's `result` is the route's answer (the memories a batch
    wrote, an import's report), and a queued job's order (`job_payloads`) is its request, so both hold content.
    A job of the tenant whose stored body or order names the purge goes, with its order (GET /v1/jobs/{id}
    then answers 404, as for a forgotten job; a worker that was running it does not write it back)."""

    name = "jobs"

    def __init__(self, path: Path) -> None:
        self._db = _Db(path)

    def _matching(self, scope: EraseScope) -> list[str]:
        if not self._db.has_table("jobs"):
            return []
        orders = "job_payloads" if self._db.has_table("job_payloads") else None
        sql = "SELECT id, body, '' FROM jobs WHERE tenant = ?"
        if orders:
            sql = (
                "SELECT j.id, j.body, coalesce(p.payload, '') FROM jobs j LEFT JOIN job_payloads p "
                "ON p.tenant = j.tenant AND p.id = j.id WHERE j.tenant = ?"
            )
        rows = self._db.conn().execute(sql, (scope.tenant,))
        return [job_id for job_id, body, order in rows if scope.names_response((body or "") + (order or ""))]

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(store=self.name, items=len(found), refs=[f"job:{j}" for j in found])

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._matching(scope)
        if found:
            with self._db.write() as conn:
                for table in ("jobs", "job_payloads") if self._db.has_table("job_payloads") else ("jobs",):
                    for part in _chunks(found):
                        conn.execute(
                            f"DELETE FROM {table} WHERE tenant = ? AND id IN ({placeholders(len(part))})",
                            (scope.tenant, *part),
                        )
            self._db.checkpoint()
        return len(found)


class SqliteEmbeddingCacheEraser:
    """The embedding cache (`embedding_cache.db`, domain/migration): vectors keyed by the hash of the exact
    text embedded. The purged texts' entries go (in every model's fingerprint)."""

    name = "embedding_cache"

    def __init__(self, path: Path) -> None:
        self._db = _Db(path)

    def _hashes(self, scope: EraseScope) -> list[str]:
        return sorted({text_hash(text) for text in scope.record_texts})

    def _matching(self, scope: EraseScope) -> list[str]:
        if not self._db.has_table("vectors"):
            return []
        found: list[str] = []
        for part in _chunks(self._hashes(scope)):
            rows = self._db.conn().execute(
                f"SELECT fingerprint, hash FROM vectors WHERE hash IN ({placeholders(len(part))})", part
            )
            found.extend(f"{fingerprint}#{h}" for fingerprint, h in rows)
        return found

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(store=self.name, items=len(found), refs=found)

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        count = len(self._matching(scope))
        if count:
            with self._db.write() as conn:
                for part in _chunks(self._hashes(scope)):
                    conn.execute(f"DELETE FROM vectors WHERE hash IN ({placeholders(len(part))})", part)
            self._db.checkpoint()
        return count


class SqliteSnapshotDeleter:
    """Deletes a named snapshot row of `versioning.db` (domain/versioning's local store)."""

    def __init__(self, path: Path) -> None:
        self._db = _Db(path)

    def delete_snapshot(self, tenant: str, namespace: str, name: str) -> bool:
        if not self._db.has_table("snapshots"):
            return False
        with self._db.write() as conn:
            deleted = conn.execute(
                "DELETE FROM snapshots WHERE tenant = ? AND namespace = ? AND name = ?",
                (tenant, namespace, name),
            ).rowcount
        self._db.checkpoint()
        return deleted > 0


class LocalIndexProbe:
    """Looks purged ids up in every local index of the data directory (`index/`, and a migration's
    `index-<name>/`): the documents table of the tenant in each `search.db`."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = Path(data_dir)

    def present(self, tenant: str, record_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        table = f"docs_{tenant.replace('-', '_')}"  # tenant ids are [a-z0-9-]: see search_index._tables
        for directory in sorted(self._data_dir.glob("index*")):
            path = directory / "search.db"
            if not path.is_file():
                continue
            db = _Db(path)
            if not db.has_table(table):
                continue
            for part in _chunks(list(record_ids)):
                rows = db.conn().execute(
                    f'SELECT record_id FROM "{table}" WHERE record_id IN ({placeholders(len(part))})', part
                )
                found.update(row[0] for row in rows)
            db.conn().close()
        return found


class LocalVectorArchives:
    """Embedding-migration archives of the data directory (`archive/<tenant>/<migration>/vectors-NNNNN.jsonl`
    and `manifest.json`, adapters/local/migration.py): every `.jsonl` part of the folder (a part an interrupted
    export left out of the manifest too), rewritten in place with the manifest's counts and SHA-256."""

    def __init__(self, data_dir: Path) -> None:
        self._root = Path(data_dir) / "archive"

    def parts(self, tenant: str) -> Iterator[ArchivePart]:
        folder = self._root / tenant
        if not folder.is_dir():
            return
        for archive in sorted(p for p in folder.iterdir() if p.is_dir()):
            for part in sorted(archive.glob("*.jsonl")):
                yield ArchivePart(archive.name, part.name, part.read_text("utf-8").splitlines())

    def rewrite(self, tenant: str, archive: str, parts: dict[str, list[str]], plan_id: str) -> None:
        folder = self._root / tenant / archive
        data = {name: _part_bytes(lines) for name, lines in parts.items()}
        # The manifest first: if the parts' rewrite is interrupted, they still hold purged lines, so the
        # resumed purge finds them and writes both again (the other order would leave a stale manifest).
        manifest_path = folder / "manifest.json"
        if manifest_path.is_file():
            manifest = json.loads(manifest_path.read_text())
            for entry in manifest.get("files", []):
                if entry.get("file") in data:
                    entry["vectors"] = len(parts[entry["file"]])
                    entry["sha256"] = hashlib.sha256(data[entry["file"]]).hexdigest()
            manifest["vectors"] = sum(int(entry["vectors"]) for entry in manifest.get("files", []))
            manifest["purges"] = list(dict.fromkeys([*manifest.get("purges", []), plan_id]))
            _replace(manifest_path, json.dumps(manifest, indent=2).encode("utf-8"))
        for name, body in data.items():
            _replace(folder / name, body)


def _part_bytes(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _replace(path: Path, data: bytes) -> None:
    """Swap a complete new file in (a crash leaves the old part or the new one, never half of one)."""
    staged = path.with_name(f".{path.name}.purge")
    with staged.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staged, path)


class SqlitePurgeLedger:
    """Purge plans (`purges.db`), one row each, versioned."""

    def __init__(self, path: Path) -> None:
        self._db = _Db(path)
        self._db.conn().execute(
            "CREATE TABLE IF NOT EXISTS purges (tenant TEXT NOT NULL, id TEXT NOT NULL, planned_at TEXT NOT NULL, "
            "version INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (tenant, id))"
        )

    def save(self, plan: PurgePlan, *, expected_version: int | None) -> None:
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT version FROM purges WHERE tenant = ? AND id = ?", (plan.tenant, plan.id)
            ).fetchone()
            stored = None if row is None else int(row[0])
            if stored != expected_version:
                raise ConcurrentModification(
                    f"purge plan {plan.id} changed meanwhile; read its status and retry", plan_id=plan.id
                )
            conn.execute(
                "INSERT OR REPLACE INTO purges (tenant, id, planned_at, version, body) VALUES (?, ?, ?, ?, ?)",
                (plan.tenant, plan.id, plan.planned_at.isoformat(), plan.version, plan.model_dump_json()),
            )

    def get(self, tenant: str, plan_id: str) -> PurgePlan | None:
        row = (
            self._db.conn()
            .execute("SELECT body FROM purges WHERE tenant = ? AND id = ?", (tenant, plan_id))
            .fetchone()
        )
        return PurgePlan.model_validate_json(row[0]) if row else None

    def list(self, tenant: str, limit: int = 50) -> list[PurgePlan]:
        rows = self._db.conn().execute(
            "SELECT body FROM purges WHERE tenant = ? ORDER BY planned_at DESC, id LIMIT ?", (tenant, limit)
        )
        return [PurgePlan.model_validate_json(row[0]) for row in rows]

    def executing(self, tenant: str) -> builtins.list[PurgePlan]:
        rows = self._db.conn().execute(
            "SELECT body FROM purges WHERE tenant = ? AND json_extract(body, '$.state') = 'executing'",
            (tenant,),
        )
        return [PurgePlan.model_validate_json(row[0]) for row in rows]


LOCAL_RETENTION = [
    Retention(
        store="backups",
        days=None,
        note="copies of the data directory made outside the service (backups, disk snapshots, synced folders) "
        "are not reached: erase them by their own means",
    )
]
