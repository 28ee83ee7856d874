"""Remember: validate, scan, embed, find the neighbours, decide (`decide.py`, or the optional write judge under
the same never-lose rule) and commit the outcome (`write_ops.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from .. import retry
from ..errors import TooLarge, UnsafeContent, ValidationFailed
from ..ports import Embedding, IndexFilter, Vector
from ..records import MemoryRecord, MemoryType, Status, Tier, content_hash
from ..safety.fields import FieldFinding
from . import classify as classifier
from . import write_judge
from .context import MAX_CONTEXT_CHARS, batch_context, cut_context, name_kinds, turn_vectors
from .dates import dated_context
from .decide import Plan, decide
from .inputs import Decision, RememberInput, RememberResult
from .parts import MemoryParts
from .ports import Lexicon
from .write_ops import WriteOps

MAX_RETRIES = 8
"""Attempts of one remember against concurrent writers: each re-reads the neighbours (an update racing
another update of the same fact is decided again on what the other committed)."""
NEIGHBOURS = 8
HISTORY_STEPS = 3
"""How far back along a neighbour's chain of superseded values a new statement is compared (A → B → C → A)."""


class Writer:
    def __init__(self, parts: MemoryParts, judge: write_judge.JudgeModel | None) -> None:
        self.parts = parts
        self.ops = WriteOps(parts)
        self.judge = judge

    def remember(self, tenant: str, item: RememberInput, *, actor: str) -> RememberResult:
        """Apply the write discipline to one memory and return the decision. Raises on invalid or unsafe
        input (nothing is stored then)."""
        self.parts.validate(item)
        found = self.parts.first_finding(item)
        if found is not None and self.parts.must_reject(found.finding):
            raise UnsafeContent(
                f"memory refused by the safety scan: field '{found.field}' (rule '{found.finding.rule}'): "
                f"{found.finding.detail}",
                rule=found.finding.rule,
                field=found.field,
            )
        vector = self.parts.embed(tenant, [item.content])[0]
        return self._with_retry(tenant, item, vector, actor, found)

    def remember_batch(
        self, tenant: str, items: Sequence[RememberInput], *, actor: str
    ) -> list[RememberResult]:
        """Each item gets its own decision; a rejected item does not stop the others (items are independent
        memories, so all-or-nothing would lose good writes for one bad one)."""
        limit = self.parts.policy.max_batch
        if len(items) > limit:
            raise TooLarge(
                f"a batch holds at most {limit} memories; got {len(items)}. Split it.",
                limit=limit,
                got=len(items),
            )
        results: list[RememberResult | None] = [None] * len(items)
        accepted: list[tuple[int, RememberInput, FieldFinding | None]] = []
        for position, item in enumerate(items):
            try:
                self.parts.validate(item)
            except (ValidationFailed, TooLarge) as error:
                results[position] = RememberResult(Decision.REJECTED, error.message, None, rule=error.code)
                continue
            found = self.parts.first_finding(item)
            if found is not None and self.parts.must_reject(found.finding):
                why = (
                    f"refused by the safety scan: field '{found.field}' (rule '{found.finding.rule}'): "
                    f"{found.finding.detail}"
                )
                results[position] = RememberResult(Decision.REJECTED, why, None, rule=found.finding.rule)
                continue
            accepted.append((position, item, found))
        accepted = batch_context(accepted, self.parts.policy.keyword_context_turns)
        vectors = self.parts.embed(tenant, [i.content for _, i, _ in accepted]) if accepted else []
        vectors = turn_vectors(accepted, vectors, self.parts.policy.turn_context_weight)
        for (position, item, finding), vector in zip(accepted, vectors, strict=True):
            results[position] = self._with_retry(tenant, item, vector, actor, finding)
        return [result for result in results if result is not None]

    def _with_retry(
        self,
        tenant: str,
        item: RememberInput,
        vector: Vector,
        actor: str,
        found: FieldFinding | None,
    ) -> RememberResult:
        self.parts.ensure_tenant(tenant)
        return retry.on_conflict(lambda: self._once(tenant, item, vector, actor, found), attempts=MAX_RETRIES)

    def _once(
        self,
        tenant: str,
        item: RememberInput,
        vector: Vector,
        actor: str,
        found: FieldFinding | None,
    ) -> RememberResult:
        now = self.parts.now()
        record = self.new_record(tenant, item, now)
        if found is not None:
            rule = found.finding.rule
            record.status = Status.QUARANTINED
            record.status_reason = f"safety rule '{rule}' in field '{found.field}': {found.finding.detail}"
            self.parts.create(record, vector, actor)
            return RememberResult(
                Decision.QUARANTINED,
                f"stored in quarantine (never recalled) by safety rule '{rule}' in field '{found.field}'",
                record,
                rule=rule,
            )
        exact = self._exact_match(tenant, record)
        if exact is not None:
            return self.ops.merge(exact, item, actor, now, reason="exact duplicate (same content hash)")
        neighbours = [] if record.type is MemoryType.EPISODE else self._neighbours(tenant, item, vector)
        plan = decide(
            record.content,
            record.valid_from,
            record.type,
            neighbours,
            self.parts.thresholds,
            dated=item.valid_from is not None,
            lexicon=self.parts.lexicon,
        )
        active = [n for n, _ in neighbours if n.status is Status.ACTIVE]
        if active and self.judge is not None and self.parts.policy.judges(tenant):
            judged = write_judge.judge(
                self.judge, item.content, active, self.parts.policy.write_judge_max_tokens
            )
            if isinstance(judged, write_judge.Verdict):
                plan = write_judge.plan(judged, plan, record.content)
        return self._apply(plan, record, vector, item, actor, now)

    def _apply(
        self, plan: Plan, record: MemoryRecord, vector: Vector, item: RememberInput, actor: str, now: datetime
    ) -> RememberResult:
        ops, reason = self.ops, plan.reason
        if plan.action == "merge":
            return ops.merge(plan.targets[0], item, actor, now, reason=reason)
        if plan.action == "supersede":
            return ops.supersede(record, vector, plan.targets, actor, now, reason)
        if plan.action == "outdated":
            return ops.outdated(record, vector, plan.targets[0], actor, now, reason)
        if plan.action == "link":
            return ops.link(record, vector, plan.targets[0], actor, now, reason)
        if plan.action == "conflict":
            return ops.conflict(record, vector, plan.targets[0], actor, now, reason)
        if plan.action == "archive":
            return ops.archive_beside(record, vector, plan.targets[0], actor, now, reason)
        return ops.add(record, vector, actor, reason)

    def new_record(self, tenant: str, item: RememberInput, now: datetime) -> MemoryRecord:
        memory_type = item.type or classifier.classify(item.content).type
        tier, score, half_life = self._tier_and_weight(memory_type)
        return MemoryRecord(
            tenant=tenant,
            namespace=item.namespace,
            type=memory_type,
            content=item.content.strip(),
            score=item.score if item.score is not None else score,
            half_life_hours=item.half_life_hours or half_life,
            created_at=now,
            updated_at=now,
            last_access_at=now,
            source=item.source,
            sources=[item.source],
            status=Status.ACTIVE,
            tier=item.tier or tier,
            valid_from=item.valid_from or now,
            recorded_at=now,
            content_hash=content_hash(item.content),
            context=_keyword_context(item, self.parts.lexicon),
            embedding_model=self.parts.embedder_of(tenant).identity.key,
            metadata=dict(item.metadata),
        )

    def _tier_and_weight(self, memory_type: MemoryType) -> tuple[Tier, float, float]:
        policy = self.parts.policy
        if memory_type is MemoryType.TEMPORARY:
            return Tier.SHORT_TERM, policy.temporary_score, policy.temporary_half_life_hours
        if memory_type in (MemoryType.USER_PREFERENCE, MemoryType.CORRECTION):
            return Tier.LONG_TERM, policy.preference_score, policy.preference_half_life_hours
        return Tier.LONG_TERM, policy.default_score, policy.default_half_life_hours

    def _exact_match(self, tenant: str, record: MemoryRecord) -> MemoryRecord | None:
        # A corrected or superseded version is never brought back beside its successor: writing its text
        # again is a new statement, weighed against the current version like any other write.
        for existing in self.parts.store.find_by_hash(tenant, record.namespace, record.content_hash):
            if (
                existing.status in (Status.ACTIVE, Status.PENDING, Status.ARCHIVED)
                and not existing.superseded_by
            ):
                return existing
        return None

    def _neighbours(
        self, tenant: str, item: RememberInput, vector: Vector
    ) -> list[tuple[MemoryRecord, float]]:
        """Existing records close enough to be the same statement or an earlier value of it: the vector
        neighbours above the relation threshold plus the best keyword matches (a replacement such as "switch
        from A to C" shares words with "use A" even when a small embedder misses it), most similar first."""
        where = IndexFilter(
            namespaces=(item.namespace,), statuses=(Status.ACTIVE, Status.PENDING, Status.ARCHIVED)
        )
        identity = (
            vector.identity if isinstance(vector, Embedding) else self.parts.embedder_of(tenant).identity
        )
        index = self.parts.index
        vector_hits = index.query_vector(tenant, identity, vector, k=NEIGHBOURS, where=where)
        keyword_hits = index.query_keyword(tenant, item.content, k=NEIGHBOURS // 2, where=where)
        similarity = {hit.record_id: hit.score for hit in vector_hits}
        floor = self.parts.thresholds.contradiction
        candidate_ids = [hit.record_id for hit in vector_hits if hit.score >= floor]
        candidate_ids += [hit.record_id for hit in keyword_hits if hit.record_id not in candidate_ids]
        records = self.parts.store.get_many(tenant, candidate_ids)
        ranked = [(record, similarity.get(record.id, 0.0)) for record in records]
        ranked.sort(key=lambda pair: -pair[1])
        return ranked + [(record, 0.0) for record in self._earlier_values(tenant, records)]

    def _earlier_values(self, tenant: str, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """The records the neighbours superseded, a few steps back along each chain: a return to an earlier
        value (A → B → A) updates B only if A is seen (`decide._returns`). Superseded, they are never merged
        into nor updated themselves."""
        known = {record.id for record in records}
        frontier = [r.supersedes for r in records if r.supersedes and r.supersedes not in known]
        found: list[MemoryRecord] = []
        for _ in range(HISTORY_STEPS):
            if not frontier:
                break
            earlier = self.parts.store.get_many(tenant, frontier)
            found += earlier
            known |= {record.id for record in earlier}
            frontier = [r.supersedes for r in earlier if r.supersedes and r.supersedes not in known]
        return found


def _keyword_context(item: RememberInput, lexicon: Lexicon | None) -> str:
    """The stored keyword context: the caller's (cut as always), with the words of the dates its content
    speaks of and the kinds of the places it names (`context.name_kinds`) put first, each only where it fits
    whole, so that neither ever pushes out what the caller gave."""
    given = cut_context(item.context or "")
    kinds = name_kinds(item.content, lexicon)
    named = f"{kinds} {given}".strip() if kinds else given
    if len(named) > MAX_CONTEXT_CHARS:
        named = given
    dated = dated_context(named, item.content, item.metadata, item.valid_from)
    return dated if len(dated) <= MAX_CONTEXT_CHARS else named
