"""Configuration of the dreaming sweep (DESIGN §3 "Deep-phase weights"): every weight, gate, window and limit,
documented, with the design's numbers as defaults. `settings.py` can load it from `AGENT_MEMORY_DREAMING`
(JSON); `DreamingConfig.model_json_schema()` is its reference."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from ..model import Model
from ..records import MemoryType
from .extraction import STRATEGIES

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
PositiveDays = Annotated[float, Field(gt=0, le=3650)]


class _Frozen(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeepWeights(_Frozen):
    """Weights of the six Deep signals. total = Σ weight × signal (each signal in [0, 1]). They must sum to at
    most 1 so that `min_score` keeps its meaning; the defaults sum to exactly 1."""

    frequency: Unit = 0.24
    """ln(1 + signals) / ln(1 + frequency_saturation), signals = recalls + distinct mentions."""
    relevance: Unit = 0.30
    """Mean match strength of the candidate's records over its recalls (0 when never recalled): per recall the
    record's keyword and vector evidence at equal weights, scaled by the question's focus, in [0, 1], recorded
    at recall time (`recall.ScoredRecord.match`). Free of the fusion's mode and weights, the priors and a
    reranker, so retuning the fusion does not move `min_score`'s verdicts."""
    diversity: Unit = 0.15
    """max(unique queries, recall days) / diversity_saturation."""
    recency: Unit = 0.15
    """exp(−ln 2 · days since the newest evidence / recency_half_life_days)."""
    consolidation: Unit = 0.10
    """(distinct days with evidence − 1) / (consolidation_days − 1): recalled or noted on separate days."""
    conceptual: Unit = 0.06
    """concepts / concept_saturation: distinct content words (CJK bigrams count ½)."""

    @model_validator(mode="after")
    def _sum(self) -> DeepWeights:
        total = (
            self.frequency
            + self.relevance
            + self.diversity
            + self.recency
            + self.consolidation
            + self.conceptual
        )
        if total <= 0 or total > 1.0 + 1e-9:
            raise ValueError(
                f"the six Deep weights must sum to more than 0 and at most 1; they sum to {total:g}"
            )
        return self


class DeepGates(_Frozen):
    """A candidate is promoted only when every gate passes."""

    min_score: Unit = 0.8
    """total (six signals plus the bounded REM and workload bonuses) ≥ this."""
    min_recall_count: Annotated[int, Field(ge=0)] = 3
    """Recalls that returned one of the candidate's records ≥ this."""
    min_unique_queries: Annotated[int, Field(ge=0)] = 3
    """Distinct queries (by query hash) among those recalls ≥ this."""
    max_age_days: PositiveDays = 30.0
    """Days since the candidate first appeared (daily-log day, record creation, or first recall of a recalled
    long-term record) ≤ this: stale candidates had their chance and are left to decay."""
    min_salience: Unit = 0.12
    """Content salience (`salience.py`: concepts, entities, numbers and dates, first-person facts and plans,
    preferences, decisions, the write discipline's cue) ≥ this, on every route: chit-chat that many queries
    happened to match ("Maria: Sure thing, John.") is not promoted however often it was recalled."""
    salient: Unit | None = 0.6
    """The content route: a candidate whose salience reaches this passes without the recall gates (min_score,
    min_recall_count, min_unique_queries); age still applies. Promotion must not depend on the questions that
    happened to be asked so far. None turns the route off (recall evidence only)."""


