"""The Light stage of the dreaming sweep: gather the candidates of one namespace (the `sweep` module docstring
describes what counts). Daily-log sentences, the active short-term records and (optionally) recalled
long-term records become candidates; duplicates are merged; each keeps its recall evidence; then a real run
writes the daily-log-only ones as short-term records (`materialize.py`)."""

from __future__ import annotations

import time as _time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from ..errors import NotFound
from ..files.memory_files import MemoryFilesService
from ..memory.near_duplicates import cluster, embedding_verifier, term_set
from ..memory.service import MemoryService
from ..ports import RecordQuery, RecordStore
from ..records import MemoryRecord, RecallLogEntry, SourceKind, Status, Tier, content_hash
from .config import DreamingConfig
from .extraction import DailyDocument, Extractor, kind_of
from .ledger import SweepHandle
from .marks import PROMOTED_MARK
from .materialize import Materializer
from .scoring import REFS_KEPT, Candidate, LightState, absorb, rank_for_representative, workload_of

_RECALL_IDS_KEPT = 20
PAGE = 200


@dataclass
class _Gathered:
    """What Light read before de-duplication."""

    raw: list[Candidate] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    logs_read: list[dict[str, Any]] = field(default_factory=list)
    short_term: int = 0
    recalled_long_term: int = 0


