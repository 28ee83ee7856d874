"""One backfill page: re-embed a page of the tenant's records with the target model, paced to the budget,
retrying throttles with full-jitter backoff, dead-lettering what keeps failing, and writing the target index.

Nothing is embedded twice: the cache is asked first and every vector the model returns is cached before the
index write, so a page re-run after a crash (its checkpoint was not saved) finds its vectors in the cache."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..ports import Embedder, IndexEntry, RecordStore, Vector
from ..records import MemoryRecord, Status
from .model import Budget, DeadLetter, text_hash
from .pacing import RateLimiter, backoff, estimate_tokens
from .ports import Pacer
from .routing import CachingEmbedder, Target


@dataclass
class BatchOutcome:
    written: list[str] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    skipped_changed: int = 0
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    tokens: int = 0


def index_entry(record: MemoryRecord, vector: Vector) -> IndexEntry:
    """The index entry of a record, as the memory service writes it (content + context for keywords, the vector
    of the content)."""
    return IndexEntry(
        record_id=record.id,
        namespace=record.namespace,
        type=record.type,
        status=record.status,
        text=f"{record.content}\n{record.context}" if record.context else record.content,
        vector=list(vector),
        embedded_text=record.content,
    )


class Backfiller:
    def __init__(
        self,
        records: RecordStore,
        pacer: Pacer,
        budget: Budget,
        limiter: RateLimiter | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._records = records
        self._pacer = pacer
        self._budget = budget
        self._limiter = limiter or RateLimiter(budget.rpm, budget.tpm, pacer)
        self._rng = rng or random.Random()

    def run(self, tenant: str, target: Target, records: Sequence[MemoryRecord], at: datetime) -> BatchOutcome:
        """Embed and index `records` (quarantined ones are skipped: they are never indexed)."""
        outcome = BatchOutcome()
        todo = [r for r in records if r.status is not Status.QUARANTINED]
        if not todo:
            return outcome
        embedder = target.embedder
        texts = list(dict.fromkeys(r.content for r in todo))
        vectors: dict[str, Vector] = {}
        if isinstance(embedder, CachingEmbedder):
            vectors = embedder.lookup(texts)
        outcome.cache_hits = len([t for t in texts if text_hash(t) in vectors])
        missing = [t for t in texts if text_hash(t) not in vectors]
        failed = self._embed_all(embedder, missing, vectors, outcome)
        # The store is the truth: write what the records are now (a record changed while its page ran gets its
        # current status; one whose content changed is left to the dual write, which embedded it).
        current = {r.id: r for r in self._records.get_many(tenant, [r.id for r in todo])}
        entries: list[IndexEntry] = []
        for record in todo:
            if record.content in failed:
                error, attempts = failed[record.content]
                outcome.dead.append(DeadLetter(record_id=record.id, error=error, attempts=attempts, at=at))
                continue
            now = current.get(record.id)
            if now is None or now.status is Status.QUARANTINED or now.content != record.content:
                outcome.skipped_changed += 1
                continue
            entries.append(index_entry(now, vectors[text_hash(record.content)]))
        if entries:
            target.index.upsert(tenant, embedder.identity, entries)
            outcome.written = [e.record_id for e in entries]
        return outcome

    def _embed_all(
        self, embedder: Embedder, texts: list[str], vectors: dict[str, Vector], outcome: BatchOutcome
    ) -> dict[str, tuple[str, int]]:
        """Embed `texts` in batches of `batch_size`, one paced request each. A failed batch waits out its
        full-jitter backoff in a queue while the other batches go ahead (sleeping only when nothing is ready),
        so retries do not leave the budget unused; after `max_attempts` its texts are returned as failed."""
        size = self._budget.batch_size
        pending: deque[tuple[list[str], int, float]] = deque(
            (texts[start : start + size], 0, 0.0) for start in range(0, len(texts), size)
        )
        failed: dict[str, tuple[str, int]] = {}
        while pending:
            now = self._pacer.monotonic()
            ready = next((i for i, item in enumerate(pending) if item[2] <= now), None)
            if ready is None:
                self._pacer.sleep(min(item[2] for item in pending) - now)
                continue
            batch, attempts, _ = pending[ready]
            del pending[ready]
            tokens = sum(estimate_tokens(t) for t in batch)
            self._limiter.acquire(tokens)
            outcome.requests += 1
            outcome.tokens += tokens
            try:
                if isinstance(embedder, CachingEmbedder):
                    vectors.update(embedder.compute(batch))
                else:
                    computed = embedder.embed_documents(batch)
                    vectors.update({text_hash(t): v for t, v in zip(batch, computed, strict=True)})
                outcome.cache_misses += len(batch)
            except Exception as exc:  # throttles and model errors alike: back off, retry, then dead-letter
                attempts += 1
                if attempts >= self._budget.max_attempts:
                    failed.update((text, (f"{type(exc).__name__}: {exc}"[:500], attempts)) for text in batch)
                    continue
                outcome.retries += 1
                delay = backoff(attempts - 1, self._rng)
                pending.append((batch, attempts, self._pacer.monotonic() + delay))
        return failed

    @property
    def waited(self) -> float:
        return self._limiter.waited
