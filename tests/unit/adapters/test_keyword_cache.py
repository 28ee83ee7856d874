"""The in-process BM25 of the local keyword index (adapters/local/keyword_cache.py) returns what SQLite FTS5's
bm25() returns on the same table: same rows, same scores, same order, through upserts that change a row's
text, status changes, deletes, filters and the term pruning from 1,000 documents on; and after every write
(in this process or another one) it reads the change before answering."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from agent_memory.adapters.local.keyword_cache import fts5_ascii_tokens
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.domain.ports import IndexEntry, IndexFilter
from agent_memory.domain.records import EmbedderIdentity, MemoryType, Status
from agent_memory.domain.text import index_query_terms

IDENTITY = EmbedderIdentity(name="test", dimensions=4, normalized=True)
TENANT = "acme"
VECTOR = [1.0, 0.0, 0.0, 0.0]
LOCOMO = Path(__file__).resolve().parents[4] / "shared" / "data" / "locomo-dev.json"
WORDS = [
    "billing", "invoice", "postgres", "dynamodb", "deploy", "friday", "caroline", "melanie", "painting",
    "adoption", "café", "naïve", "数据库", "迁移", "o'brien", "co-op", "e-mail", "v2.1", "42", "ß",
]  # fmt: skip


def entry(record_id: str, text: str, namespace: str = "/a", status: Status = Status.ACTIVE) -> IndexEntry:
    return IndexEntry(record_id, namespace, MemoryType.EPISODE, status, text, VECTOR)


def corpus(size: int, rng: random.Random) -> list[str]:
    texts = []
    if LOCOMO.exists():
        data = json.loads(LOCOMO.read_text(encoding="utf-8"))
        texts = [
            f"{turn['speaker']}: {turn['text']}"
            for conversation in data
            for key, value in conversation["conversation"].items()
            if key.startswith("session_") and isinstance(value, list)
            for turn in value
        ]
    while len(texts) < size:
        texts.append(" ".join(rng.choices(WORDS, k=rng.randint(2, 12))))
    return texts[:size]


def both(index: LocalSearchIndex, text: str, k: int, where: IndexFilter):
    cached = index.query_keyword(TENANT, text, k=k, where=where)
    terms = index_query_terms(text)
    fts = index._query_keyword_fts(index._db.connection(), TENANT, terms, k, where)
    return cached, fts


def assert_same(cached, fts) -> None:
    assert [round(h.score, 9) for h in cached] == [round(h.score, 9) for h in fts]
    # equal scores may come in either order: compare the rows per score
    by_score: dict[float, set[str]] = {}
    for hit in fts:
        by_score.setdefault(round(hit.score, 9), set()).add(hit.record_id)
    for hit in cached:
        assert hit.record_id in by_score[round(hit.score, 9)], hit


@pytest.mark.parametrize("size", [300, 1500])
def test_scores_and_ranking_equal_fts5_bm25_through_writes_and_filters(tmp_path, size):
    rng = random.Random(size)
    texts = corpus(size, rng)
    index = LocalSearchIndex(tmp_path)
    index.upsert(
        TENANT,
        IDENTITY,
        [entry(f"r{i}", text, namespace=rng.choice(["/a", "/b"])) for i, text in enumerate(texts)],
    )
    queries = [rng.choice(texts) for _ in range(25)] + [
        "caroline painting adoption", "数据库 迁移", "café naïve", "o'brien co-op e-mail", "v2.1 42", "nothing-here",
    ]  # fmt: skip
    filters = [
        IndexFilter(namespaces=(), statuses=()),
        IndexFilter(namespaces=("/b",)),
        IndexFilter(namespaces=("/a", "/b"), statuses=(Status.ACTIVE, Status.ARCHIVED)),
        IndexFilter(namespaces=("/nowhere",)),
    ]

    def check() -> None:
        for query in queries:
            for where in filters:
                for k in (5, size + 1):  # a top 5, and every matching row (no tie at the cut)
                    cached, fts = both(index, query, k, where)
                    if k > size:
                        assert_same(cached, fts)
                    else:
                        assert [round(h.score, 9) for h in cached] == [round(h.score, 9) for h in fts]

    check()
    # rewrite some rows' text, archive some, delete some: the cache follows every change
    index.upsert(TENANT, IDENTITY, [entry(f"r{i}", rng.choice(texts[::-1])) for i in range(0, size, 7)])
    index.set_status(TENANT, [f"r{i}" for i in range(1, size, 5)], Status.ARCHIVED)
    check()
    index.delete(TENANT, [f"r{i}" for i in range(2, size, 11)])
    check()


def test_another_process_writes_are_seen_before_answering(tmp_path):
    reader, writer = LocalSearchIndex(tmp_path), LocalSearchIndex(tmp_path)
    writer.upsert(TENANT, IDENTITY, [entry("old", "the billing service uses postgres")])
    assert [
        h.record_id for h in reader.query_keyword(TENANT, "postgres", k=5, where=IndexFilter(namespaces=()))
    ] == ["old"]
    writer.upsert(
        TENANT, IDENTITY, [entry("old", "the billing service uses dynamodb"), entry("new", "postgres")]
    )
    hits = reader.query_keyword(TENANT, "postgres", k=5, where=IndexFilter(namespaces=()))
    assert [h.record_id for h in hits] == ["new"]
    writer.delete(TENANT, ["new"])
    assert reader.query_keyword(TENANT, "postgres", k=5, where=IndexFilter(namespaces=())) == []


def test_tokens_follow_the_fts5_ascii_tokenizer():
    assert fts5_ascii_tokens("O'Brien's CO-OP v2.1 Café 数据库") == [
        "o",
        "brien",
        "s",
        "co",
        "op",
        "v2",
        "1",
        "café",
        "数据库",
    ]