class LightStage:
    """Light for one namespace as of a time: `run` returns the `LightState` REM and Deep read."""

    def __init__(
        self,
        memory: MemoryService,
        store: RecordStore,
        files: MemoryFilesService,
        extractor: Extractor,
        materializer: Materializer,
        config: DreamingConfig,
    ) -> None:
        self._memory = memory
        self._store = store
        self._files = files
        self._extractor = extractor
        self._materializer = materializer
        self.config = config

    def run(self, handle: SweepHandle, as_of: datetime, *, dry_run: bool) -> LightState:
        started = _time.perf_counter()
        tenant, namespace, config = handle.tenant, handle.namespace, self.config
        gathered = _Gathered()
        first_day = as_of.date() - timedelta(days=config.daily_lookback_days - 1)
        self._read_daily_logs(tenant, namespace, first_day, as_of, gathered)
        recall_since = as_of - timedelta(days=config.recall_window_days)
        recalls = [
            entry for entry in self._store.list_recalls(tenant, namespace, recall_since) if entry.at <= as_of
        ]
        window_start = recall_since.date().isoformat()
        seen = self._read_short_term(tenant, namespace, as_of, window_start, gathered)
        if config.include_recalled_long_term:
            self._read_recalled_long_term(tenant, namespace, recalls, seen, window_start, gathered)

        raw_count = len(gathered.raw)
        candidates, dedup = self._deduplicate(gathered.raw)
        attach_recalls(candidates, recalls)
        candidates, dropped = self._cap(candidates)
        term_days, term_items, rem_recalls = self._recall_terms(recalls, as_of)
        light = LightState(
            candidates=candidates,
            inputs={
                "as_of": as_of.isoformat(),
                "daily_logs": gathered.logs_read,
                "daily_window": [first_day.isoformat(), as_of.date().isoformat()],
                "short_term_records": gathered.short_term,
                "recalled_long_term_records": gathered.recalled_long_term,
                "recalls": len(recalls),
                "recall_window_days": config.recall_window_days,
                "raw_items": raw_count,
                "candidates": len(candidates),
                "merged_duplicates": raw_count - len(candidates) - dropped,
                "dropped_over_limit": dropped,
                "extractor": self._extractor.name,
                "dedup": {"method": config.dedup_method, **dedup},
            },
            workload=workload_of(recalls, as_of, config),
            recall_term_days=term_days,
            recall_term_items=term_items,
            rem_recalls=rem_recalls,
            skipped_sentences=gathered.skipped[:500],
        )
        if not dry_run and config.materialize:
            light.materialized = self._materializer.materialize(handle, candidates)
        light.seconds = _time.perf_counter() - started
        return light

    # ------------------------------------------------------------------ reading

    def _read_daily_logs(
        self, tenant: str, namespace: str, first_day: date, as_of: datetime, gathered: _Gathered
    ) -> None:
        for day_text in self._files.list_daily(tenant, namespace):
            if not first_day.isoformat() <= day_text <= as_of.date().isoformat():
                continue
            try:
                text = self._files.read_daily(tenant, namespace, day_text)
            except NotFound:
                continue
            path = f"memory/{day_text}.md"
            extraction = self._extractor.extract(DailyDocument(path, day_text, text, namespace))
            gathered.logs_read.append(
                {"path": path, "extracted": len(extraction.extracts), "skipped": len(extraction.skipped)}
            )
            seen_at = datetime.combine(date.fromisoformat(day_text), time.min, tzinfo=UTC)
            for extract in extraction.extracts:
                gathered.raw.append(
                    Candidate(
                        key=content_hash(extract.text),
                        text=extract.text,
                        type=extract.type,
                        kind=extract.kind,
                        refs=[extract.ref],
                        mention_ids={extract.ref},
                        mention_days={day_text},
                        first_seen=seen_at,
                        last_seen=seen_at,
                    )
                )
            gathered.skipped.extend(
                {"ref": f"{path}#L{s.line_start}-L{s.line_end}", "text": s.text[:120], "reason": s.reason}
                for s in extraction.skipped
            )

    def _read_short_term(
        self, tenant: str, namespace: str, as_of: datetime, window_start: str, gathered: _Gathered
    ) -> set[str]:
        """Records become candidates page by page and are not kept: a namespace may hold 100k of them.
        Returns the ids seen."""
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            page = self._store.list(
                tenant,
                RecordQuery(
                    namespaces=(namespace,),
                    tiers=(Tier.SHORT_TERM,),
                    statuses=(Status.ACTIVE,),
                    limit=PAGE,
                    cursor=cursor,
                ),
            )
            for record in page.items:
                if record.created_at <= as_of:
                    seen.add(record.id)
                    gathered.raw.append(record_candidate(record, None, window_start))
                    gathered.short_term += 1
            if not page.next_cursor:
                return seen
            cursor = page.next_cursor

    def _read_recalled_long_term(
        self,
        tenant: str,
        namespace: str,
        recalls: Sequence[RecallLogEntry],
        seen: set[str],
        window_start: str,
        gathered: _Gathered,
    ) -> None:
        first_recall: dict[str, datetime] = {}
        for entry in recalls:
            for record_id in entry.result_ids:
                first_recall.setdefault(record_id, entry.at)
        missing = [record_id for record_id in first_recall if record_id not in seen]
        for offset in range(0, len(missing), 100):
            for record in self._store.get_many(tenant, missing[offset : offset + 100]):
                if record.namespace == namespace and record.status is Status.ACTIVE:
                    gathered.raw.append(record_candidate(record, first_recall.get(record.id), window_start))
                    gathered.recalled_long_term += 1

    # ------------------------------------------------------------------ merging and evidence

    def _deduplicate(self, raw: list[Candidate]) -> tuple[list[Candidate], dict[str, int]]:
        """Exact duplicates by content hash, then near-duplicates by `near_duplicates.cluster`."""
        by_key: dict[str, Candidate] = {}
        for item in sorted(raw, key=rank_for_representative):
            existing = by_key.get(item.key)
            if existing is None:
                by_key[item.key] = item
            else:
                absorb(existing, item)
        unique = list(by_key.values())
        for candidate in unique:
            candidate.terms = term_set(candidate.text)
        verify = None
        if self.config.dedup_method == "embedding":
            texts = [candidate.text for candidate in unique]
            verify = embedding_verifier(
                lambda indices: self._memory.embed_documents([texts[i] for i in indices])
            )
        roots, stats = cluster(
            [candidate.terms for candidate in unique],
            threshold=self.config.dedup_similarity,
            verify=verify,
            lexical_floor=self.config.dedup_lexical_floor,
            max_verified_items=self.config.dedup_max_embedded,
        )
        dedup = {
            "exact_duplicates": len(raw) - len(unique),
            "compared_pairs": stats.compared_pairs,
            "verified_pairs": stats.verified_pairs,
            "decided_lexically": stats.decided_lexically,
            "merged_pairs": stats.merged_pairs,
        }
        result: list[Candidate] = []
        for index, candidate in enumerate(unique):
            root = roots[index]
            if root == index:
                result.append(candidate)
            else:
                absorb(unique[root], candidate)
        return result, dedup

    def _cap(self, candidates: list[Candidate]) -> tuple[list[Candidate], int]:
        """At most `max_candidates`, the best evidenced kept: recalled most, then mentioned most, then most
        recent. Returns the kept and how many were dropped."""
        limit = self.config.max_candidates
        if len(candidates) <= limit:
            return candidates, 0
        candidates.sort(key=lambda c: (c.recall_count, c.mentions, c.last_seen), reverse=True)
        return candidates[:limit], len(candidates) - limit

    def _recall_terms(
        self, recalls: Sequence[RecallLogEntry], as_of: datetime
    ) -> tuple[dict[str, set[str]], dict[str, int], int]:
        """The REM window's query terms: term → days asked, term → recalls, and how many recalls."""
        rem_since = (as_of.date() - timedelta(days=self.config.rem_days - 1)).isoformat()
        term_days: dict[str, set[str]] = {}
        term_items: Counter[str] = Counter()
        rem_recalls = 0
        for entry in recalls:
            recall_day = entry.at.date().isoformat()
            if recall_day < rem_since:
                continue
            rem_recalls += 1
            for term in set(entry.query_terms):
                term_items[term] += 1
                term_days.setdefault(term, set()).add(recall_day)
        return term_days, dict(term_items), rem_recalls