class DreamingConfig(_Frozen):
    weights: DeepWeights = DeepWeights()
    gates: DeepGates = DeepGates()

    # ---- Deep signal shapes
    recency_half_life_days: PositiveDays = 14.0
    frequency_saturation: Annotated[int, Field(ge=1, le=1000)] = 10
    diversity_saturation: Annotated[int, Field(ge=1, le=1000)] = 5
    consolidation_days: Annotated[int, Field(ge=2, le=365)] = 3
    concept_saturation: Annotated[int, Field(ge=1, le=100)] = 6

    # ---- Light
    daily_lookback_days: Annotated[int, Field(ge=1, le=90)] = 7
    """Daily logs of this many days (ending on the sweep's day) are read."""
    recall_window_days: Annotated[int, Field(ge=1, le=365)] = 30
    """Recall-log window for the recall signals (frequency, relevance, diversity, consolidation)."""
    include_recalled_long_term: bool = True
    """Recalled long-term records not yet in MEMORY.md are candidates too (for MEMORY.md only)."""
    dedup_similarity: Unit = 0.9
    """Candidates at or above this similarity are one candidate."""
    dedup_method: Literal["embedding", "lexical"] = "embedding"
    """embedding: the service's embedder verifies lexically close pairs; lexical: term-set cosine only."""
    dedup_lexical_floor: Unit = 0.5
    """With `embedding`, only pairs whose term-set cosine reaches this are embedded and verified."""
    dedup_max_embedded: Annotated[int, Field(ge=0, le=1_000_000)] = 5000
    """At most this many candidates are embedded per sweep (one model call each with Bedrock); further pairs,
    the lexically least close, are decided by term-set cosine."""
    extractor: Literal["rule", "llm"] = "rule"
    """rule: offline English/Chinese rules. llm: the strategies below through the wired text model."""
    llm_strategies: tuple[str, ...] = STRATEGIES
    llm_prompts: dict[str, str] = Field(default_factory=dict)
    """Overrides of extraction.DEFAULT_PROMPTS per strategy; each must contain {log}."""
    materialize: bool = True
    """Write daily-log candidates as short-term records (tier short_term, source = file and line range) so
    that recalls can reinforce them on later days."""
    max_materialize: Annotated[int, Field(ge=0, le=100_000)] = 200
    """Short-term records written per sweep at most (the rest follow on later sweeps)."""
    max_candidates: Annotated[int, Field(ge=1, le=1_000_000)] = 200_000
    """Candidates kept per sweep; beyond it the least evidenced are dropped (reported)."""
    never_promote_types: tuple[MemoryType, ...] = (MemoryType.TEMPORARY,)

    # ---- REM
    rem_days: Annotated[int, Field(ge=1, le=90)] = 7
    rem_min_items: Annotated[int, Field(ge=2)] = 3
    """A theme is a term found in at least this many candidates and recall queries …"""
    rem_min_days: Annotated[int, Field(ge=1)] = 2
    """… on at least this many distinct days of the REM window …"""
    rem_max_share: Unit = 0.5
    """… and in at most max(this share × items, rem_min_items) of them (a term in everything is not a theme)."""
    rem_top_themes: Annotated[int, Field(ge=1, le=20)] = 3
    """reinforcement = mean strength of the candidate's strongest this-many themes (missing ones count 0)."""
    rem_bonus: Unit = 0.05
    """total += rem_bonus × reinforcement (bounded; 0 turns REM off)."""

    # ---- workload feedback
    workload_days: Annotated[int, Field(ge=1, le=365)] = 14
    workload_min_recalls: Annotated[int, Field(ge=0)] = 20
    """Fewer recalls than this in the window is a cold start: no workload bonus, defaults only."""
    workload_bonus: Unit = 0.05
    """total += workload_bonus × (count of the hottest topic the candidate mentions / count of the hottest
    topic overall)."""
    workload_top_topics: Annotated[int, Field(ge=1, le=100)] = 10

    # ---- promotion
    max_promotions: Annotated[int, Field(ge=0, le=1000)] = 10
    max_salient_promotions: Annotated[int, Field(ge=0, le=1000)] = 5
    """Of those, at most this many per sweep through the content route (gates.salient), the most salient first."""
    salience_bonus: Unit = 0.05
    """total += salience_bonus × salience (bounded, like REM and workload; 0 turns it off)."""
    memory_entry_max_chars: Annotated[int, Field(ge=20, le=100_000)] = 400
    """Longer candidates are promoted to a long-term record only, not into MEMORY.md."""
    promoted_score: Unit = 0.8
    """A promoted record's score is at least this."""
    promoted_half_life_hours: Annotated[float, Field(gt=0)] = 24.0 * 30
    """A promoted record's half-life is at least this."""

    # ---- maintenance
    forget: bool = True
    """Run the forgetting job (MemoryService.archive_decayed) for the namespace after Deep."""
    compaction_weekday: Annotated[int, Field(ge=0, le=6)] | None = 6
    """Weekday (Monday 0 … Sunday 6) of the sweep day on which compaction runs; None: never automatically."""
    compaction_similarity: Unit | None = None
    """None: the embedder's near-duplicate threshold (MemoryPolicy similarity profile)."""

    # ---- operations
    lock_ttl_seconds: Annotated[int, Field(ge=60, le=86_400)] = 900
    """Lease of the per-namespace sweep lock; a crashed sweep blocks others at most this long."""
    report_top: Annotated[int, Field(ge=0, le=10_000)] = 50
    """Candidates that were not promoted listed in REPORT.md (strongest first)."""
    run_json_candidates: Annotated[int, Field(ge=0, le=1_000_000)] = 2000
    """Candidates listed in full in run.json: every one decided other than `blocked` plus the strongest
    blocked ones up to this many; the rest are counted per reason (keeps run.json ≤ 10 MiB at 100k)."""
    keep_full_runs: Annotated[int, Field(ge=1, le=3650)] = 14
    """Retention of `.dreams/<day>/`: the newest this-many sweep days keep every file; older days keep only
    `done.json` and a compact `summary.json` (promotions, counts, timings)."""
    intermediate_part_size: Annotated[int, Field(ge=100, le=100_000)] = 5000
    """Candidates per intermediate file between the Step Functions tasks (keeps each file small)."""
