"""`SearchIndex` for the local deployment: SQLite FTS5 for keyword (BM25) search and an in-process numpy
matrix for vector search, both kept in `<data_dir>/search.db`.

Storage design (why it is not a `.npy` file per tenant):

* Each tenant has its own tables, `docs_<tenant>` (record id, namespace, type, status, the float32 vector as a
  BLOB, and a change sequence number) and `fts_<tenant>` (FTS5 over the pre-tokenised text, same rowid). A
  table per tenant keeps BM25 statistics per tenant too: one tenant's corpus never shifts another's scores.
* An upsert is one SQLite transaction that writes only the rows it touches, in both halves at once. Durability
  and multi-process safety are SQLite's (WAL); nothing is buffered in memory, so nothing is lost on a crash,
  and no call ever rewrites a whole matrix.
* The numpy matrix (vector_cache.py) is a per-process cache, loaded lazily on the tenant's first vector query. Every write bumps
  the tenant's `seq` (and deletes also its `epoch`) in the `tenants` table; a query reads that pair (one indexed
  row) and, when another process or thread has written, pulls only the rows whose `seq` is newer. A delete makes
  the next query reload the tenant fully, which is rare: the service archives rather than deletes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from ...domain.errors import EmbedderMismatch, ValidationFailed
from ...domain.ports import Hit, IndexEntry, IndexFilter, Vector
from ...domain.records import EmbedderIdentity, Status, is_valid_namespace, is_valid_tenant
from ...domain.text import index_query_terms, index_terms
from ._sqlite import DEFAULT_BUSY_TIMEOUT_MS, SqliteDatabase, placeholders, versioned_schema
from .keyword_cache import TenantKeywords
from .vector_cache import FLOAT32, TenantVectors

SCHEMA_VERSION = 1
DATABASE_NAME = "search.db"

# Bound parameters per statement stay far below SQLite's limit.
_ID_CHUNK = 500
# A keyword query ORs its distinct terms; beyond this many, more terms add cost but hardly change the ranking.
MAX_QUERY_TERMS = 128
MAX_RECORD_ID_LENGTH = 256

_GLOBAL_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tenants (
    tenant TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    seq INTEGER NOT NULL DEFAULT 0,
    epoch INTEGER NOT NULL DEFAULT 0
)
"""

_INIT_SCHEMA = versioned_schema(_GLOBAL_SCHEMA, SCHEMA_VERSION, "search")


KEYWORD_OVER_FETCH = 4
"""Keyword queries rank an over-fetched top inside FTS5 before applying the filters (see query_keyword)."""
PRUNE_TERMS_FROM_DOCS = 1000
"""Below this many documents a tenant's keyword queries keep every term (see _informative_terms)."""


def _tables(tenant: str) -> tuple[str, str]:
    """Quoted table names of a tenant. Only called with validated tenant ids (lowercase, digits, hyphens),
    and '-' -> '_' is one-to-one because tenant ids never contain '_'."""
    slug = tenant.replace("-", "_")
    return f'"docs_{slug}"', f'"fts_{slug}"'


def _create_tenant_tables(conn: sqlite3.Connection, tenant: str) -> None:
    docs, fts = _tables(tenant)
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {docs} ("
        "rowid INTEGER PRIMARY KEY, record_id TEXT NOT NULL UNIQUE, namespace TEXT NOT NULL, "
        "type TEXT NOT NULL, status TEXT NOT NULL, vector BLOB NOT NULL, seq INTEGER NOT NULL)"
    )
    index = docs[:-1] + '_by_seq"'
    conn.execute(f"CREATE INDEX IF NOT EXISTS {index} ON {docs} (seq)")
    # 'ascii' splits only on ASCII punctuation/space and keeps every non-ASCII character, so the tokens made
    # by domain.text.tokenize (CJK bigrams included) reach the index unchanged.
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(tokens, tokenize='ascii')")


