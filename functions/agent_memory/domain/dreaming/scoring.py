"""Dreaming's scoring: candidates, the six signals, the bonuses, the gates and their outcomes, REM
reinforcement and workload feedback. Pure and linear; the formulas are in the `sweep` module docstring.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ..memory.near_duplicates import term_set
from ..records import MemoryType, RecallLogEntry, Tier
from .config import DeepGates, DreamingConfig
from .extraction import concept_count
from .salience import Salience, salience, speakers_of_lines, split_speaker

REFS_KEPT = 20
"""Provenance references kept per candidate."""
_AUDIT_IDS = 5
"""Provenance ids listed per candidate in run.json (the counts are in its evidence)."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# --------------------------------------------------------------------------- candidates


@dataclass(slots=True)
class Candidate:
    """One thing that might be worth remembering long-term, with its provenance and evidence."""

    key: str
    """Content hash of `text`: stable across sweeps (idempotency)."""
    text: str
    type: MemoryType
    kind: str
    record_ids: list[str] = field(default_factory=list)
    """Records behind it; the first is the one promotion acts on."""
    record_tier: str | None = None
    refs: list[str] = field(default_factory=list)
    """Provenance: `memory/2026-11-30.md#L3-L4` daily-log lines, `record:<id>`."""
    mention_ids: set[str] = field(default_factory=set)
    """Distinct writes of it (daily-log lines, API writes and merges): the "mentions" of frequency."""
    mention_days: set[str] = field(default_factory=set)
    recall_ids: list[str] = field(default_factory=list)
    recall_count: int = 0
    query_hashes: set[str] = field(default_factory=set)
    recall_days: set[str] = field(default_factory=set)
    score_sum: float = 0.0
    first_seen: datetime = _EPOCH
    last_seen: datetime = _EPOCH
    promoted_on: str | None = None
    """Set when a record of it carries the dreaming promotion mark."""
    terms: frozenset[str] = frozenset()
    query_count: int = 0
    mention_count: int = 0
    """Counts restored from the Light task's file, which keeps counts, not every query hash and write id."""

    @property
    def unique_queries(self) -> int:
        return max(len(self.query_hashes), self.query_count)

    @property
    def mentions(self) -> int:
        return max(len(self.mention_ids), self.mention_count)

    @property
    def mean_recall_score(self) -> float:
        return self.score_sum / self.recall_count if self.recall_count else 0.0

    @property
    def evidence_days(self) -> set[str]:
        return self.mention_days | self.recall_days

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "text": self.text,
            "type": self.type.value,
            "kind": self.kind,
            "record_ids": self.record_ids,
            "record_tier": self.record_tier,
            "refs": self.refs,
            "mentions": self.mentions,
            "mention_days": sorted(self.mention_days),
            "recall_ids": self.recall_ids,
            "recall_count": self.recall_count,
            "unique_queries": self.unique_queries,
            "recall_days": sorted(self.recall_days),
            "score_sum": self.score_sum,
            "first_seen": self.first_seen.isoformat(),
            "last_seen": self.last_seen.isoformat(),
            "promoted_on": self.promoted_on,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Candidate:
        return cls(
            key=data["key"],
            text=data["text"],
            type=MemoryType(data["type"]),
            kind=data["kind"],
            record_ids=list(data["record_ids"]),
            record_tier=data["record_tier"],
            refs=list(data["refs"]),
            mention_count=int(data["mentions"]),
            mention_days=set(data["mention_days"]),
            recall_ids=list(data["recall_ids"]),
            recall_count=int(data["recall_count"]),
            query_count=int(data["unique_queries"]),
            recall_days=set(data["recall_days"]),
            score_sum=float(data["score_sum"]),
            first_seen=datetime.fromisoformat(data["first_seen"]),
            last_seen=datetime.fromisoformat(data["last_seen"]),
            promoted_on=data["promoted_on"],
            terms=term_set(data["text"]),
        )


def absorb(into: Candidate, other: Candidate) -> None:
    """Merge `other`'s provenance and evidence into `into` (same fact)."""
    for record_id in other.record_ids:
        if record_id not in into.record_ids:
            into.record_ids.append(record_id)
    if into.record_tier is None:
        into.record_tier = other.record_tier
    for ref in other.refs:
        if ref not in into.refs and len(into.refs) < REFS_KEPT:
            into.refs.append(ref)
    into.mention_ids |= other.mention_ids
    into.mention_days |= other.mention_days
    into.first_seen = min(into.first_seen, other.first_seen)
    into.last_seen = max(into.last_seen, other.last_seen)
    into.promoted_on = into.promoted_on or other.promoted_on


