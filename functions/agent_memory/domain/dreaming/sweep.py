"""Dreaming: the scheduled consolidation sweep of one namespace (DESIGN §2 "Dreaming", §3 Deep-phase numbers).

Light → REM → Deep, then forgetting and (weekly) compaction. Pure orchestration over the ports; every number
is in `DreamingConfig`.

**Light** gathers candidates: sentences extracted from the daily logs of the last `daily_lookback_days`
(`extraction.py`), the namespace's active short-term records, and (optionally) recalled long-term records.
Identical texts are one candidate (content hash); near-duplicates at `dedup_similarity` are merged without
comparing all pairs (`near_duplicates.py`). Each candidate keeps its provenance (file and line range, record
ids, recall ids) and its evidence from the recall log of the last `recall_window_days`: recalls that returned
one of its records, distinct query hashes, recall days, recall scores. In a real run, daily-log candidates
are then written as short-term records (at most `max_materialize`), so that later recalls can reinforce them.

**REM** finds recurring themes over the last `rem_days`: a term found in at least `rem_min_items` candidates
and recall queries on at least `rem_min_days` distinct days, and in at most max(`rem_max_share` × items,
`rem_min_items`) of them (a word in everything is not a theme). A theme's
strength is its days / `rem_days`. A candidate's reinforcement is the mean strength of its strongest
`rem_top_themes` themes (missing ones count 0), in [0, 1].

**Deep** scores each candidate (each signal clamped to [0, 1]):

    frequency     = ln(1 + recalls + mentions) / ln(1 + frequency_saturation)
    relevance     = mean recall score of its records (0 if never recalled)
    diversity     = max(unique queries, recall days) / diversity_saturation
    recency       = exp(−ln 2 · days since the newest evidence / recency_half_life_days)
    consolidation = (distinct days with a recall or a mention − 1) / (consolidation_days − 1)
    conceptual    = concepts / concept_saturation
    base          = Σ weight × signal                                  (weights 0.24/0.30/0.15/0.15/0.10/0.06)
    total         = min(1, base + rem_bonus × REM + workload_bonus × workload + salience_bonus × salience)

REM, workload and content salience (`salience.py`) enter as bounded additive bonuses (at most +0.05 each by
default; 0 turns them off). **Workload feedback**: the distribution of query terms of the last `workload_days`
of recalls; a candidate's workload value is the count of the hottest topic it mentions divided by the count of
the hottest topic overall; fewer than `workload_min_recalls` recalls is a cold start (value 0 for all).

**Gates**: the recall route needs total ≥ `min_score`, recalls ≥ `min_recall_count`, unique queries ≥
`min_unique_queries`; the content route needs salience ≥ `salient` (at most `max_salient_promotions` a sweep,
the most salient first); both need age ≤ `max_age_days` and salience ≥ `min_salience`. A candidate that passes
is promoted (at most `max_promotions` per sweep, recall route first): its record becomes long-term (updated in
place, or written with `MemoryService.remember`, source kind `dreaming`) and its text is appended to `MEMORY.md`
within the cap. At the cap only *promoted* entries worth less than it (`scoring.entry_value`) move out into
records only, the least valuable first; if more valuable ones fill it, it is a record only; entries written by
people or agents are never displaced (only those left: deferred). Tracked in `.dreams/promoted.json`.

**Audit and safety**: every sweep writes `.dreams/<day>/run.json` (inputs; signals, salience, total, gates,
decision and reason of the first `run_json_candidates`, the rest counted) and `REPORT.md`, then compacts days
older than the newest `keep_full_runs` (`ledger.apply_retention`); a dry run decides the same, writes nothing. A sweep is idempotent per tenant, namespace and day (`.dreams/<day>/done.json` marker; the promotion
ledger and the records' `dreaming_promoted_on` metadata make a forced re-run promote nothing twice) and holds
a lease in `.dreams/lock.json` (taken and released with the file store's locked read-modify-write; it expires
after `lock_ttl_seconds` if a sweep dies).
"""

from __future__ import annotations

