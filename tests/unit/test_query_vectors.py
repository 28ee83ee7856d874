"""Query-embedding cache (issue 34, domain/memory/query_vectors.py): a repeated or near-identical query of one
tenant costs no second embedding; another tenant, another model or another wording does."""

from __future__ import annotations

from collections.abc import Sequence

from agent_memory.domain.memory.query_vectors import QueryVectorCache, normalised_query
from agent_memory.domain.ports import Vector
from agent_memory.domain.records import EmbedderIdentity


class CountingEmbedder:
    def __init__(self, name: str = "model-a") -> None:
        self._identity = EmbedderIdentity(name=name, dimensions=2)
        self.queries: list[str] = []

    @property
    def identity(self) -> EmbedderIdentity:
        return self._identity

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        raise AssertionError("recall embeds queries only")

    def embed_query(self, text: str) -> Vector:
        self.queries.append(text)
        return [float(len(text)), 1.0]


def test_a_retry_in_other_case_spacing_or_punctuation_is_not_embedded_again():
    cache, model = QueryVectorCache(), CountingEmbedder()
    first = cache.embed("acme", model, "How do we deploy billing?")
    again = cache.embed("acme", model, "  how do   we deploy billing ")
    assert again == first
    assert model.queries == ["How do we deploy billing?"]
    assert (cache.hits, cache.misses) == (1, 1)
    assert normalised_query("¿How  DO we deploy?!") == "how do we deploy"


def test_another_wording_tenant_or_model_is_embedded():
    cache, model, other_model = QueryVectorCache(), CountingEmbedder(), CountingEmbedder("model-b")
    cache.embed("acme", model, "how do we deploy billing")
    cache.embed("acme", model, "how do we deploy payments")
    cache.embed("globex", model, "how do we deploy billing")
    cache.embed("acme", other_model, "how do we deploy billing")
    assert len(model.queries) == 3
    assert other_model.queries == ["how do we deploy billing"]


def test_a_returned_vector_cannot_change_the_cached_one():
    cache, model = QueryVectorCache(), CountingEmbedder()
    cache.embed("acme", model, "query").append(9.0)
    vector = cache.embed("acme", model, "query")
    vector[0] = -1.0
    assert cache.embed("acme", model, "query") == [5.0, 1.0]


def test_the_least_recently_used_entry_is_dropped_at_capacity():
    cache, model = QueryVectorCache(capacity=2), CountingEmbedder()
    cache.embed("acme", model, "one")
    cache.embed("acme", model, "two")
    cache.embed("acme", model, "one")  # "two" is now the least recently used
    cache.embed("acme", model, "three")
    assert len(cache) == 2
    cache.embed("acme", model, "one")
    cache.embed("acme", model, "two")
    assert model.queries == ["one", "two", "three", "two"]


def test_forget_drops_only_that_tenants_entries():
    cache, model = QueryVectorCache(), CountingEmbedder()
    cache.embed("acme", model, "one")
    cache.embed("globex", model, "one")
    assert cache.forget("acme") == 1
    cache.embed("acme", model, "one")
    cache.embed("globex", model, "one")
    assert model.queries == ["one", "one", "one"]


def test_capacity_zero_caches_nothing():
    cache, model = QueryVectorCache(capacity=0), CountingEmbedder()
    cache.embed("acme", model, "one")
    cache.embed("acme", model, "one")
    assert model.queries == ["one", "one"]
    assert len(cache) == 0