def rank_for_representative(candidate: Candidate) -> tuple[int, datetime]:
    """Which member of a duplicate group speaks for it: a long-term record, then a short-term record, then a
    daily-log sentence; the oldest first."""
    tier_rank = {Tier.LONG_TERM.value: 0, Tier.SHORT_TERM.value: 1}.get(candidate.record_tier or "", 2)
    return tier_rank, candidate.first_seen


# --------------------------------------------------------------------------- phase states


@dataclass
class Workload:
    recalls: int
    counts: dict[str, int]
    cold_start: bool
    top: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.top = max(self.counts.values(), default=0)

    def value(self, terms: Iterable[str]) -> float:
        if self.cold_start or not self.top:
            return 0.0
        counts = self.counts
        best = 0
        for term in terms:
            count = counts.get(term, 0)
            if count > best:
                best = count
        return best / self.top

    def summary(self, top: int) -> dict[str, Any]:
        total = sum(self.counts.values()) or 1
        ranked = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))[:top]
        return {
            "recalls": self.recalls,
            "cold_start": self.cold_start,
            "top_topics": [
                {"term": term, "count": count, "share": round(count / total, 4)} for term, count in ranked
            ],
        }


@dataclass
class LightState:
    candidates: list[Candidate]
    inputs: dict[str, Any]
    workload: Workload
    recall_term_days: dict[str, set[str]]
    """Query terms of the REM window's recalls → the days they were asked on."""
    recall_term_items: dict[str, int]
    """Query terms of the REM window's recalls → number of recalls."""
    rem_recalls: int
    materialized: list[dict[str, Any]] = field(default_factory=list)
    skipped_sentences: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class RemState:
    reinforcement: list[float]
    themes: list[dict[str, Any]]
    seconds: float = 0.0


@dataclass(slots=True)
class Signals:
    frequency: float
    relevance: float
    diversity: float
    recency: float
    consolidation: float
    conceptual: float

    def as_dict(self) -> dict[str, float]:
        return {name: round(getattr(self, name), 4) for name in _SIGNAL_NAMES}


_SIGNAL_NAMES = ("frequency", "relevance", "diversity", "recency", "consolidation", "conceptual")


@dataclass(slots=True)
class GateResult:
    name: str
    value: float
    threshold: float
    passed: bool

    def as_dict(self) -> dict[str, Any]:
        return {"value": round(self.value, 4), "threshold": self.threshold, "passed": self.passed}


@dataclass
class Outcome:
    """Everything decided about one candidate, as it appears in run.json."""

    candidate: Candidate
    signals: Signals
    base: float
    reinforcement: float
    workload: float
    total: float
    age_days: float
    gates: list[GateResult]
    salience: Salience = field(default_factory=lambda: Salience(0.0, {}, False))
    salient_route: bool = False
    """The content route applies (salience ≥ gates.salient): the recall gates do not block."""
    decision: str = "blocked"
    reason: str = ""
    memory_md: str | None = None
    record_id: str | None = None
    evicted: list[str] = field(default_factory=list)

    @property
    def blocking_gates(self) -> list[GateResult]:
        """The failed gates that block promotion: all of them on the recall route; on the content route only
        age and salience (the recall gates are waived)."""
        return [
            gate
            for gate in self.gates
            if not gate.passed and not (self.salient_route and gate.name in RECALL_GATES)
        ]

    @property
    def gates_passed(self) -> bool:
        return not self.blocking_gates

    @property
    def route(self) -> str:
        """recall | content | none: which route lets it through."""
        if self.blocking_gates:
            return "none"
        recall_ok = all(gate.passed for gate in self.gates if gate.name in RECALL_GATES)
        return "recall" if recall_ok else "content"

    def as_dict(self) -> dict[str, Any]:
        candidate = self.candidate
        return {
            "key": candidate.key,
            "text": candidate.text,
            "type": candidate.type.value,
            "kind": candidate.kind,
            "provenance": {
                "refs": candidate.refs[:_AUDIT_IDS],
                "record_ids": candidate.record_ids[:_AUDIT_IDS],
                "recall_ids": candidate.recall_ids[:_AUDIT_IDS],
            },
            "evidence": {
                "recall_count": candidate.recall_count,
                "unique_queries": candidate.unique_queries,
                "recall_days": len(candidate.recall_days),
                "mentions": candidate.mentions,
                "evidence_days": len(candidate.evidence_days),
                "concepts": concept_count(candidate.terms),
                "age_days": round(self.age_days, 3),
                "first_seen": candidate.first_seen.isoformat(),
                "last_seen": candidate.last_seen.isoformat(),
                "salience": self.salience.as_dict(),
                "route": self.route,
            },
            "signals": self.signals.as_dict(),
            "base": round(self.base, 4),
            "reinforcement": round(self.reinforcement, 4),
            "workload": round(self.workload, 4),
            "total": round(self.total, 4),
            "gates": {gate.name: gate.as_dict() for gate in self.gates},  # value, threshold, passed
            "decision": self.decision,
            "reason": self.reason,
            "memory_md": self.memory_md,
            "record_id": self.record_id,
            "evicted": self.evicted,
        }