def _check_tenant(tenant: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")


def _check_k(k: int) -> None:
    if k < 1:
        raise ValidationFailed(f"k must be at least 1, got {k}")


def _unit_vector(vector: Vector | np.ndarray, identity: EmbedderIdentity) -> np.ndarray:
    """The vector as float32 of unit length (cosine = dot product). A zero vector stays zero (scores 0)."""
    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or array.shape[0] != identity.dimensions:
        raise ValidationFailed(
            f"vector has {array.shape[-1] if array.ndim else 0} dimensions, but embedder "
            f"{identity.name} produces {identity.dimensions}"
        )
    if not np.all(np.isfinite(array)):
        raise ValidationFailed("vector contains NaN or infinite values")
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


def _mismatch(tenant: str, stored: str, given: EmbedderIdentity) -> EmbedderMismatch:
    return EmbedderMismatch(
        f"tenant {tenant!r} has a vector index built with embedder {stored}, but {given.key} was given; "
        "configure the embedder the index was built with, or migrate the index to the new embedder",
        tenant=tenant,
        index_embedder=stored,
        given_embedder=given.key,
    )


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _ID_CHUNK):
        yield items[start : start + _ID_CHUNK]


def _informative(terms: list[str], total: int, frequency: Callable[[str], int]) -> list[str]:
    """`LocalSearchIndex._informative_terms` over cached document frequencies (same rule: from
    PRUNE_TERMS_FROM_DOCS documents on, drop terms in more than half of them, keeping the rarest if all are)."""
    if len(terms) < 2 or total < PRUNE_TERMS_FROM_DOCS:
        return terms
    kept = [term for term in terms if frequency(term) * 2 <= total]
    return kept or [min(terms, key=frequency)]


