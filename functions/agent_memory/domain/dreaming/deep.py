"""The Deep stage of the dreaming sweep: score every Light candidate (with REM's reinforcement), plan the
promotions (`plan.py`), carry them out in a real run (long-term records, `MEMORY.md` entries, displacement),
then forgetting and the weekly compaction, and write the audit (`run.json`, `REPORT.md`)."""

from __future__ import annotations

import contextlib
import time as _time
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from ..errors import Conflict, DomainError, DuplicateEntry, NotFound
from ..files.memory_files import MemoryFilesService
from ..memory.service import Decision, MemoryService, RememberInput
from ..ports import Clock, RecordStore
from ..records import MemoryRecord, Metadata, Source, SourceKind, Status, Tier, metadata_size
from .compaction import CompactionReport, CompactionService
from .config import DreamingConfig
from .ledger import SweepHandle, SweepState
from .marks import ACTOR, PROMOTED_MARK
from .plan import PromotionPlanner
from .report import DreamReport, summarize
from .scoring import LightState, Outcome, RemState, promotion_order, score_candidates


class DeepStage:
    def __init__(
        self,
        memory: MemoryService,
        store: RecordStore,
        files: MemoryFilesService,
        clock: Clock,
        state: SweepState,
        config: DreamingConfig,
    ) -> None:
        self._memory = memory
        self._store = store
        self._files = files
        self._clock = clock
        self._state = state
        self.config = config
        self._planner = PromotionPlanner(store, files, config)
        self._compaction = CompactionService(memory, store, clock)

    def run(
        self, handle: SweepHandle, light: LightState, rem: RemState, as_of: datetime, *, dry_run: bool
    ) -> DreamReport:
        started = self._clock.now()
        deep_started = _time.perf_counter()
        outcomes = score_candidates(light.candidates, rem.reinforcement, light.workload, self.config, as_of)
        outcomes.sort(key=promotion_order)
        ledger = self._state.promoted_entries(handle)
        plan = self._planner.plan(handle, outcomes, ledger, as_of)
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

    # ------------------------------------------------------------------ carrying out the plan

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
                self._promote(handle, outcome, ledger)
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

    def _promote(self, handle: SweepHandle, outcome: Outcome, ledger: dict[str, Any]) -> None:
        """The record long-term, the entries it displaces moved out, its entry added to MEMORY.md."""
        record = self._promote_record(handle, outcome)
        outcome.record_id = record.id
        for key in outcome.evicted:
            self._evict(handle, key, ledger)
        if outcome.memory_md != "added":
            return
        try:
            self._files.add(handle.tenant, handle.namespace, "memory", outcome.candidate.text)
        except DuplicateEntry:
            outcome.memory_md = "present"
        except DomainError as error:
            # Someone filled MEMORY.md meanwhile (or the file refused the text): the record is promoted; the
            # entry is not, and the audit says why.
            outcome.memory_md = "record_only"
            outcome.reason += f"; MEMORY.md entry not added: {error.message}"

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
