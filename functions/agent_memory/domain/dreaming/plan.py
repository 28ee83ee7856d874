"""Deep's decisions, before anything is written (a dry run stops here): for every scored candidate, promoted,
blocked, deferred, excluded or already promoted, and where its text goes in `MEMORY.md` (added, present,
record only), with the cap and the displacement of less valuable promoted entries simulated on the file as it
is now."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import safety
from ..files.memory_files import MemoryFilesService, render_entries
from ..memory.strength import strength
from ..ports import RecordStore
from ..records import Status
from .config import DreamingConfig
from .ledger import SweepHandle
from .salience import salience, speakers_of
from .scoring import Outcome, entry_value, gate_reason, promotion_reason


@dataclass
class _MemoryMd:
    """MEMORY.md as the plan goes: its entries, its cap, which entries sweeps promoted (entry → ledger key)
    and what each is worth; entries this sweep adds are `protected` (never displaced by it)."""

    entries: list[str]
    limit: int
    promoted: dict[str, str]
    values: dict[str, float]
    protected: set[str] = field(default_factory=set)

    def fits(self, entries: list[str], text: str) -> bool:
        return len(render_entries([*entries, text])) <= self.limit


class PromotionPlanner:
    def __init__(self, store: RecordStore, files: MemoryFilesService, config: DreamingConfig) -> None:
        self._store = store
        self._files = files
        self.config = config

    def plan(
        self, handle: SweepHandle, outcomes: list[Outcome], ledger: dict[str, Any], as_of: datetime
    ) -> list[Outcome]:
        """Decide every candidate without writing anything; returns the promotions, in order."""
        memory_md = self._memory_md(handle, ledger, as_of)
        planned: list[Outcome] = []
        salient_count = 0
        for outcome in outcomes:
            if not self._admitted(outcome, ledger, len(planned), salient_count):
                continue
            placed = self._place(outcome, memory_md)
            if placed is None:
                continue  # deferred: MEMORY.md has no room for it
            outcome.decision = "promoted"
            outcome.reason = placed or promotion_reason(outcome)
            planned.append(outcome)
            salient_count += outcome.route == "content"
        return planned

    def _memory_md(self, handle: SweepHandle, ledger: dict[str, Any], as_of: datetime) -> _MemoryMd:
        view = self._files.read(handle.tenant, handle.namespace, "memory")
        entries = list(view.entries)
        promoted = {
            value["entry"]: key
            for key, value in ledger.items()
            if value.get("state") == "in_memory_md" and value.get("entry")
        }
        strengths = self._entry_strengths(handle.tenant, ledger, promoted, as_of)
        speakers = speakers_of(entries)
        values = {
            entry: entry_value(value, salience(entry, speakers).value) for entry, value in strengths.items()
        }
        return _MemoryMd(entries=entries, limit=view.limit, promoted=promoted, values=values)

    def _admitted(
        self, outcome: Outcome, ledger: dict[str, Any], planned_count: int, salient_count: int
    ) -> bool:
        """False (and the decision and reason set) for a candidate that is not promoted whatever the file."""
        candidate, config = outcome.candidate, self.config
        done = ledger.get(candidate.key, {})
        if done.get("state") in ("in_memory_md", "record_only", "evicted"):
            outcome.decision, outcome.reason = "already_promoted", f"promoted on {done.get('day')}"
        elif candidate.promoted_on:
            outcome.decision, outcome.reason = "already_promoted", f"promoted on {candidate.promoted_on}"
        elif candidate.type in config.never_promote_types:
            outcome.decision = "excluded"
            outcome.reason = f"type {candidate.type.value} is never promoted (never_promote_types)"
        elif failed := outcome.blocking_gates:
            outcome.decision = "blocked"
            outcome.reason = "; ".join(gate_reason(gate) for gate in failed)
        elif planned_count >= config.max_promotions:
            outcome.decision = "deferred"
            outcome.reason = f"per-sweep promotion limit reached (max_promotions={config.max_promotions})"
        elif outcome.route == "content" and salient_count >= config.max_salient_promotions:
            outcome.decision = "deferred"
            outcome.reason = (
                "per-sweep limit of the content route reached "
                f"(max_salient_promotions={config.max_salient_promotions})"
            )
        elif (finding := next(iter(safety.scan(candidate.text)), None)) is not None:
            outcome.decision = "excluded"
            outcome.reason = f"safety rule '{finding.rule}': {finding.detail}"
        else:
            return True
        return False

    def _place(self, outcome: Outcome, memory_md: _MemoryMd) -> str | None:
        """Where the text goes in MEMORY.md (`outcome.memory_md`): None when it is deferred, else the
        promotion's reason ("" for the usual one)."""
        candidate = outcome.candidate
        squashed = _squash(candidate.text)
        if any(_squash(entry) == squashed for entry in memory_md.entries):
            outcome.memory_md = "present"
        elif len(candidate.text) > self.config.memory_entry_max_chars or _has_delimiter_line(candidate.text):
            outcome.memory_md = "record_only"
        elif memory_md.fits(memory_md.entries, candidate.text):
            outcome.memory_md = "added"
        else:
            return self._displace(outcome, memory_md)
        if outcome.memory_md == "added":
            memory_md.entries = [*memory_md.entries, candidate.text]
            memory_md.protected.add(candidate.text)
        return ""

    def _displace(self, outcome: Outcome, memory_md: _MemoryMd) -> str | None:
        """MEMORY.md is full: only promoted entries less valuable than the newcomer move out, the least
        valuable first."""
        candidate, entries = outcome.candidate, memory_md.entries
        worth = entry_value(self.config.promoted_score, outcome.salience.value)
        displaceable = [
            entry for entry in entries if entry in memory_md.promoted and entry not in memory_md.protected
        ]
        victims = sorted(
            (entry for entry in displaceable if memory_md.values.get(entry, 0.0) < worth),
            key=lambda entry: (memory_md.values.get(entry, 0.0), entry),
        )
        chosen: list[str] = []
        remaining = list(entries)
        while victims and not memory_md.fits(remaining, candidate.text):
            victim = victims.pop(0)
            chosen.append(victim)
            remaining.remove(victim)
        if not memory_md.fits(remaining, candidate.text):
            if len(victims) + len(chosen) < len(displaceable):
                # Promoted entries worth more than it fill the rest: a long-term record only.
                outcome.memory_md = "record_only"
                return promotion_reason(
                    outcome,
                    f"MEMORY.md is full and its promoted entries are worth more than this one's "
                    f"{worth:.3f} (strength × (½ + ½ salience)); entries written by people or agents "
                    "are never displaced",
                )
            people = sum(1 for entry in entries if entry not in memory_md.promoted)
            outcome.decision = "deferred"
            outcome.reason = (
                f"MEMORY.md is full ({len(render_entries(entries)):,}/{memory_md.limit:,} characters) and the "
                f"entry does not fit even after moving out every displaceable promoted entry; {people} entries "
                "written by people or agents are never displaced"
            )
            return None
        outcome.memory_md = "added"
        outcome.evicted = [memory_md.promoted[victim] for victim in chosen]
        memory_md.entries = [*remaining, candidate.text]
        memory_md.protected.add(candidate.text)
        return ""

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


def _squash(text: str) -> str:
    return " ".join(text.split())


def _has_delimiter_line(text: str) -> bool:
    return any(line.strip() == "§" for line in text.split("\n"))