# --------------------------------------------------------------------------- scoring (pure, linear)

RECALL_GATES = frozenset({"min_score", "min_recall_count", "min_unique_queries"})
"""The gates the content route (gates.salient) waives."""
_DURABLE_KINDS = frozenset({"preference", "decision", "project_state", "procedure", "correction"})


def score_candidates(
    candidates: Sequence[Candidate],
    reinforcement: Sequence[float],
    workload: Workload,
    config: DreamingConfig,
    as_of: datetime,
) -> list[Outcome]:
    """Six signals, bonuses, total and gates for every candidate, in one linear pass."""
    weights, gates = config.weights, config.gates
    outcomes: list[Outcome] = []
    lines = [split_speaker(candidate.text) for candidate in candidates]  # once per candidate
    speakers = speakers_of_lines(lines)
    for candidate, rem, line in zip(candidates, reinforcement, lines, strict=True):
        concepts = concept_count(candidate.terms)
        salient = salience(
            candidate.text,
            speakers,
            durable=candidate.kind in _DURABLE_KINDS,
            concepts=concepts - _speaker_concepts(line[0]),
            line=line,
        )
        signals, age_days = _signals(candidate, concepts, config, as_of)
        base = (
            weights.frequency * signals.frequency
            + weights.relevance * signals.relevance
            + weights.diversity * signals.diversity
            + weights.recency * signals.recency
            + weights.consolidation * signals.consolidation
            + weights.conceptual * signals.conceptual
        )
        work = workload.value(candidate.terms)
        total = _clamp(
            base
            + config.rem_bonus * rem
            + config.workload_bonus * work
            + config.salience_bonus * salient.value
        )
        results = _gate_results(candidate, total, age_days, salient.value, gates)
        route = gates.salient is not None and salient.value >= gates.salient
        outcomes.append(
            Outcome(candidate, signals, base, rem, work, total, age_days, results, salient, route)
        )
    return outcomes


def _signals(
    candidate: Candidate, concepts: float, config: DreamingConfig, as_of: datetime
) -> tuple[Signals, float]:
    """The six signals of a candidate, each in [0, 1], and its age in days."""
    frequency_norm = math.log1p(config.frequency_saturation)
    decay_rate = math.log(2) / config.recency_half_life_days
    consolidation_span = config.consolidation_days - 1
    signal_count = candidate.recall_count + candidate.mentions
    days_since_evidence = max(0.0, (as_of - candidate.last_seen).total_seconds() / 86400.0)
    age_days = max(0.0, (as_of - candidate.first_seen).total_seconds() / 86400.0)
    signals = Signals(
        frequency=_clamp(math.log1p(signal_count) / frequency_norm),
        relevance=_clamp(candidate.mean_recall_score),
        diversity=_clamp(
            max(candidate.unique_queries, len(candidate.recall_days)) / config.diversity_saturation
        ),
        recency=_clamp(math.exp(-decay_rate * days_since_evidence)),
        consolidation=_clamp((len(candidate.evidence_days) - 1) / consolidation_span),
        conceptual=_clamp(concepts / config.concept_saturation),
    )
    return signals, age_days


def _gate_results(
    candidate: Candidate, total: float, age_days: float, salience_value: float, gates: DeepGates
) -> list[GateResult]:
    return [
        GateResult("min_score", total, gates.min_score, total >= gates.min_score),
        GateResult(
            "min_recall_count",
            candidate.recall_count,
            gates.min_recall_count,
            candidate.recall_count >= gates.min_recall_count,
        ),
        GateResult(
            "min_unique_queries",
            candidate.unique_queries,
            gates.min_unique_queries,
            candidate.unique_queries >= gates.min_unique_queries,
        ),
        GateResult("max_age_days", age_days, gates.max_age_days, age_days <= gates.max_age_days),
        GateResult("min_salience", salience_value, gates.min_salience, salience_value >= gates.min_salience),
    ]


def _speaker_concepts(name: str | None) -> float:
    """Concepts of a transcript line's speaker prefix ("Caroline: …"), which the candidate's terms include;
    `name`: the speaker `split_speaker` found (None: no prefix)."""
    return 0.0 if name is None else concept_count(term_set(name))