import contextlib
import time as _time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from .. import safety
from ..errors import (
    Conflict,
    DomainError,
    DuplicateEntry,
    NotFound,
    ValidationFailed,
)
from ..files.memory_files import MemoryFilesService, render_entries
from ..memory.near_duplicates import cluster, embedding_verifier, term_set
from ..memory.service import Decision, MemoryService, RememberInput
from ..memory.strength import strength
from ..ports import Clock, RecordQuery, RecordStore
from ..records import (
    MemoryRecord,
    Metadata,
    RecallLogEntry,
    Source,
    SourceKind,
    Status,
    Tier,
    content_hash,
    is_valid_namespace,
    is_valid_tenant,
    metadata_size,
)
from .compaction import CompactionReport, CompactionService
from .config import DreamingConfig
from .extraction import (
    DailyDocument,
    Extractor,
    LlmExtractor,
    RuleBasedExtractor,
    TextModel,
    kind_of,
)
from .ledger import INGESTED_PATH, SweepHandle, SweepState, day_path
from .report import DreamReport, summarize
from .salience import salience, speakers_of
from .scoring import (
    REFS_KEPT,
    Candidate,
    LightState,
    Outcome,
    RemState,
    absorb,
    entry_value,
    gate_reason,
    promotion_order,
    promotion_reason,
    rank_for_representative,
    rem_reinforcement,
    score_candidates,
    workload_of,
)

ACTOR = "dreaming"
MAX_SWEEP_AGE_DAYS = 366
"""How far back a sweep day may be (the latest is tomorrow, UTC, for tenants ahead of UTC). Older days have
nothing left in any window (daily logs ≤ 90 days, recall log ≤ 365 days), and an unbounded day such as
0001-01-01 would overflow the date arithmetic."""
PROMOTED_MARK = "dreaming_promoted_on"
_RECALL_IDS_KEPT = 20
_PAGE = 200


# --------------------------------------------------------------------------- service


NamespaceLister = Callable[[str], Iterable[str]]


