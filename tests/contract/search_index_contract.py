"""The behaviour every `SearchIndex` adapter must have.

Use it by subclassing in a test module and providing a `search_index` fixture that yields an empty index:

    class TestLocalSearchIndex(SearchIndexContract):
        @pytest.fixture
        def search_index(self, tmp_path): ...

Vectors are hand-made axis-aligned vectors in 8 dimensions, so expected similarities are known exactly and no
embedding model is involved.
"""

from __future__ import annotations

import math

import pytest

from agent_memory.domain.errors import EmbedderMismatch, ValidationFailed
from agent_memory.domain.ports import IndexEntry, IndexFilter, SearchIndex
from agent_memory.domain.records import EmbedderIdentity, MemoryType, Status

TENANT_A = "acme"
TENANT_B = "globex"
BILLING = "/projects/billing"
SEARCH = "/projects/search"
DIMS = 8
IDENTITY = EmbedderIdentity(name="contract-test", dimensions=DIMS)
OTHER_IDENTITY = EmbedderIdentity(name="another-model", dimensions=DIMS)


def axis(*weights: float) -> list[float]:
    """A vector with the given leading components (zero-padded to DIMS)."""
    return [*weights, *([0.0] * (DIMS - len(weights)))]


def entry(
    record_id: str,
    text: str = "",
    vector: list[float] | None = None,
    *,
    namespace: str = BILLING,
    type: MemoryType = MemoryType.PROJECT_STATE,
    status: Status = Status.ACTIVE,
) -> IndexEntry:
    return IndexEntry(
        record_id=record_id,
        namespace=namespace,
        type=type,
        status=status,
        text=text or record_id,
        vector=vector or axis(1.0),
    )


def everywhere(**kwargs: object) -> IndexFilter:
    return IndexFilter(namespaces=(BILLING, SEARCH), **kwargs)  # type: ignore[arg-type]


def ids(hits: list) -> list[str]:
    return [hit.record_id for hit in hits]


