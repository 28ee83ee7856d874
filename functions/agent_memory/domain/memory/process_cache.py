"""What recall keeps across requests in one process (the query-vector cache, the speakers met), bounded three
ways so that it says nothing of erased content for long:

- keys and remembered words are keyed BLAKE2b digests under a secret drawn when the cache is made
  (`secrets.token_bytes`), never texts: outside this process a digest cannot be checked against a guessed name
  or query (an unkeyed digest of a name is brute-forced from a list of names);
- an entry lives at most `ttl_seconds` from when it was made (`MemoryPolicy.process_cache_seconds`); a hit does
  not renew it, so every entry's age is bounded whatever the traffic;
- `forget(tenant, namespaces)` drops a tenant's entries (those of a set of namespaces: entries recorded for any
  of them): a purge run in this process calls it when it ends (`MemoryService.forget_cached`).

A purge run in another process (the purge Lambda, the local job worker) cannot reach these entries: they leave
with the age bound (docs/reference/erasure.md). Thread-safe; the clock is injectable (tests)."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")

DEFAULT_TTL_SECONDS = 900.0


class KeyedDigest:
    """Keyed BLAKE2b of texts under a secret of this instance: equal texts give equal digests here, and a
    digest cannot be recomputed without the secret, which never leaves the process."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    def __call__(self, text: str) -> str:
        return hashlib.blake2b(text.encode(), key=self._secret, digest_size=16).hexdigest()


@dataclass
class _Entry(Generic[V]):
    value: V
    born: float
    namespaces: frozenset[str]


class ProcessCache(Generic[V]):
    """LRU of values by (tenant, key), each entry at most `ttl_seconds` old, with the namespaces it served."""

    def __init__(
        self,
        capacity: int,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 0:
            raise ValueError("capacity must be ≥ 0")
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be > 0")
        self.capacity = capacity
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], _Entry[V]] = OrderedDict()
        self._lock = threading.Lock()
        self.digest = KeyedDigest()

    def get(self, tenant: str, key: str, namespaces: Iterable[str] = ()) -> V | None:
        """The live value of (tenant, key), noting that `namespaces` used it too; None when absent or expired."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get((tenant, key))
            if entry is None:
                return None
            if now - entry.born >= self.ttl_seconds:
                del self._entries[(tenant, key)]
                return None
            entry.namespaces |= self._digests(namespaces)
            self._entries.move_to_end((tenant, key))
            return entry.value

    def put(self, tenant: str, key: str, value: V, namespaces: Iterable[str] = ()) -> None:
        """Store `value`; an entry still alive keeps its age (its birth is not renewed by a new value)."""
        if not self.capacity:
            return
        now = self._clock()
        with self._lock:
            entry = self._entries.get((tenant, key))
            if entry is None or now - entry.born >= self.ttl_seconds:
                entry = _Entry(value, now, frozenset())
            entry.value = value
            entry.namespaces |= self._digests(namespaces)
            self._entries[(tenant, key)] = entry
            self._entries.move_to_end((tenant, key))
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def forget(self, tenant: str, namespaces: Sequence[str] = ()) -> int:
        """Drop `tenant`'s entries (only those that served one of `namespaces`, when given); how many."""
        only = self._digests(namespaces)
        with self._lock:
            keys = [
                key
                for key, entry in self._entries.items()
                if key[0] == tenant and (not only or entry.namespaces & only or not entry.namespaces)
            ]
            for key in keys:
                del self._entries[key]
        return len(keys)

    def _digests(self, namespaces: Iterable[str]) -> frozenset[str]:
        """Namespaces as digests too: a namespace's name is the purged content of a namespace purge."""
        return frozenset(self.digest(namespace) for namespace in namespaces)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def entry_keys(self) -> list[tuple[str, str]]:
        """(tenant, key digest) of every entry (tests inspect what the cache holds)."""
        with self._lock:
            return list(self._entries)


class SpeakerDigests:
    """Speakers met in past recalls, per tenant and set of namespaces, as keyed digests of their words: the
    vector half's first guess at who of a question's names is a person. Only a guess: a wrong one costs a
    second vector search, never a result."""

    def __init__(
        self,
        capacity: int = 4096,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cache: ProcessCache[frozenset[str]] = ProcessCache(capacity, ttl_seconds, clock)

    def met(self, tenant: str, namespaces: Sequence[str], words: Iterable[str]) -> frozenset[str]:
        """Those of `words` already met as speakers by a recall of these namespaces."""
        seen = self.cache.get(tenant, self._key(namespaces))
        if not seen:
            return frozenset()
        return frozenset(word for word in words if self.cache.digest(word) in seen)

    def note(self, tenant: str, namespaces: Sequence[str], words: Iterable[str]) -> None:
        key = self._key(namespaces)
        seen = self.cache.get(tenant, key) or frozenset()
        self.cache.put(tenant, key, seen | {self.cache.digest(word) for word in words}, namespaces)

    def forget(self, tenant: str, namespaces: Sequence[str] = ()) -> int:
        return self.cache.forget(tenant, namespaces)

    def _key(self, namespaces: Sequence[str]) -> str:
        return self.cache.digest("\n".join(sorted(namespaces)))

    def __len__(self) -> int:
        return len(self.cache)