class DreamingService:
    """The sweep of one tenant's namespace: `run` (local, CLI, API) or the staged `begin` → `light_stage` →
    `rem_stage` → `deep_stage` (one Step Functions task each; state lives in `.dreams/<day>/`)."""

    def __init__(
        self,
        memory: MemoryService,
        store: RecordStore,
        files: MemoryFilesService,
        clock: Clock,
        config: DreamingConfig | None = None,
        *,
        text_model: TextModel | None = None,
        namespace_lister: NamespaceLister | None = None,
    ) -> None:
        self._memory = memory
        self._store = store
        self._files = files
        self._clock = clock
        self.config = config or DreamingConfig()
        self._namespace_lister = namespace_lister
        self._extractor = self._build_extractor(text_model)
        self._compaction = CompactionService(memory, store, clock)
        self._state = SweepState(files, clock, self.config)

    def _build_extractor(self, text_model: TextModel | None) -> Extractor:
        if self.config.extractor == "rule":
            return RuleBasedExtractor()
        if text_model is None:
            raise ValidationFailed(
                "dreaming is configured with extractor='llm' but no text model is wired: set "
                "AGENT_MEMORY_DREAMING_MODEL_ID (a Bedrock model id allowed for the function) so wiring can "
                "build BedrockTextModel, or use extractor='rule'"
            )
        return LlmExtractor(
            text_model, strategies=self.config.llm_strategies, prompts=self.config.llm_prompts
        )

    # ------------------------------------------------------------------ namespaces

    def namespaces(self, tenant: str, extra: Iterable[str] = ()) -> list[str]:
        """Namespaces worth a sweep: `extra` (configuration), the injected lister's (memory-file
        directories) and every namespace holding an active short-term record."""
        _check_tenant(tenant)
        found = {namespace for namespace in extra if is_valid_namespace(namespace)}
        if self._namespace_lister is not None:
            found.update(ns for ns in self._namespace_lister(tenant) if is_valid_namespace(ns))
        cursor: str | None = None
        while True:
            page = self._store.list(
                tenant,
                RecordQuery(statuses=(Status.ACTIVE,), tiers=(Tier.SHORT_TERM,), limit=_PAGE, cursor=cursor),
            )
            found.update(record.namespace for record in page.items)
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        return sorted(found)

    # ------------------------------------------------------------------ one-shot sweep

    def run(
        self,
        tenant: str,
        namespace: str,
        *,
        day: date | None = None,
        dry_run: bool = False,
        force: bool = False,
    ) -> DreamReport:
        """Light → REM → Deep → forgetting → (weekly) compaction for one namespace.

        Real runs hold the namespace's lease, write the audit and are idempotent per day: a second run of the
        same day returns the recorded summary (status `already_done`) unless `force`; even forced, nothing
        already promoted is promoted again. A dry run takes no lease and writes nothing."""
        handle = self.begin(tenant, namespace, day=day, dry_run=dry_run, force=force)
        if handle.skip:
            return self._state.already_done(handle)
        try:
            as_of = datetime.fromisoformat(handle.as_of)
            light = self._light(handle, as_of, dry_run=dry_run)
            rem = self._rem(light, as_of)
            return self._deep(handle, light, rem, as_of, dry_run=dry_run)
        finally:
            if not dry_run:
                self._state.release(handle)

    # ------------------------------------------------------------------ staged sweep (Step Functions)

    def begin(
        self,
        tenant: str,
        namespace: str,
        *,
        day: date | None = None,
        run_id: str | None = None,
        dry_run: bool = False,
        force: bool = False,
    ) -> SweepHandle:
        """Validate, pick the reference time, check the day's marker and (real runs) take the lease. The
        same `run_id` may begin again (a retried task): the lease is re-entrant for its owner."""
        _check_tenant(tenant)
        _check_namespace(namespace)
        now = self._clock.now()
        sweep_day = day or now.date()
        if sweep_day > now.date() + timedelta(days=1):
            raise ValidationFailed(f"cannot sweep {sweep_day.isoformat()}: it is in the future")
        earliest = now.date() - timedelta(days=MAX_SWEEP_AGE_DAYS)
        if sweep_day < earliest:
            raise ValidationFailed(
                f"cannot sweep {sweep_day.isoformat()}: a sweep day is at most {MAX_SWEEP_AGE_DAYS} days ago "
                f"(from {earliest.isoformat()} to {(now.date() + timedelta(days=1)).isoformat()}); "
                "omit `day` to sweep today",
                day=sweep_day.isoformat(),
                earliest=earliest.isoformat(),
            )
        # A past day is swept as of its end, so re-running yesterday looks at yesterday's windows.
        as_of = min(now, datetime.combine(sweep_day + timedelta(days=1), time.min, tzinfo=UTC))
        handle = SweepHandle(
            tenant=tenant,
            namespace=namespace,
            day=sweep_day.isoformat(),
            run_id=run_id or f"dream_{uuid.uuid4().hex[:16]}",
            as_of=as_of.isoformat(),
        )
        if dry_run:
            return handle
        marker = self._state.read_json(tenant, namespace, day_path(handle.day, "done.json"))
        if marker is not None and not force and marker.get("run_id") != handle.run_id:
            return SweepHandle(
                **{
                    **handle.to_json(),
                    "skip": True,
                    "reason": f"already completed by run {marker.get('run_id')}",
                }
            )
        self._state.acquire(handle, now)
        return handle

    def light_stage(self, handle: SweepHandle) -> dict[str, Any]:
        """Light, persisted to `.dreams/<day>/light.json` (+ parts) for the REM and Deep tasks."""
        if handle.skip:
            return {"skipped": True, "reason": handle.reason}
        self._state.renew(handle)
        light = self._light(handle, datetime.fromisoformat(handle.as_of), dry_run=False)
        self._state.save_light(handle, light)
        return {"candidates": len(light.candidates), "materialized": len(light.materialized)}

    def rem_stage(self, handle: SweepHandle) -> dict[str, Any]:
        if handle.skip:
            return {"skipped": True, "reason": handle.reason}
        self._state.renew(handle)
        light = self._state.load_light(handle)
        rem = self._rem(light, datetime.fromisoformat(handle.as_of))
        self._state.write_json(
            handle.tenant,
            handle.namespace,
            day_path(handle.day, "rem.json"),
            (
                {
                    "run_id": handle.run_id,
                    "themes": rem.themes,
                    "reinforcement": rem.reinforcement,
                    "seconds": rem.seconds,
                }
            ),
        )
        return {"themes": len(rem.themes)}

    def deep_stage(self, handle: SweepHandle) -> DreamReport:
        if handle.skip:
            return self._state.already_done(handle)
        marker = self._state.read_json(handle.tenant, handle.namespace, day_path(handle.day, "done.json"))
        if marker is not None and marker.get("run_id") == handle.run_id:
            return self._state.already_done(handle)  # a retried task whose first attempt did finish
        try:
            self._state.renew(handle)
            light = self._state.load_light(handle)
            stored = self._state.read_json(handle.tenant, handle.namespace, day_path(handle.day, "rem.json"))
            if stored is None or stored.get("run_id") != handle.run_id:
                raise ValidationFailed(
                    f"REM output of run {handle.run_id} is missing: run the REM task first"
                )
            rem = RemState(
                reinforcement=[float(x) for x in stored["reinforcement"]],
                themes=stored["themes"],
                seconds=float(stored.get("seconds", 0.0)),
            )
            if len(rem.reinforcement) != len(light.candidates):
                raise ValidationFailed("REM output does not match the Light candidates: rerun REM")
            return self._deep(handle, light, rem, datetime.fromisoformat(handle.as_of), dry_run=False)
        finally:
            self._state.release(handle)

    def record_failure(self, handle: SweepHandle, error: str, cause: str) -> dict[str, Any]:
        """Write `.dreams/<day>/failure.json` for a namespace whose sweep failed, and release its lease."""
        record = {
            "run_id": handle.run_id,
            "day": handle.day,
            "failed_at": self._clock.now().isoformat(),
            "error": error[:200],
            "cause": cause[:4000],
        }
        self._state.write_json(handle.tenant, handle.namespace, day_path(handle.day, "failure.json"), record)
        self._state.release(handle)
        return record

    # ------------------------------------------------------------------ Light

    def _light(self, handle: SweepHandle, as_of: datetime, *, dry_run: bool) -> LightState:
        started = _time.perf_counter()
        tenant, namespace, config = handle.tenant, handle.namespace, self.config
        raw: list[Candidate] = []
        skipped: list[dict[str, Any]] = []
        logs_read: list[dict[str, Any]] = []

        first_day = as_of.date() - timedelta(days=config.daily_lookback_days - 1)
        for day_text in self._files.list_daily(tenant, namespace):
            if not first_day.isoformat() <= day_text <= as_of.date().isoformat():
                continue
            try:
                text = self._files.read_daily(tenant, namespace, day_text)
            except NotFound:
                continue
            path = f"memory/{day_text}.md"
            extraction = self._extractor.extract(DailyDocument(path, day_text, text, namespace))
            logs_read.append(
                {"path": path, "extracted": len(extraction.extracts), "skipped": len(extraction.skipped)}
            )
            seen_at = datetime.combine(date.fromisoformat(day_text), time.min, tzinfo=UTC)
            for extract in extraction.extracts:
                raw.append(
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
            skipped.extend(
                {"ref": f"{path}#L{s.line_start}-L{s.line_end}", "text": s.text[:120], "reason": s.reason}
                for s in extraction.skipped
            )

        recall_since = as_of - timedelta(days=config.recall_window_days)
        recalls = [
            entry for entry in self._store.list_recalls(tenant, namespace, recall_since) if entry.at <= as_of
        ]
        first_recall: dict[str, datetime] = {}
        for entry in recalls:
            for record_id in entry.result_ids:
                first_recall.setdefault(record_id, entry.at)
        window_start = recall_since.date().isoformat()

        # Records become candidates page by page and are not kept: a namespace may hold 100k of them.
        seen_records: set[str] = set()
        short_term = 0
        cursor: str | None = None
        while True:
            page = self._store.list(
                tenant,
                RecordQuery(
                    namespaces=(namespace,),
                    tiers=(Tier.SHORT_TERM,),
                    statuses=(Status.ACTIVE,),
                    limit=_PAGE,
                    cursor=cursor,
                ),
            )
            for record in page.items:
                if record.created_at <= as_of:
                    seen_records.add(record.id)
                    raw.append(self._record_candidate(record, None, window_start))
                    short_term += 1
            if not page.next_cursor:
                break
            cursor = page.next_cursor

        recalled_long_term = 0
        if config.include_recalled_long_term:
            missing = [record_id for record_id in first_recall if record_id not in seen_records]
            for offset in range(0, len(missing), 100):
                for record in self._store.get_many(tenant, missing[offset : offset + 100]):
                    if record.namespace == namespace and record.status is Status.ACTIVE:
                        raw.append(self._record_candidate(record, first_recall.get(record.id), window_start))
                        recalled_long_term += 1

        raw_count = len(raw)
        candidates, dedup = self._deduplicate(raw)
        self._attach_recalls(candidates, recalls)
        dropped = 0
        if len(candidates) > config.max_candidates:
            # Keep the best evidenced: recalled most, then mentioned most, then most recent.
            candidates.sort(key=lambda c: (c.recall_count, c.mentions, c.last_seen), reverse=True)
            dropped = len(candidates) - config.max_candidates
            candidates = candidates[: config.max_candidates]
        workload = workload_of(recalls, as_of, config)
        rem_since = (as_of.date() - timedelta(days=config.rem_days - 1)).isoformat()
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

        light = LightState(
            candidates=candidates,
            inputs={
                "as_of": as_of.isoformat(),
                "daily_logs": logs_read,
                "daily_window": [first_day.isoformat(), as_of.date().isoformat()],
                "short_term_records": short_term,
                "recalled_long_term_records": recalled_long_term,
                "recalls": len(recalls),
                "recall_window_days": config.recall_window_days,
                "raw_items": raw_count,
                "candidates": len(candidates),
                "merged_duplicates": raw_count - len(candidates) - dropped,
                "dropped_over_limit": dropped,
                "extractor": self._extractor.name,
                "dedup": {"method": config.dedup_method, **dedup},
            },
            workload=workload,
            recall_term_days=term_days,
            recall_term_items=dict(term_items),
            rem_recalls=rem_recalls,
            skipped_sentences=skipped[:500],
        )
        if not dry_run and config.materialize:
            light.materialized = self._materialize(handle, candidates)
        light.seconds = _time.perf_counter() - started
        return light

    def _record_candidate(
        self, record: MemoryRecord, first_recall: datetime | None, window_start: str
    ) -> Candidate:
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

    @staticmethod
    def _attach_recalls(candidates: list[Candidate], recalls: Sequence[RecallLogEntry]) -> None:
        owner: dict[str, int] = {}
        for index, candidate in enumerate(candidates):
            for record_id in candidate.record_ids:
                owner.setdefault(record_id, index)
        for entry in recalls:
            best: dict[int, float] = {}
            for record_id, score in zip(entry.result_ids, entry.scores, strict=False):
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

    def _materialize(self, handle: SweepHandle, candidates: list[Candidate]) -> list[dict[str, Any]]:
        """Write daily-log-only candidates as short-term records (newest first, at most `max_materialize`).
        `.dreams/ingested.json` remembers what was written, so a line still in the window is never written
        twice (a merge into a near-duplicate record would otherwise raise its score every night)."""
        tenant, namespace = handle.tenant, handle.namespace
        pending = [
            c for c in candidates if not c.record_ids and c.type not in self.config.never_promote_types
        ]
        if not pending:
            return []
        pending.sort(key=lambda c: (c.last_seen, c.key), reverse=True)
        ledger = self._state.read_json(tenant, namespace, INGESTED_PATH) or {}
        written: list[dict[str, Any]] = []
        for candidate in pending:
            known = ledger.get(candidate.key)
            if known:
                candidate.record_ids.append(known["record_id"])
                continue
            if len(written) >= self.config.max_materialize:
                break
            existing = [
                r
                for r in self._store.find_by_hash(tenant, namespace, candidate.key)
                if r.status is not Status.QUARANTINED
            ]
            if existing:
                candidate.record_ids.append(existing[0].id)
                ledger[candidate.key] = {"record_id": existing[0].id, "day": handle.day, "decision": "linked"}
                continue
            source = Source(kind=SourceKind.FILE, ref=candidate.refs[0][:512], actor=ACTOR)
            try:
                result = self._memory.remember(
                    tenant,
                    RememberInput(
                        content=candidate.text,
                        namespace=namespace,
                        type=candidate.type,
                        tier=Tier.SHORT_TERM,
                        source=source,
                        metadata={"dreaming_candidate": candidate.key[:16]},
                    ),
                    actor=ACTOR,
                )
            except DomainError as error:
                written.append({"key": candidate.key, "decision": "rejected", "reason": error.message})
                ledger[candidate.key] = {"record_id": "", "day": handle.day, "decision": "rejected"}
                continue
            record_id = result.record.id if result.record else ""
            if record_id:
                candidate.record_ids.append(record_id)
            ledger[candidate.key] = {
                "record_id": record_id,
                "day": handle.day,
                "decision": result.decision.value,
            }
            written.append(
                {
                    "key": candidate.key,
                    "record_id": record_id,
                    "decision": result.decision.value,
                    "reason": result.reason,
                }
            )
        horizon = (
            date.fromisoformat(handle.day) - timedelta(days=self.config.daily_lookback_days + 1)
        ).isoformat()
        kept = {key: value for key, value in ledger.items() if value.get("day", "") >= horizon}
        self._state.write_json(tenant, namespace, INGESTED_PATH, kept)
        return written

    # ------------------------------------------------------------------ REM

    def _rem(self, light: LightState, as_of: datetime) -> RemState:
        started = _time.perf_counter()
        rem = rem_reinforcement(
            light.candidates,
            light.recall_term_days,
            light.recall_term_items,
            light.rem_recalls,
            self.config,
            as_of,
        )
        rem.seconds = _time.perf_counter() - started
        return rem

    # ------------------------------------------------------------------ Deep

    def _deep(
        self, handle: SweepHandle, light: LightState, rem: RemState, as_of: datetime, *, dry_run: bool
    ) -> DreamReport:
        started = self._clock.now()
        deep_started = _time.perf_counter()
        outcomes = score_candidates(light.candidates, rem.reinforcement, light.workload, self.config, as_of)
        outcomes.sort(key=promotion_order)
        ledger = self._state.promoted_entries(handle)
        plan = self._plan(handle, outcomes, ledger, as_of)
        if not dry_run:
            self._apply(handle, plan, ledger)
        deep_seconds = _time.perf_counter() - deep_started
        maintenance_started = _time.perf_counter()
        maintenance = self._maintenance(handle, dry_run=dry_run)
        maintenance_seconds = _time.perf_counter() - maintenance_started
        report = DreamReport(
            tenant=handle.tenant,
            namespace=handle.namespace,
            day=handle.day,
            run_id=handle.run_id,
            dry_run=dry_run,
            status="completed",
            as_of=handle.as_of,
            started_at=started.isoformat(),
            inputs=light.inputs,
            workload=light.workload.summary(self.config.workload_top_topics),
            themes=rem.themes,
            outcomes=outcomes,
            materialized=light.materialized,
            maintenance=maintenance,
            config=self.config.model_dump(mode="json"),
        )
        report.timings = {
            "light": round(light.seconds, 3),
            "rem": round(rem.seconds, 3),
            "deep": round(deep_seconds, 3),
            "maintenance": round(maintenance_seconds, 3),
        }
        report.summary = summarize(report)
        report.finished_at = self._clock.now().isoformat()
        if not dry_run:
            self._state.write_audit(handle, report, light)
            report.retention = self._state.apply_retention(handle)
        return report

    def _plan(
        self, handle: SweepHandle, outcomes: list[Outcome], ledger: dict[str, Any], as_of: datetime
    ) -> list[Outcome]:
        """Decide every candidate without writing anything (a dry run stops here), including the MEMORY.md
        cap and displacement, simulated on the file as it is now."""
        config = self.config
        view = self._files.read(handle.tenant, handle.namespace, "memory")
        entries = list(view.entries)
        limit = view.limit
        promoted_entries = {
            value["entry"]: key
            for key, value in ledger.items()
            if value.get("state") == "in_memory_md" and value.get("entry")
        }
        strengths = self._entry_strengths(handle.tenant, ledger, promoted_entries, as_of)
        speakers = speakers_of(entries)
        values = {
            entry: entry_value(value, salience(entry, speakers).value) for entry, value in strengths.items()
        }
        planned: list[Outcome] = []
        salient_count = 0
        protected: set[str] = set()  # entries added by this sweep are never displaced by it
        for outcome in outcomes:
            candidate = outcome.candidate
            done = ledger.get(candidate.key, {})
            if done.get("state") in ("in_memory_md", "record_only", "evicted"):
                outcome.decision, outcome.reason = "already_promoted", f"promoted on {done.get('day')}"
                continue
            if candidate.promoted_on:
                outcome.decision, outcome.reason = "already_promoted", f"promoted on {candidate.promoted_on}"
                continue
            if candidate.type in config.never_promote_types:
                outcome.decision = "excluded"
                outcome.reason = f"type {candidate.type.value} is never promoted (never_promote_types)"
                continue
            failed = outcome.blocking_gates
            if failed:
                outcome.decision = "blocked"
                outcome.reason = "; ".join(gate_reason(gate) for gate in failed)
                continue
            if len(planned) >= config.max_promotions:
                outcome.decision = "deferred"
                outcome.reason = f"per-sweep promotion limit reached (max_promotions={config.max_promotions})"
                continue
            if outcome.route == "content" and salient_count >= config.max_salient_promotions:
                outcome.decision = "deferred"
                outcome.reason = (
                    "per-sweep limit of the content route reached "
                    f"(max_salient_promotions={config.max_salient_promotions})"
                )
                continue
            finding = next(iter(safety.scan(candidate.text)), None)
            if finding is not None:
                outcome.decision = "excluded"
                outcome.reason = f"safety rule '{finding.rule}': {finding.detail}"
                continue
            squashed = _squash(candidate.text)
            if any(_squash(entry) == squashed for entry in entries):
                outcome.memory_md = "present"
            elif len(candidate.text) > config.memory_entry_max_chars or _has_delimiter_line(candidate.text):
                outcome.memory_md = "record_only"
            elif len(render_entries([*entries, candidate.text])) <= limit:
                outcome.memory_md = "added"
            else:
                # Only promoted entries less valuable than the newcomer move out, the least valuable first.
                worth = entry_value(config.promoted_score, outcome.salience.value)
                displaceable = [
                    entry for entry in entries if entry in promoted_entries and entry not in protected
                ]
                victims = sorted(
                    (entry for entry in displaceable if values.get(entry, 0.0) < worth),
                    key=lambda entry: (values.get(entry, 0.0), entry),
                )
                chosen: list[str] = []
                remaining = list(entries)
                while victims and len(render_entries([*remaining, candidate.text])) > limit:
                    victim = victims.pop(0)
                    chosen.append(victim)
                    remaining.remove(victim)
                if len(render_entries([*remaining, candidate.text])) > limit:
                    people = sum(1 for entry in entries if entry not in promoted_entries)
                    if len(victims) + len(chosen) < len(displaceable):
                        # Promoted entries worth more than it fill the rest: a long-term record only.
                        outcome.memory_md = "record_only"
                        outcome.decision = "promoted"
                        outcome.reason = promotion_reason(
                            outcome,
                            f"MEMORY.md is full and its promoted entries are worth more than this one's "
                            f"{worth:.3f} (strength × (½ + ½ salience)); entries written by people or agents "
                            "are never displaced",
                        )
                        planned.append(outcome)
                        salient_count += outcome.route == "content"
                        continue
                    outcome.decision = "deferred"
                    outcome.reason = (
                        f"MEMORY.md is full ({len(render_entries(entries)):,}/{limit:,} characters) and the entry "
                        f"does not fit even after moving out every displaceable promoted entry; {people} entries "
                        "written by people or agents are never displaced"
                    )
                    continue
                outcome.memory_md = "added"
                outcome.evicted = [promoted_entries[victim] for victim in chosen]
                entries = remaining
            if outcome.memory_md == "added":
                entries = [*entries, candidate.text]
                protected.add(candidate.text)
            outcome.decision = "promoted"
            outcome.reason = promotion_reason(outcome)
            planned.append(outcome)
            salient_count += outcome.route == "content"
        return planned

    def _entry_strengths(
        self, tenant: str, ledger: dict[str, Any], promoted_entries: dict[str, str], as_of: datetime
    ) -> dict[str, float]:
        """Current strength of each promoted entry's record; a record that is gone or inactive counts 0."""
        ids = {entry: ledger[key].get("record_id", "") for entry, key in promoted_entries.items()}
        records = {
            record.id: record
            for start in range(0, len(ids), 100)
            for record in self._store.get_many(
                tenant, [i for i in list(ids.values())[start : start + 100] if i]
            )
        }
        result: dict[str, float] = {}
        for entry, record_id in ids.items():
            record = records.get(record_id)
            result[entry] = strength(record, as_of) if record and record.status is Status.ACTIVE else 0.0
        return result

    def _apply(self, handle: SweepHandle, planned: list[Outcome], ledger: dict[str, Any]) -> None:
        """Carry out the planned promotions. Each step is idempotent (a record already long-term, an entry
        already present), and the ledger marks a promotion `pending` before it starts, so a sweep that dies
        half-way is completed by the next one."""
        for outcome in planned:
            candidate = outcome.candidate
            self._state.set_promoted(
                handle, candidate.key, {"state": "pending", "day": handle.day, "run_id": handle.run_id}
            )
            try:
                record = self._promote_record(handle, outcome)
                outcome.record_id = record.id
                for key in outcome.evicted:
                    self._evict(handle, key, ledger)
                if outcome.memory_md == "added":
                    try:
                        self._files.add(handle.tenant, handle.namespace, "memory", candidate.text)
                    except DuplicateEntry:
                        outcome.memory_md = "present"
                    except DomainError as error:
                        # Someone filled MEMORY.md meanwhile (or the file refused the text): the record is
                        # promoted; the entry is not, and the audit says why.
                        outcome.memory_md = "record_only"
                        outcome.reason += f"; MEMORY.md entry not added: {error.message}"
            except DomainError as error:
                outcome.decision = "failed"
                outcome.reason = f"promotion failed: {error.message}"
                self._state.set_promoted(handle, candidate.key, None)
                continue
            # Only an entry this sweep wrote is ours to move out later; one that was already there (written
            # by a person or an agent) is theirs and is never displaced.
            state = "in_memory_md" if outcome.memory_md == "added" else "record_only"
            self._state.set_promoted(
                handle,
                candidate.key,
                {
                    "state": state,
                    "day": handle.day,
                    "run_id": handle.run_id,
                    "record_id": outcome.record_id,
                    "entry": candidate.text if state == "in_memory_md" else "",
                    "score": round(outcome.total, 4),
                },
            )

    def _promote_record(self, handle: SweepHandle, outcome: Outcome) -> MemoryRecord:
        candidate, config = outcome.candidate, self.config
        tenant = handle.tenant
        mark: Metadata = {
            PROMOTED_MARK: handle.day,
            "dreaming_score": round(outcome.total, 3),
            "dreaming_key": candidate.key[:16],
        }
        record = self._first_active(tenant, candidate.record_ids)
        if record is None:
            result = self._memory.remember(
                tenant,
                RememberInput(
                    content=candidate.text,
                    namespace=handle.namespace,
                    type=candidate.type,
                    tier=Tier.LONG_TERM,
                    score=config.promoted_score,
                    half_life_hours=config.promoted_half_life_hours,
                    metadata=mark,
                    source=Source(kind=SourceKind.DREAMING, ref=";".join(candidate.refs)[:512], actor=ACTOR),
                ),
                actor=ACTOR,
            )
            if result.record is None or result.decision in (Decision.QUARANTINED, Decision.REJECTED):
                raise Conflict(
                    f"the memory service did not store it ({result.decision.value}: {result.reason})"
                )
            if result.record.tier is Tier.LONG_TERM:
                return result.record
            record = result.record  # merged into a short-term record: promote that one
        metadata = {**record.metadata, **mark}
        if (
            len(metadata) > self._memory.policy.max_metadata_keys
            or metadata_size(metadata) > self._memory.policy.max_metadata_bytes
        ):
            metadata = record.metadata  # no room for the mark; run.json and the ledger still trace it
        return self._memory.update(
            tenant,
            record.id,
            actor=ACTOR,
            expected_version=record.version,
            tier=Tier.LONG_TERM,
            score=max(record.score, config.promoted_score),
            half_life_hours=max(record.half_life_hours, config.promoted_half_life_hours),
            metadata=metadata,
        )

    def _first_active(self, tenant: str, record_ids: Sequence[str]) -> MemoryRecord | None:
        for record in self._store.get_many(tenant, list(record_ids)):
            if record.status is Status.ACTIVE:
                return record
        return None

    def _evict(self, handle: SweepHandle, key: str, ledger: dict[str, Any]) -> None:
        """Move a promoted entry out of MEMORY.md; its long-term record keeps the text."""
        entry = ledger.get(key, {}).get("entry", "")
        if entry:
            # Edited or removed by someone meanwhile: nothing of ours is left to move.
            with contextlib.suppress(NotFound):
                self._files.remove(handle.tenant, handle.namespace, "memory", entry, exact=True)
        self._state.set_promoted(
            handle,
            key,
            {
                **ledger.get(key, {}),
                "state": "evicted",
                "evicted_on": handle.day,
                "evicted_by_run": handle.run_id,
            },
        )

    # ------------------------------------------------------------------ maintenance

    def _maintenance(self, handle: SweepHandle, *, dry_run: bool) -> dict[str, Any]:
        result: dict[str, Any] = {}
        if self.config.forget:
            decay = self._memory.archive_decayed(
                handle.tenant, handle.namespace, actor=ACTOR, dry_run=dry_run
            )
            result["forgetting"] = {
                "examined": decay.examined,
                "archived": [record.id for record in decay.archived],
            }
        weekday = self.config.compaction_weekday
        if weekday is not None and date.fromisoformat(handle.day).weekday() == weekday:
            report: CompactionReport = self._compaction.compact(
                handle.tenant,
                handle.namespace,
                similarity=self.config.compaction_similarity,
                dry_run=dry_run,
                actor=ACTOR,
            )
            result["compaction"] = report.as_dict()
        return result


def _squash(text: str) -> str:
    return " ".join(text.split())


def _has_delimiter_line(text: str) -> bool:
    return any(line.strip() == "§" for line in text.split("\n"))


def _check_tenant(tenant: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")


def _check_namespace(namespace: str) -> None:
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")
