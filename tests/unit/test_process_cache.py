"""What recall keeps across requests (domain/memory/process_cache.py): keyed digests that mean nothing outside
the cache that made them, a bounded age (a hit does not renew it), and a purge's `forget` of a tenant or of
its namespaces."""

from __future__ import annotations

import hashlib

from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.process_cache import ProcessCache, SpeakerDigests
from agent_memory.domain.memory.query_vectors import QueryVectorCache
from tests.unit.test_query_vectors import CountingEmbedder


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_query_vector_older_than_the_age_bound_is_embedded_again():
    clock, model = Ticks(), CountingEmbedder()
    cache = QueryVectorCache(ttl_seconds=900, clock=clock)
    cache.embed("acme", model, "how do we deploy")
    clock.now += 899
    cache.embed("acme", model, "How do we deploy?")  # a retry within the bound: served
    assert model.queries == ["how do we deploy"]
    clock.now += 1  # 900 s after it was embedded: the hit above did not renew it
    cache.embed("acme", model, "how do we deploy")
    assert model.queries == ["how do we deploy", "how do we deploy"]
    assert (cache.hits, cache.misses) == (1, 2)


def test_the_recall_caches_take_their_age_bound_from_the_policy():
    from agent_memory.domain.memory.recaller import Recaller

    class Parts:
        policy = MemoryPolicy(process_cache_seconds=60)

    reader = Recaller(Parts())  # type: ignore[arg-type]
    assert reader.query_vectors._vectors.ttl_seconds == 60
    assert reader.speakers_seen.cache.ttl_seconds == 60
    assert MemoryPolicy().process_cache_seconds == 900


def test_keyed_digests_differ_between_two_caches_and_from_an_unkeyed_hash():
    first, second = ProcessCache[int](8), ProcessCache[int](8)
    assert first.digest("Tomas") == first.digest("Tomas")
    assert first.digest("Tomas") != second.digest("Tomas")
    unkeyed = {hashlib.blake2b(b"tomas", digest_size=n).hexdigest() for n in (12, 16, 32)}
    unkeyed |= {hashlib.sha256(b"tomas").hexdigest(), hashlib.sha256(b"Tomas").hexdigest()}
    assert not {first.digest("Tomas"), first.digest("tomas")} & unkeyed


def test_a_query_vector_is_kept_under_a_keyed_digest_never_the_query():
    cache, model = QueryVectorCache(), CountingEmbedder()
    cache.embed("acme", model, "Where does Marit Quell live?", ("/people",))
    kept = repr(cache.entry_keys()) + repr(cache._vectors._entries)
    assert "marit" not in kept.casefold() and "/people" not in kept
    other = QueryVectorCache()
    other.embed("acme", model, "Where does Marit Quell live?", ("/people",))
    assert cache.entry_keys() != other.entry_keys()


def test_forget_drops_the_entries_of_the_purged_namespaces_only():
    cache, model = QueryVectorCache(), CountingEmbedder()
    cache.embed("acme", model, "one", ("/people",))
    cache.embed("acme", model, "two", ("/ops",))
    cache.embed("acme", model, "three", ("/ops", "/people"))
    cache.embed("globex", model, "one", ("/people",))
    assert cache.forget("acme", ["/people"]) == 2  # "one" and "three"
    model.queries.clear()
    for query, namespaces in (("one", ("/people",)), ("two", ("/ops",)), ("three", ("/ops",))):
        cache.embed("acme", model, query, namespaces)
    cache.embed("globex", model, "one", ("/people",))
    assert model.queries == ["one", "three"]
    assert cache.forget("acme") == 3  # the whole tenant


def test_a_hit_from_other_namespaces_is_forgotten_with_either():
    cache, model = QueryVectorCache(), CountingEmbedder()
    cache.embed("acme", model, "one", ("/ops",))
    cache.embed("acme", model, "one", ("/people",))  # served, and now serves /people too
    assert cache.forget("acme", ["/people"]) == 1


def test_speakers_met_are_keyed_digests_bounded_in_age_and_forgotten_by_namespace():
    clock = Ticks()
    speakers = SpeakerDigests(ttl_seconds=900, clock=clock)
    speakers.note("acme", ("/p",), {"tomas", "ana"})
    assert speakers.met("acme", ("/p",), {"tomas", "porto"}) == {"tomas"}
    assert speakers.met("acme", ("/q",), {"tomas"}) == frozenset()
    kept = repr(speakers.cache._entries)
    assert "tomas" not in kept and "/p" not in kept
    clock.now += 600
    speakers.note("acme", ("/p",), {"melanie"})  # adding to the entry does not renew its age
    clock.now += 300
    assert speakers.met("acme", ("/p",), {"tomas", "melanie"}) == frozenset()
    speakers.note("acme", ("/p",), {"tomas"})
    speakers.note("acme", ("/q",), {"ana"})
    assert speakers.forget("acme", ["/p"]) == 1
    assert speakers.met("acme", ("/p",), {"tomas"}) == frozenset()
    assert speakers.met("acme", ("/q",), {"ana"}) == {"ana"}
