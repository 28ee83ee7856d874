"""Dreaming: the scheduled consolidation sweep of one namespace (DESIGN §2 "Dreaming", §3 Deep-phase numbers).

Light → REM → Deep, then forgetting and (weekly) compaction. Pure orchestration over the ports; every number
is in `DreamingConfig`. This module is the sweep driver (`DreamingService`); each stage is its own class:
`light.LightStage` (with `materialize.Materializer`), `rem.RemStage`, `deep.DeepStage` (with
`plan.PromotionPlanner`).

**Light** gathers candidates: sentences extracted from the daily logs of the last `daily_lookback_days`
(`extraction.py`), the namespace's active short-term records, and (optionally) recalled long-term records.
Identical texts are one candidate (content hash); near-duplicates at `dedup_similarity` are merged without
comparing all pairs (`near_duplicates.py`). Each candidate keeps its provenance (file and line range, record
ids, recall ids) and its evidence from the recall log of the last `recall_window_days`: recalls that returned
one of its records, distinct query hashes, recall days, match strengths. In a real run, daily-log candidates
are then written as short-term records (at most `max_materialize`), so that later recalls can reinforce them.

**REM** finds recurring themes over the last `rem_days`: a term found in at least `rem_min_items` candidates
and recall queries on at least `rem_min_days` distinct days, and in at most max(`rem_max_share` × items,
`rem_min_items`) of them (a word in everything is not a theme). A theme's
strength is its days / `rem_days`. A candidate's reinforcement is the mean strength of its strongest
`rem_top_themes` themes (missing ones count 0), in [0, 1].

**Deep** scores each candidate (each signal clamped to [0, 1]):

    frequency     = ln(1 + recalls + mentions) / ln(1 + frequency_saturation)
    relevance     = mean match strength of its records over its recalls (0 if never recalled): the
                    keyword and vector evidence at equal weights × the question's focus
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

import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from ..errors import ValidationFailed
from ..files.memory_files import MemoryFilesService
from ..memory.service import MemoryService
from ..ports import Clock, RecordQuery, RecordStore
from ..records import Status, Tier, is_valid_namespace, is_valid_tenant
from .config import DreamingConfig
from .deep import DeepStage
from .extraction import Extractor, LlmExtractor, RuleBasedExtractor, TextModel
from .ledger import SweepHandle, SweepState, day_path
from .light import PAGE, LightStage
from .marks import ACTOR, PROMOTED_MARK
from .materialize import Materializer
from .rem import RemStage
from .report import DreamReport
from .scoring import RemState

__all__ = ["ACTOR", "MAX_SWEEP_AGE_DAYS", "PROMOTED_MARK", "DreamingService", "NamespaceLister"]

MAX_SWEEP_AGE_DAYS = 366
"""How far back a sweep day may be (the latest is tomorrow, UTC, for tenants ahead of UTC). Older days have
nothing left in any window (daily logs ≤ 90 days, recall log ≤ 365 days), and an unbounded day such as
0001-01-01 would overflow the date arithmetic."""


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
        self._state = SweepState(files, clock, self.config)
        materializer = Materializer(memory, store, self._state, self.config)
        self._light = LightStage(memory, store, files, self._extractor, materializer, self.config)
        self._rem = RemStage(self.config)
        self._deep = DeepStage(memory, store, files, clock, self._state, self.config)

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
                RecordQuery(statuses=(Status.ACTIVE,), tiers=(Tier.SHORT_TERM,), limit=PAGE, cursor=cursor),
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
            light = self._light.run(handle, as_of, dry_run=dry_run)
            rem = self._rem.run(light, as_of)
            return self._deep.run(handle, light, rem, as_of, dry_run=dry_run)
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
        light = self._light.run(handle, datetime.fromisoformat(handle.as_of), dry_run=False)
        self._state.save_light(handle, light)
        return {"candidates": len(light.candidates), "materialized": len(light.materialized)}

    def rem_stage(self, handle: SweepHandle) -> dict[str, Any]:
        if handle.skip:
            return {"skipped": True, "reason": handle.reason}
        self._state.renew(handle)
        light = self._state.load_light(handle)
        rem = self._rem.run(light, datetime.fromisoformat(handle.as_of))
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
            return self._deep.run(handle, light, rem, datetime.fromisoformat(handle.as_of), dry_run=False)
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


def _check_tenant(tenant: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")


def _check_namespace(namespace: str) -> None:
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")