def record_candidate(record: MemoryRecord, first_recall: datetime | None, window_start: str) -> Candidate:
    mention_ids: set[str] = set()
    for index, source in enumerate(record.sources or [record.source]):
        if source.kind is SourceKind.FILE and source.ref:
            mention_ids.add(source.ref)  # the same id as the daily-log line it came from
        else:
            mention_ids.add(f"record:{record.id}:source:{index}")
    for merge in range(max(0, record.merged_count + 1 - len(mention_ids))):
        mention_ids.add(f"record:{record.id}:merge:{merge}")
    # Days of writes inside the recall window only: a write months ago says nothing about consolidation now.
    mention_days = {record.created_at.date().isoformat()}
    if record.merged_count:
        mention_days.add(record.updated_at.date().isoformat())
    mention_days = {day for day in mention_days if day >= window_start}
    # A long-term record enters candidacy by being recalled; a short-term one when it was written.
    first_seen = first_recall if record.tier is Tier.LONG_TERM and first_recall else record.created_at
    mark = record.metadata.get(PROMOTED_MARK)
    return Candidate(
        key=record.content_hash or content_hash(record.content),
        text=record.content,
        type=record.type,
        kind=kind_of(record.type, ()),
        record_ids=[record.id],
        record_tier=record.tier.value,
        refs=[f"record:{record.id}", *[s.ref for s in record.sources if s.ref][: REFS_KEPT - 1]],
        mention_ids=mention_ids,
        mention_days=mention_days,
        first_seen=first_seen,
        last_seen=max(record.created_at, record.updated_at),
        promoted_on=str(mark) if mark is not None else None,
    )


def attach_recalls(candidates: list[Candidate], recalls: Sequence[RecallLogEntry]) -> None:
    """Each recall that returned a candidate's record counts once for it, with the best match strength of its
    records in that recall (`RecallLogEntry.match_scores`: free of the fusion's weights; an entry logged before
    they were recorded gives its recall scores, calibrated alike: bench/README.md, issue 34 seventh round)."""
    owner: dict[str, int] = {}
    for index, candidate in enumerate(candidates):
        for record_id in candidate.record_ids:
            owner.setdefault(record_id, index)
    for entry in recalls:
        best: dict[int, float] = {}
        strengths = entry.scores if entry.match_scores is None else entry.match_scores
        for record_id, score in zip(entry.result_ids, strengths, strict=False):
            owner_index = owner.get(record_id)
            if owner_index is not None:
                best[owner_index] = max(best.get(owner_index, 0.0), score)
        if not best:
            continue
        recall_day = entry.at.date().isoformat()
        for index, score in best.items():
            candidate = candidates[index]
            candidate.recall_count += 1
            candidate.query_hashes.add(entry.query_hash)
            candidate.recall_days.add(recall_day)
            candidate.score_sum += score
            candidate.last_seen = max(candidate.last_seen, entry.at)
            if len(candidate.recall_ids) < _RECALL_IDS_KEPT:
                candidate.recall_ids.append(entry.id)