def _clamp(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def rem_reinforcement(
    candidates: Sequence[Candidate],
    recall_term_days: dict[str, set[str]],
    recall_term_items: dict[str, int],
    recalls: int,
    config: DreamingConfig,
    as_of: datetime,
) -> RemState:
    """Recurring themes over the REM window and each candidate's reinforcement (see the module docstring)."""
    window = {(as_of.date() - timedelta(days=offset)).isoformat() for offset in range(config.rem_days)}
    term_days: dict[str, set[str]] = {term: set(days) for term, days in recall_term_days.items()}
    term_items: Counter[str] = Counter(recall_term_items)
    items = recalls
    for candidate in candidates:
        days = candidate.evidence_days & window
        if not days:
            continue
        items += 1
        for term in candidate.terms:
            term_items[term] += 1
            term_days.setdefault(term, set()).update(days)
    # With few items every shared word looks common: the share limit never goes below rem_min_items.
    max_items = max(config.rem_max_share * items, config.rem_min_items)
    strengths: dict[str, float] = {}
    for term, count in term_items.items():
        days = term_days.get(term, set())
        if count >= config.rem_min_items and len(days) >= config.rem_min_days and count <= max_items:
            strengths[term] = min(1.0, len(days) / config.rem_days)
    top = config.rem_top_themes
    reinforcement: list[float] = []
    for candidate in candidates:
        found = sorted((strengths[term] for term in candidate.terms if term in strengths), reverse=True)
        reinforcement.append(sum(found[:top]) / top)
    ranked = sorted(strengths.items(), key=lambda item: (-item[1], -term_items[item[0]], item[0]))[:20]
    themes = [
        {
            "term": term,
            "days": len(term_days[term]),
            "items": term_items[term],
            "strength": round(value, 4),
        }
        for term, value in ranked
    ]
    return RemState(reinforcement=reinforcement, themes=themes)


def workload_of(recalls: Sequence[RecallLogEntry], as_of: datetime, config: DreamingConfig) -> Workload:
    since = as_of - timedelta(days=config.workload_days)
    counts: Counter[str] = Counter()
    recent = 0
    for entry in recalls:
        if entry.at < since:
            continue
        recent += 1
        counts.update(set(entry.query_terms))
    cold = recent < config.workload_min_recalls
    return Workload(recalls=recent, counts=dict(counts.most_common(5000)), cold_start=cold)


def _strongest_parts(value: Salience) -> str:
    named = [name.replace("_", " ") for name, part in value.parts.items() if part >= 0.5]
    return ", ".join(named) or "concepts"


def gate_reason(gate: GateResult) -> str:
    if gate.name == "max_age_days":
        return f"age {gate.value:.1f} days > max_age_days {gate.threshold:g}"
    if gate.name == "min_score":
        return f"score {gate.value:.3f} < min_score {gate.threshold:g}"
    return f"{gate.name.removeprefix('min_')} {gate.value:g} < {gate.name} {gate.threshold:g}"


def promotion_reason(outcome: Outcome, record_only: str = "too long for a MEMORY.md entry") -> str:
    if outcome.route == "content":
        parts = [
            f"content route: salience {outcome.salience.value:.3f} ({_strongest_parts(outcome.salience)}) "
            f"with {outcome.candidate.recall_count} recalls"
        ]
    else:
        parts = [f"every gate passed (score {outcome.total:.3f}, salience {outcome.salience.value:.3f})"]
    if outcome.memory_md == "added":
        parts.append("appended to MEMORY.md")
    elif outcome.memory_md == "present":
        parts.append("already in MEMORY.md")
    else:
        parts.append(f"long-term record only ({record_only})")
    if outcome.evicted:
        parts.append(
            f"moved {len(outcome.evicted)} weaker promoted entr{'y' if len(outcome.evicted) == 1 else 'ies'} out of MEMORY.md into records"
        )
    return "; ".join(parts)


def entry_value(strength_now: float, salience_value: float) -> float:
    """What a promoted MEMORY.md entry is worth when the file is full: its record's strength, weighted by its
    content salience (½ + ½ × salience). A newcomer counts with the strength it is promoted with."""
    return strength_now * (0.5 + 0.5 * salience_value)


def promotion_order(outcome: Outcome) -> tuple[int, float, float, str]:
    """Recall-route candidates by total, then content-route ones by salience, then the blocked by total."""
    route = outcome.route
    if route == "content":
        return 1, -outcome.salience.value, -outcome.workload, outcome.candidate.key
    return (0 if route == "recall" else 2), -outcome.total, -outcome.workload, outcome.candidate.key
