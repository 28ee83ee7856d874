"""Light's last step in a real run: daily-log-only candidates become short-term records, so that later recalls
can reinforce them. `.dreams/ingested.json` remembers what was written, so a line still in the window is
never written twice (a merge into a near-duplicate record would otherwise raise its score every night)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from ..errors import DomainError
from ..memory.service import MemoryService, RememberInput
from ..ports import RecordStore
from ..records import Source, SourceKind, Status, Tier
from .config import DreamingConfig
from .ledger import INGESTED_PATH, SweepHandle, SweepState
from .marks import ACTOR
from .scoring import Candidate


class Materializer:
    def __init__(
        self, memory: MemoryService, store: RecordStore, state: SweepState, config: DreamingConfig
    ) -> None:
        self._memory = memory
        self._store = store
        self._state = state
        self.config = config

    def materialize(self, handle: SweepHandle, candidates: list[Candidate]) -> list[dict[str, Any]]:
        """Write daily-log-only candidates as short-term records (newest first, at most `max_materialize`);
        returns what each write decided."""
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
            outcome = self._write(handle, candidate, ledger)
            if outcome is not None:
                written.append(outcome)
        horizon = (
            date.fromisoformat(handle.day) - timedelta(days=self.config.daily_lookback_days + 1)
        ).isoformat()
        kept = {key: value for key, value in ledger.items() if value.get("day", "") >= horizon}
        self._state.write_json(tenant, namespace, INGESTED_PATH, kept)
        return written

    def _write(
        self, handle: SweepHandle, candidate: Candidate, ledger: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Link the candidate to a stored record of the same text (None: nothing written) or remember it."""
        tenant, namespace = handle.tenant, handle.namespace
        existing = [
            r
            for r in self._store.find_by_hash(tenant, namespace, candidate.key)
            if r.status is not Status.QUARANTINED
        ]
        if existing:
            candidate.record_ids.append(existing[0].id)
            ledger[candidate.key] = {"record_id": existing[0].id, "day": handle.day, "decision": "linked"}
            return None
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
            ledger[candidate.key] = {"record_id": "", "day": handle.day, "decision": "rejected"}
            return {"key": candidate.key, "decision": "rejected", "reason": error.message}
        record_id = result.record.id if result.record else ""
        if record_id:
            candidate.record_ids.append(record_id)
        ledger[candidate.key] = {"record_id": record_id, "day": handle.day, "decision": result.decision.value}
        return {
            "key": candidate.key,
            "record_id": record_id,
            "decision": result.decision.value,
            "reason": result.reason,
        }