class LocalSearchIndex:
    """Keyword (FTS5/BM25) and vector (numpy cosine) search, one set of tables per tenant in
    `<data_dir>/search.db`. Thread-safe, and safe for several processes on the same directory."""

    def __init__(self, data_dir: str | Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self.data_dir = Path(data_dir)
        self._db = SqliteDatabase(
            self.data_dir / DATABASE_NAME, _INIT_SCHEMA, busy_timeout_ms=busy_timeout_ms
        )
        self._db.connection()
        self._caches: dict[str, TenantVectors] = {}
        self._keywords: dict[str, TenantKeywords] = {}
        self._caches_lock = threading.Lock()

    def close(self) -> None:
        self._db.close()
        with self._caches_lock:
            self._caches.clear()
            self._keywords.clear()

    def __enter__(self) -> LocalSearchIndex:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ------------------------------------------------------------------ tenant state

    @staticmethod
    def _state(conn: sqlite3.Connection, tenant: str) -> tuple[str, int, int] | None:
        row = conn.execute("SELECT identity, seq, epoch FROM tenants WHERE tenant = ?", (tenant,)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def _ensure_in(self, conn: sqlite3.Connection, tenant: str, identity: EmbedderIdentity) -> None:
        state = self._state(conn, tenant)
        if state is None:
            _create_tenant_tables(conn, tenant)
            conn.execute("INSERT INTO tenants (tenant, identity) VALUES (?, ?)", (tenant, identity.key))
        elif state[0] != identity.key:
            raise _mismatch(tenant, state[0], identity)

    @staticmethod
    def _bump(conn: sqlite3.Connection, tenant: str, *, epoch: bool = False) -> int:
        sql = "UPDATE tenants SET seq = seq + 1" + (", epoch = epoch + 1" if epoch else "")
        row = conn.execute(sql + " WHERE tenant = ? RETURNING seq", (tenant,)).fetchone()
        return int(row[0])

    def ensure_tenant(self, tenant: str, identity: EmbedderIdentity) -> None:
        _check_tenant(tenant)
        state = self._state(self._db.connection(), tenant)
        if state is not None:  # the common case needs no write lock
            if state[0] != identity.key:
                raise _mismatch(tenant, state[0], identity)
            return
        with self._db.transaction() as conn:
            self._ensure_in(conn, tenant, identity)

    # ------------------------------------------------------------------ writes

    def upsert(self, tenant: str, identity: EmbedderIdentity, entries: Sequence[IndexEntry]) -> None:
        _check_tenant(tenant)
        prepared = [self._prepare(entry, identity) for entry in entries]
        if not prepared:
            self.ensure_tenant(tenant, identity)
            return
        docs, fts = _tables(tenant)
        with self._db.transaction() as conn:
            self._ensure_in(conn, tenant, identity)
            seq = self._bump(conn, tenant)
            for entry, vector_bytes, tokens in prepared:
                (rowid,) = conn.execute(
                    f"INSERT INTO {docs} (record_id, namespace, type, status, vector, seq) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (record_id) DO UPDATE SET "
                    "namespace = excluded.namespace, type = excluded.type, status = excluded.status, "
                    "vector = excluded.vector, seq = excluded.seq RETURNING rowid",
                    (
                        entry.record_id,
                        entry.namespace,
                        entry.type.value,
                        entry.status.value,
                        vector_bytes,
                        seq,
                    ),
                ).fetchone()
                conn.execute(f"DELETE FROM {fts} WHERE rowid = ?", (rowid,))
                conn.execute(f"INSERT INTO {fts} (rowid, tokens) VALUES (?, ?)", (rowid, tokens))

    @staticmethod
    def _prepare(entry: IndexEntry, identity: EmbedderIdentity) -> tuple[IndexEntry, bytes, str]:
        if not entry.record_id or len(entry.record_id) > MAX_RECORD_ID_LENGTH:
            raise ValidationFailed(f"record id must be 1-{MAX_RECORD_ID_LENGTH} characters")
        if not is_valid_namespace(entry.namespace):
            raise ValidationFailed(
                f"invalid namespace {entry.namespace!r}: use a path like /projects/billing"
            )
        vector = _unit_vector(entry.vector, identity)
        return entry, vector.astype(FLOAT32).tobytes(), " ".join(index_terms(entry.text))

    def set_status(self, tenant: str, record_ids: Sequence[str], status: Status) -> None:
        _check_tenant(tenant)
        ids = list(dict.fromkeys(record_ids))
        if not ids or self._state(self._db.connection(), tenant) is None:
            return
        docs, _ = _tables(tenant)
        with self._db.transaction() as conn:
            seq = self._bump(conn, tenant)
            for chunk in _chunks(ids):
                conn.execute(
                    f"UPDATE {docs} SET status = ?, seq = ? WHERE record_id IN ({placeholders(len(chunk))})",
                    (status.value, seq, *chunk),
                )

    def delete(self, tenant: str, record_ids: Sequence[str]) -> None:
        _check_tenant(tenant)
        ids = list(dict.fromkeys(record_ids))
        if not ids or self._state(self._db.connection(), tenant) is None:
            return
        docs, fts = _tables(tenant)
        with self._db.transaction() as conn:
            self._bump(conn, tenant, epoch=True)
            for chunk in _chunks(ids):
                marks = placeholders(len(chunk))
                conn.execute(
                    f"DELETE FROM {fts} WHERE rowid IN (SELECT rowid FROM {docs} WHERE record_id IN ({marks}))",
                    chunk,
                )
                conn.execute(f"DELETE FROM {docs} WHERE record_id IN ({marks})", chunk)

    # ------------------------------------------------------------------ queries

    def query_vector(
        self, tenant: str, identity: EmbedderIdentity, vector: Vector, *, k: int, where: IndexFilter
    ) -> list[Hit]:
        _check_tenant(tenant)
        _check_k(k)
        query = _unit_vector(vector, identity)
        conn = self._db.connection()
        # One read snapshot for the state check and the catch-up read, so they agree with each other.
        conn.execute("BEGIN")
        try:
            state = self._state(conn, tenant)
            if state is None:
                return []
            if state[0] != identity.key:
                raise _mismatch(tenant, state[0], identity)
            cache = self._cache(tenant, identity)
            with cache.lock:
                self._sync(conn, tenant, cache, seq=state[1], epoch=state[2])
                conn.execute("COMMIT")
                return cache.search(query, k, where)
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def _cache(self, tenant: str, identity: EmbedderIdentity) -> TenantVectors:
        with self._caches_lock:
            cache = self._caches.get(tenant)
            if cache is None or cache.identity != identity.key:
                cache = TenantVectors(dims=identity.dimensions, identity=identity.key)
                self._caches[tenant] = cache
            return cache

    @staticmethod
    def _sync(conn: sqlite3.Connection, tenant: str, cache: TenantVectors, *, seq: int, epoch: int) -> None:
        if cache.seq == seq and cache.epoch == epoch:
            return
        docs, _ = _tables(tenant)
        columns = "record_id, namespace, type, status, vector"
        if cache.epoch != epoch:
            cache.reset()
            rows = conn.execute(f"SELECT {columns} FROM {docs}").fetchall()
        else:
            rows = conn.execute(f"SELECT {columns} FROM {docs} WHERE seq > ?", (cache.seq,)).fetchall()
        cache.apply(rows)
        cache.seq, cache.epoch = seq, epoch

    def _informative_terms(self, conn: sqlite3.Connection, tenant: str, terms: list[str]) -> list[str]:
        """Drop query terms that occur in more than half of the tenant's documents (keeping the rarest if all
        do). FTS5's BM25 gives such a term an IDF of ~0 (log((N - df + 0.5) / (df + 0.5)) <= 0, clamped to
        1e-6), so it cannot change the ranking, but matching it makes FTS5 score every document that holds it:
        at 10k documents that was 20 ms of a 30 ms recall."""
        if len(terms) < 2:
            return terms
        docs, fts = _tables(tenant)
        total = conn.execute(f"SELECT count(*) FROM {docs}").fetchone()[0]
        if total < PRUNE_TERMS_FROM_DOCS:
            return terms  # small corpora are fast anyway; keep BM25's exact behaviour
        vocab = '"vocab_' + fts.strip('"') + '"'
        lookup = f"SELECT term, doc FROM temp.{vocab} WHERE term IN ({placeholders(len(terms))})"
        try:
            rows = conn.execute(lookup, terms).fetchall()
        except sqlite3.OperationalError:
            # First lookup on this connection: the fts5vocab view lives in the connection's temp schema.
            conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{vocab} USING fts5vocab(main, {fts}, row)")
            rows = conn.execute(lookup, terms).fetchall()
        frequency = dict(rows)
        kept = [term for term in terms if frequency.get(term, 0) * 2 <= total]
        if kept:
            return kept
        return [min(terms, key=lambda term: frequency.get(term, 0))]  # every term is common: keep the rarest

    def query_keyword(self, tenant: str, text: str, *, k: int, where: IndexFilter) -> list[Hit]:
        """BM25 over the tenant's terms, computed in process over cached postings (keyword_cache.py: the same
        scores as FTS5's bm25(), without its per-row cost); FTS5 itself answers the rare query whose terms the
        cache cannot score (a term FTS5 would read as a phrase)."""
        _check_tenant(tenant)
        _check_k(k)
        terms = index_query_terms(text)[:MAX_QUERY_TERMS]
        if not terms:
            return []
        conn = self._db.connection()
        docs, fts = _tables(tenant)
        # One read snapshot for the state check and the catch-up read, as for the vectors.
        conn.execute("BEGIN")
        try:
            state = self._state(conn, tenant)
            if state is None:
                return []
            with self._caches_lock:
                cache = self._keywords.setdefault(tenant, TenantKeywords())
            with cache.lock:
                cache.sync(conn, docs, fts, seq=state[1], epoch=state[2])
                conn.execute("COMMIT")
                kept = _informative(terms, cache.size, cache.document_frequency)
                hits = cache.search(kept, k, where)
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        return hits if hits is not None else self._query_keyword_fts(conn, tenant, terms, k, where)

    def _query_keyword_fts(
        self, conn: sqlite3.Connection, tenant: str, terms: list[str], k: int, where: IndexFilter
    ) -> list[Hit]:
        if self._state(conn, tenant) is None:
            return []
        docs, fts = _tables(tenant)
        terms = self._informative_terms(conn, tenant, terms)
        match = " OR ".join(f'"{term}"' for term in terms)
        filters: list[str] = []
        params: list[object] = []
        for column, values in (
            ("namespace", where.namespaces),
            ("type", tuple(v.value for v in where.types)),
            ("status", tuple(v.value for v in where.statuses)),
        ):
            if values:
                filters.append(f"d.{column} IN ({placeholders(len(values))})")
                params.extend(values)
        condition = " AND ".join(filters) or "1"
        # First rank inside FTS5 alone (no join per matching row) and filter an over-fetched top; only when
        # the filters leave fewer than k does the exact (join-then-rank) query run.
        rows = conn.execute(
            f"SELECT d.record_id, f.score FROM (SELECT rowid, bm25({fts}) AS score FROM {fts} "
            f"WHERE {fts} MATCH ? ORDER BY score LIMIT ?) AS f JOIN {docs} AS d ON d.rowid = f.rowid "
            f"WHERE {condition} ORDER BY f.score LIMIT ?",
            (match, k * KEYWORD_OVER_FETCH, *params, k),
        ).fetchall()
        if len(rows) < k:
            rows = conn.execute(
                f"SELECT d.record_id, bm25({fts}) AS score FROM {fts} JOIN {docs} AS d ON d.rowid = {fts}.rowid "
                f"WHERE {fts} MATCH ? AND {condition} ORDER BY score LIMIT ?",
                (match, *params, k),
            ).fetchall()
        # FTS5's bm25() is negative (lower is better); the port wants higher-is-better.
        return [Hit(record_id=record_id, score=max(0.0, -float(score))) for record_id, score in rows]

    # ------------------------------------------------------------------ administration (embedding migration)

    def identity_of(self, tenant: str) -> str | None:
        """The fingerprint the tenant's index was built with (None when the tenant has no index here)."""
        _check_tenant(tenant)
        state = self._state(self._db.connection(), tenant)
        return state[0] if state else None

    def count(self, tenant: str) -> int:
        """Vectors in the tenant's index (0 when it has none)."""
        _check_tenant(tenant)
        conn = self._db.connection()
        if self._state(conn, tenant) is None:
            return 0
        docs, _ = _tables(tenant)
        return int(conn.execute(f"SELECT count(*) FROM {docs}").fetchone()[0])

    def rows(self, tenant: str, batch: int = 1000) -> Iterable[tuple[str, str, str, str, list[float]]]:
        """Every (record id, namespace, type, status, vector) of the tenant, in rowid order, a batch per read."""
        _check_tenant(tenant)
        conn = self._db.connection()
        if self._state(conn, tenant) is None:
            return
        docs, _ = _tables(tenant)
        last = 0
        while True:
            found = conn.execute(
                f"SELECT rowid, record_id, namespace, type, status, vector FROM {docs} WHERE rowid > ? "
                "ORDER BY rowid LIMIT ?",
                (last, batch),
            ).fetchall()
            if not found:
                return
            for rowid, record_id, namespace, kind, status, vector in found:
                last = rowid
                yield record_id, namespace, kind, status, np.frombuffer(vector, dtype=FLOAT32).tolist()

    def drop_tenant(self, tenant: str) -> None:
        """Drop the tenant's tables and its row: the index no longer exists for it."""
        _check_tenant(tenant)
        docs, fts = _tables(tenant)
        with self._db.transaction() as conn:
            conn.execute(f"DROP TABLE IF EXISTS {fts}")
            conn.execute(f"DROP TABLE IF EXISTS {docs}")
            conn.execute("DELETE FROM tenants WHERE tenant = ?", (tenant,))
        with self._caches_lock:
            self._caches.pop(tenant, None)
            self._keywords.pop(tenant, None)