class SearchIndexContract:
    """Subclasses provide the `search_index` fixture (an empty index)."""

    # ------------------------------------------------------------------ vector search

    def test_given_vectors_when_queried_then_nearest_first_with_cosine_scores(
        self, search_index: SearchIndex
    ):
        search_index.upsert(
            TENANT_A,
            IDENTITY,
            [
                entry("same", vector=axis(2.0, 0.0)),  # not unit length: the index must use cosine, not dot
                entry("diagonal", vector=axis(1.0, 1.0)),
                entry("orthogonal", vector=axis(0.0, 1.0)),
                entry("opposite", vector=axis(-1.0, 0.0)),
            ],
        )

        hits = search_index.query_vector(TENANT_A, IDENTITY, axis(1.0, 0.0), k=4, where=everywhere())

        assert ids(hits) == ["same", "diagonal", "orthogonal", "opposite"]
        expected = [1.0, 1 / math.sqrt(2), 0.0, -1.0]
        assert [hit.score for hit in hits] == pytest.approx(expected, abs=1e-5)

    def test_given_many_vectors_when_queried_with_k_then_only_k_best(self, search_index: SearchIndex):
        search_index.upsert(TENANT_A, IDENTITY, [entry(f"r{i}", vector=axis(1.0, i / 10)) for i in range(20)])

        hits = search_index.query_vector(TENANT_A, IDENTITY, axis(1.0, 0.0), k=3, where=everywhere())

        assert ids(hits) == ["r0", "r1", "r2"]

    def test_given_upserted_id_when_upserted_again_then_replaced_in_both_halves(
        self, search_index: SearchIndex
    ):
        search_index.upsert(
            TENANT_A, IDENTITY, [entry("r1", "apples", axis(1.0)), entry("r2", "pears", axis(0, 1))]
        )

        search_index.upsert(TENANT_A, IDENTITY, [entry("r1", "bananas", axis(0.0, 0.0, 1.0))])

        vector_hits = search_index.query_vector(TENANT_A, IDENTITY, axis(0, 0, 1.0), k=5, where=everywhere())
        assert ids(vector_hits)[0] == "r1"
        assert len(vector_hits) == 2
        assert search_index.query_keyword(TENANT_A, "apples", k=5, where=everywhere()) == []
        assert ids(search_index.query_keyword(TENANT_A, "bananas", k=5, where=everywhere())) == ["r1"]

    def test_given_wrong_dimensions_when_upserted_then_validation_error(self, search_index: SearchIndex):
        with pytest.raises(ValidationFailed):
            search_index.upsert(TENANT_A, IDENTITY, [entry("r1", vector=[1.0, 0.0])])

    # ------------------------------------------------------------------ filters

    def test_given_namespaces_when_filtered_then_only_that_namespace_in_both_halves(
        self, search_index: SearchIndex
    ):
        search_index.upsert(
            TENANT_A,
            IDENTITY,
            [
                entry("bill", "invoice totals", namespace=BILLING),
                entry("find", "invoice search", namespace=SEARCH),
            ],
        )
        only_search = IndexFilter(namespaces=(SEARCH,))

        assert ids(search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=only_search)) == [
            "find"
        ]
        assert ids(search_index.query_keyword(TENANT_A, "invoice", k=5, where=only_search)) == ["find"]

    def test_given_statuses_when_default_filter_then_only_active(self, search_index: SearchIndex):
        search_index.upsert(
            TENANT_A,
            IDENTITY,
            [entry("live", "kafka topic"), entry("old", "kafka topic", status=Status.ARCHIVED)],
        )

        active_only = IndexFilter(namespaces=(BILLING,))
        archived = IndexFilter(namespaces=(BILLING,), statuses=(Status.ARCHIVED,))

        assert ids(search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=active_only)) == [
            "live"
        ]
        assert ids(search_index.query_keyword(TENANT_A, "kafka", k=5, where=active_only)) == ["live"]
        assert ids(search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=archived)) == ["old"]

    def test_given_types_when_filtered_then_only_that_type(self, search_index: SearchIndex):
        search_index.upsert(
            TENANT_A,
            IDENTITY,
            [entry("pref", "dark mode", type=MemoryType.USER_PREFERENCE), entry("state", "dark mode launch")],
        )
        preferences = everywhere(types=(MemoryType.USER_PREFERENCE,))

        assert ids(search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=preferences)) == [
            "pref"
        ]
        assert ids(search_index.query_keyword(TENANT_A, "dark mode", k=5, where=preferences)) == ["pref"]

    def test_given_record_when_status_set_then_both_halves_follow(self, search_index: SearchIndex):
        search_index.upsert(
            TENANT_A, IDENTITY, [entry("r1", "grafana dashboard"), entry("r2", "grafana alert")]
        )
        active = everywhere()

        search_index.set_status(TENANT_A, ["r1"], Status.ARCHIVED)

        assert ids(search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=active)) == ["r2"]
        assert ids(search_index.query_keyword(TENANT_A, "grafana", k=5, where=active)) == ["r2"]

        search_index.set_status(TENANT_A, ["r1"], Status.ACTIVE)

        assert set(ids(search_index.query_keyword(TENANT_A, "grafana", k=5, where=active))) == {"r1", "r2"}

    def test_given_record_when_deleted_then_gone_from_both_halves(self, search_index: SearchIndex):
        search_index.upsert(TENANT_A, IDENTITY, [entry("r1", "redis cache"), entry("r2", "redis queue")])
        search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=everywhere())  # warm any cache

        search_index.delete(TENANT_A, ["r1", "never-indexed"])

        assert ids(search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=everywhere())) == [
            "r2"
        ]
        assert ids(search_index.query_keyword(TENANT_A, "redis", k=5, where=everywhere())) == ["r2"]

    # ------------------------------------------------------------------ keyword search

    def test_given_docs_when_keyword_query_then_docs_with_the_terms_rank_first(
        self, search_index: SearchIndex
    ):
        search_index.upsert(
            TENANT_A,
            IDENTITY,
            [
                entry("both", "The payment service retries webhooks with exponential backoff"),
                entry("one", "Webhooks are signed with an HMAC secret"),
                entry("none-1", "The team meets every Monday morning"),
                entry("none-2", "Frontend uses React and TypeScript"),
                entry("none-3", "Logs are shipped to the observability stack"),
            ],
        )

        hits = search_index.query_keyword(TENANT_A, "webhook retries backoff", k=5, where=everywhere())
        hits_plural = search_index.query_keyword(
            TENANT_A, "webhooks retries backoff", k=5, where=everywhere()
        )

        # Terms are stemmed on both sides (domain.text.index_terms): "webhook" matches "Webhooks".
        assert ids(hits) == ["both", "one"]
        assert ids(hits_plural) == ["both", "one"]
        assert hits_plural[0].score > hits_plural[1].score > 0

    def test_given_chinese_docs_when_chinese_query_then_matching_doc_found(self, search_index: SearchIndex):
        search_index.upsert(
            TENANT_A,
            IDENTITY,
            [
                entry("db", "我们的账单服务使用数据库Postgres"),
                entry("weather", "今天天气很好，适合散步"),
                entry("team", "团队每周一开会"),
            ],
        )

        hits = search_index.query_keyword(TENANT_A, "账单数据库", k=5, where=everywhere())
        mixed = search_index.query_keyword(TENANT_A, "postgres 服务", k=5, where=everywhere())

        assert ids(hits) == ["db"]
        assert ids(mixed) == ["db"]

    def test_given_stopword_only_query_when_keyword_search_then_no_hits(self, search_index: SearchIndex):
        search_index.upsert(TENANT_A, IDENTITY, [entry("r1", "the and of")])

        assert search_index.query_keyword(TENANT_A, "the of and", k=5, where=everywhere()) == []

    def test_given_query_syntax_characters_when_keyword_search_then_treated_as_text(
        self, search_index: SearchIndex
    ):
        search_index.upsert(TENANT_A, IDENTITY, [entry("r1", "deploy NOT on fridays")])

        hits = search_index.query_keyword(TENANT_A, 'deploy" OR * NEAR( AND -', k=5, where=everywhere())

        assert ids(hits) == ["r1"]

    # ------------------------------------------------------------------ embedder identity

    def test_given_index_of_one_embedder_when_another_is_used_then_mismatch(self, search_index: SearchIndex):
        search_index.ensure_tenant(TENANT_A, IDENTITY)
        search_index.upsert(TENANT_A, IDENTITY, [entry("r1")])

        with pytest.raises(EmbedderMismatch) as raised:
            search_index.ensure_tenant(TENANT_A, OTHER_IDENTITY)
        assert IDENTITY.name in raised.value.message and OTHER_IDENTITY.name in raised.value.message
        with pytest.raises(EmbedderMismatch):
            search_index.upsert(TENANT_A, OTHER_IDENTITY, [entry("r2")])
        with pytest.raises(EmbedderMismatch):
            search_index.query_vector(TENANT_A, OTHER_IDENTITY, axis(1.0), k=1, where=everywhere())

        assert ids(search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=everywhere())) == [
            "r1"
        ]

    def test_given_ensured_tenant_when_ensured_again_with_same_identity_then_no_error(
        self, search_index: SearchIndex
    ):
        search_index.ensure_tenant(TENANT_A, IDENTITY)
        search_index.ensure_tenant(TENANT_A, IDENTITY)

        assert search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=everywhere()) == []
        assert search_index.query_keyword(TENANT_A, "anything", k=5, where=everywhere()) == []

    def test_given_tenants_with_different_embedders_then_each_keeps_its_own(self, search_index: SearchIndex):
        search_index.ensure_tenant(TENANT_A, IDENTITY)

        search_index.ensure_tenant(TENANT_B, OTHER_IDENTITY)

        with pytest.raises(EmbedderMismatch):
            search_index.ensure_tenant(TENANT_B, IDENTITY)

    # ------------------------------------------------------------------ tenant isolation

    def test_given_two_tenants_when_b_searches_then_a_is_invisible(self, search_index: SearchIndex):
        search_index.upsert(TENANT_A, IDENTITY, [entry("a-secret", "merger with initech", axis(1.0))])
        search_index.upsert(TENANT_B, IDENTITY, [entry("b-note", "lunch menu", axis(0.0, 1.0))])

        vector_hits = search_index.query_vector(TENANT_B, IDENTITY, axis(1.0), k=10, where=everywhere())
        keyword_hits = search_index.query_keyword(TENANT_B, "merger initech", k=10, where=everywhere())

        assert ids(vector_hits) == ["b-note"]
        assert keyword_hits == []

    def test_given_two_tenants_when_b_changes_a_ids_then_a_is_untouched(self, search_index: SearchIndex):
        search_index.upsert(TENANT_A, IDENTITY, [entry("shared-id", "quarterly report")])
        search_index.upsert(TENANT_B, IDENTITY, [entry("b-only", "other")])

        search_index.set_status(TENANT_B, ["shared-id"], Status.ARCHIVED)
        search_index.delete(TENANT_B, ["shared-id"])

        assert ids(search_index.query_keyword(TENANT_A, "quarterly", k=5, where=everywhere())) == [
            "shared-id"
        ]
        assert ids(search_index.query_vector(TENANT_A, IDENTITY, axis(1.0), k=5, where=everywhere())) == [
            "shared-id"
        ]

    def test_given_unknown_tenant_when_queried_then_empty(self, search_index: SearchIndex):
        assert search_index.query_vector(TENANT_B, IDENTITY, axis(1.0), k=5, where=everywhere()) == []
        assert search_index.query_keyword(TENANT_B, "anything", k=5, where=everywhere()) == []
