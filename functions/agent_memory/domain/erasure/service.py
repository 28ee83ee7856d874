"""Plan, execute, verify (issue 18).

`plan` resolves the target to the exact set of records (a memory with its lineage, a namespace, a subject, a
tenant), asks every store what it holds of them and stores the plan. `execute` takes the plan id and a reason,
runs the steps in order and records each one when it is done, so a crash half-way leaves a plan that the next
`execute` resumes (every step is idempotent: erasing what is already gone erases nothing). Then one tombstone
change entry per purged record (who, when, why, content hash; never the content) replaces the record's change
log, every store is searched again for the purged ids and texts, and the report (zero remaining copies, or what
is left per store) is kept with the plan, whose texts are dropped: only their hashes stay."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable, Sequence

from .. import memo, retry
from ..errors import ConcurrentModification, Conflict, NotFound, ValidationFailed
from ..ports import Clock, Embedder, IndexFilter, RecordStore, SearchIndex
from ..records import ChangeEntry, ChangeOperation, MemoryRecord, Status, content_hash, is_valid_namespace
from .files import MemoryFileLines
from .index import IndexEntries, IndexProbe
from .mentions import RecordMentions, all_records
from .model import (
    EraseScope,
    PurgeKind,
    PurgePlan,
    PurgeState,
    PurgeTarget,
    Retention,
    StoreFinding,
    Verification,
    hashed_ref,
    new_plan_id,
    safe_ref,
)
from .ports import ContentStore, ProcessCaches, PurgeLauncher, PurgeLedger, RecordEraser, Sealer

PAGE = 200
HYBRID_K = 20
TOMBSTONE_BATCH = 25
"""Change entries per commit (a DynamoDB transaction holds 100 items)."""
MAX_REGROWTHS = 5
"""Times execute adds records written to the target meanwhile before it reports `incomplete` instead (writes
that keep arriving: stop the writer, then execute again)."""
INLINE_RECORD_LIMIT = 2000
"""Largest purge (records) `execute` runs inside one API call; larger plans need the CLI or the workflow."""


class PurgeNotReady(Conflict):
    code = "purge_not_ready"


class PurgeInProgress(Conflict):
    """A write to the scope of a purge that is executing (409): retry once the purge has finished."""

    code = "purge_in_progress"


class ErasureService:
    def __init__(
        self,
        *,
        records: RecordStore,
        record_eraser: RecordEraser,
        index: SearchIndex,
        embedder_of: Callable[[str], Embedder],
        files: MemoryFileLines,
        stores: Sequence[ContentStore],
        ledger: PurgeLedger,
        clock: Clock,
        inline_record_limit: int = INLINE_RECORD_LIMIT,
        index_probe: IndexProbe | None = None,
        launcher: PurgeLauncher | None = None,
        finalizers: Sequence[ContentStore] = (),
        sealers: Sequence[Sealer] = (),
        retention: Sequence[Retention] = (),
        caches: Sequence[ProcessCaches] = (),
    ) -> None:
        self._records = records
        self._record_eraser = record_eraser
        self._index = IndexEntries(index, embedder_of, index_probe)
        self._raw_index = index
        self._embedder_of = embedder_of
        self._files = files
        self._stores = list(stores)
        self._ledger = ledger
        self._clock = clock
        self.inline_record_limit = inline_record_limit
        self.launcher = launcher
        self._mentions = RecordMentions(records, index, embedder_of)
        self._finalizers = list(finalizers)
        self._sealers = list(sealers)
        self._retention = list(retention)
        self._caches = list(caches)

    # ------------------------------------------------------------------ steps

    def steps(self) -> list[ContentStore]:
        """In order: sessions first (no running session reads purged content again), records last (the
        plan's record ids stay resolvable while the other stores are erased)."""
        return [
            *self._stores,
            self._mentions,
            self._files,
            self._index,
            self._record_eraser,
            *self._finalizers,
        ]

    # ------------------------------------------------------------------ plan

    def plan(self, tenant: str, target: PurgeTarget, *, actor: str) -> PurgePlan:
        records, namespaces, candidates = self._resolve(tenant, target)
        needles = list(
            dict.fromkeys([r.content for r in records] + ([target.subject] if target.subject else []))
        )
        plan = PurgePlan(
            id=new_plan_id(),
            tenant=tenant,
            target=target,
            planned_by=actor,
            planned_at=self._clock.now(),
            record_ids=[r.id for r in records],
            record_namespaces={r.id: r.namespace for r in records},
            record_hashes={r.id: r.content_hash or content_hash(r.content) for r in records},
            namespaces=namespaces,
            content_hashes=sorted({content_hash(text) for text in needles}),
            needles=needles,
            candidates=candidates,
            retained=list(self._retention),
        )
        scope = plan.scope()
        plan.plan = [_safe(scope, getattr(store, "planned", store.find)(scope)) for store in self.steps()]
        self._ledger.save(plan, expected_version=None)
        return plan

    def _resolve(self, tenant: str, target: PurgeTarget) -> tuple[list[MemoryRecord], list[str], list[str]]:
        kind = target.kind
        if kind is PurgeKind.MEMORY:
            if not target.record_id:
                raise ValidationFailed("a memory purge names `record_id`")
            first = self._records.get(tenant, target.record_id)
            if first is None:
                raise NotFound(f"memory {target.record_id} not found", record_id=target.record_id)
            records = self._lineage(tenant, first)
            return records, sorted({r.namespace for r in records}), []
        if kind is PurgeKind.NAMESPACE:
            if not target.namespace or not is_valid_namespace(target.namespace):
                raise ValidationFailed("a namespace purge names a valid `namespace`")
            return self._all(tenant, target.namespace), [target.namespace], []
        namespaces = sorted(set(self._record_eraser.namespaces(tenant)) | set(self._files.namespaces(tenant)))
        if kind is PurgeKind.TENANT:
            records = [r for namespace in namespaces for r in self._all(tenant, namespace)]
            return records, namespaces, []
        subject = (target.subject or "").strip()
        if len(subject) < 3:
            raise ValidationFailed(
                "a subject purge names `subject`: an id or a text of at least 3 characters"
            )
        probe = EraseScope(tenant, kind, (), (subject,), ())
        found = [
            r
            for namespace in namespaces
            for r in self._all(tenant, namespace)
            if probe.names_record(r.model_dump(mode="json"))
        ]
        found_ids = {r.id for r in found}
        candidates = self._hybrid(tenant, subject, namespaces) - found_ids
        return found, namespaces, sorted(candidates)

    def _all(self, tenant: str, namespace: str) -> list[MemoryRecord]:
        return all_records(self._records, tenant, namespace)

    def _lineage(self, tenant: str, first: MemoryRecord) -> list[MemoryRecord]:
        """The record, the versions it superseded or was corrected from and those that superseded or
        corrected it (transitively), and every record of its namespaces with the same content hash (merged
        or re-written duplicates carrying its content)."""
        by_id: dict[str, MemoryRecord] = {}
        neighbours: dict[str, set[str]] = {}
        scanned: set[str] = set()
        queue = [first]
        while queue:
            record = queue.pop()
            if record.id in by_id:
                continue
            by_id[record.id] = record
            if record.namespace not in scanned:
                scanned.add(record.namespace)
                for other in self._all(tenant, record.namespace):
                    for link in (other.supersedes, other.superseded_by, other.corrected_from):
                        if link:
                            neighbours.setdefault(link, set()).add(other.id)
                            neighbours.setdefault(other.id, set()).add(link)
            linked = {record.supersedes, record.superseded_by, record.corrected_from} - {None}
            linked |= neighbours.get(record.id, set())
            linked |= {
                r.id for r in self._records.find_by_hash(tenant, record.namespace, record.content_hash)
            }
            for record_id in linked - by_id.keys():
                found = self._records.get(tenant, str(record_id))
                if found is not None:
                    queue.append(found)
            for known in list(neighbours.get(record.id, set()) - by_id.keys()):
                found = self._records.get(tenant, known)
                if found is not None:
                    queue.append(found)
        return sorted(by_id.values(), key=lambda r: (r.created_at, r.id))

    def _hybrid(self, tenant: str, subject: str, namespaces: list[str]) -> set[str]:
        if not namespaces:
            return set()
        where = IndexFilter(namespaces=tuple(namespaces), statuses=tuple(Status))
        hits = self._raw_index.query_keyword(tenant, subject, k=HYBRID_K, where=where)
        embedder = self._embedder_of(tenant)
        hits += self._raw_index.query_vector(
            tenant, embedder.identity, embedder.embed_query(subject), k=HYBRID_K, where=where
        )
        return {hit.record_id for hit in hits}

    # ------------------------------------------------------------------ fence

    def fence(self, tenant: str, *, namespaces: Sequence[str] = (), record_id: str | None = None) -> None:
        """Refuse (`PurgeInProgress`, 409) a write to the scope of an executing purge: anything of a tenant
        purge; the namespace of a namespace purge; a purged record (a correction, archive, patch) or the
        namespaces of a memory purge. A subject purge fences its records only (its namespaces are all the
        tenant's): a write naming the subject meanwhile is caught by the re-plan."""
        for plan in self._ledger.executing(tenant):
            kind = plan.target.kind
            hit = (
                kind is PurgeKind.TENANT
                or (record_id is not None and record_id in plan.record_ids)
                or (kind is PurgeKind.NAMESPACE and bool(set(namespaces) & {plan.target.namespace}))
                or (kind is PurgeKind.MEMORY and bool(set(namespaces) & set(plan.namespaces)))
            )
            if hit:
                raise PurgeInProgress(
                    f"this write touches what purge {plan.id} is erasing; retry once "
                    f"GET /v1/admin/purges/{plan.id} is no longer `executing`",
                    plan_id=plan.id,
                )

    # ------------------------------------------------------------------ execute

    def status(self, tenant: str, plan_id: str) -> PurgePlan:
        plan = self._ledger.get(tenant, plan_id)
        if plan is None:
            raise NotFound(f"purge plan {plan_id} not found", plan_id=plan_id)
        return plan

    def list(self, tenant: str, limit: int = 50) -> list[PurgePlan]:
        return self._ledger.list(tenant, limit)

    def execute(
        self,
        tenant: str,
        plan_id: str,
        *,
        reason: str,
        actor: str,
        inline: bool = True,
        background: PurgeLauncher | None = None,
    ) -> PurgePlan:
        """`background`: run the steps there whatever the plan's size (the local server's job worker)."""
        plan = self.status(tenant, plan_id)
        if not reason.strip():
            raise ValidationFailed("a purge needs a `reason` (kept in the tombstone)")
        if plan.state is PurgeState.COMPLETED:
            return plan  # idempotent: the same answer, nothing erased twice
        launcher = background or self.launcher
        large = background is not None or (inline and len(plan.record_ids) > self.inline_record_limit)
        if large and launcher is None:
            raise PurgeNotReady(
                f"plan {plan_id} purges {len(plan.record_ids)} records; the API runs at most "
                f"{self.inline_record_limit} in one call and has no purge workflow yet: purge by namespace or "
                "subject in smaller plans (locally, `agent-memory purge execute` has no limit)",
                plan_id=plan_id,
                records=len(plan.record_ids),
                limit=self.inline_record_limit,
            )
        if plan.state is PurgeState.INCOMPLETE:
            plan.done = []  # the verification found copies: run every step again
        if plan.state is not PurgeState.EXECUTING:
            self._grow(plan)  # lineage and writes since the plan: purged too
            plan.state = PurgeState.EXECUTING
            plan.reason = reason.strip()[:500]
            plan.executed_by = actor
            plan.executed_at = self._clock.now()
            plan = self._save(plan)
        if large and launcher is not None:
            # The workflow runs the steps (`run_step`), with retries; `status` shows its progress. Its end
            # cannot reach this process: what this process keeps of the tenant goes now.
            self._drop_cached(plan)
            return self._note_execution(tenant, plan.id, launcher.start(tenant, plan.id))
        while plan.state is PurgeState.EXECUTING:
            plan = self.run_step(tenant, plan.id)
        return plan

    def _note_execution(self, tenant: str, plan_id: str, execution: str) -> PurgePlan:
        """The plan with its `execution` recorded. The job or workflow may already have saved steps (a worker
        can start before `start` returns), so the id goes on the plan as it now stands, re-read after each
        lost write; the purge itself never waits on this note. Each lost write is a step (or the verification)
        the worker saved, so the worker can win at most that many times: the note gets one attempt more than
        that (a worker running every step while the note retries made the request fail with a 409)."""
        races = len(self.steps()) + 1  # every step, then the verification
        policy = dataclasses.replace(retry.CONCURRENT_WRITE, max_attempts=races + 1)
        run = retry.Retry(policy).attempts()
        for _ in run:
            plan = self.status(tenant, plan_id)
            if plan.execution == execution:
                return plan
            plan.execution = execution
            try:
                return self._save(plan)
            except ConcurrentModification:
                continue
        raise ConcurrentModification(
            f"purge plan {plan_id} kept changing while its execution {execution} was noted on it; the purge "
            "runs: read its status",
            plan_id=plan_id,
            execution=execution,
        )

    def run_step(self, tenant: str, plan_id: str) -> PurgePlan:
        """One step of an executing plan (the next one not done), or, when every step is done, the
        verification. A workflow calls it until the plan is no longer `executing`; a retried call repeats an
        idempotent step."""
        plan = self.status(tenant, plan_id)
        if plan.state is not PurgeState.EXECUTING:
            return plan
        step = next((s for s in self.steps() if s.name not in plan.done), None)
        if step is None:
            return self.verify(tenant, plan_id)
        step.erase(plan.scope(), actor=plan.executed_by, reason=plan.reason, plan_id=plan.id)
        if step is self._record_eraser:
            self._tombstones(plan)
        plan.done.append(step.name)
        return self._save(plan)

    def _tombstones(self, plan: PurgePlan) -> None:
        """One change entry per purged record (not for a tenant purge: its change log is gone with it; the
        plan is the tombstone)."""
        if plan.target.kind is PurgeKind.TENANT:
            return
        at = self._clock.now()
        entries = [
            ChangeEntry(
                tenant=plan.tenant,
                namespace=namespace,
                record_id=record_id,
                operation=ChangeOperation.PURGE,
                actor=plan.executed_by,
                at=at,
                reason=plan.reason,
                after={"purge_plan": plan.id, "content_hash": plan.record_hashes.get(record_id)},
            )
            for record_id, namespace in plan.record_namespaces.items()
        ]
        for start in range(0, len(entries), TOMBSTONE_BATCH):
            self._records.commit([], entries[start : start + TOMBSTONE_BATCH])

    # ------------------------------------------------------------------ verify

    def verify(self, tenant: str, plan_id: str) -> PurgePlan:
        try:
            return self._verify(tenant, plan_id)
        finally:
            self._forget_cached(tenant, plan_id)

    def _forget_cached(self, tenant: str, plan_id: str) -> None:
        """The end of a purge in this process: the request-scoped memos emptied (what this request derived
        from the purged texts, the verification's own reads included), and the cross-request caches'
        entries of the tenant (of the plan's namespaces, unless the whole tenant was purged) dropped."""
        memo.clear_all()
        plan = self._ledger.get(tenant, plan_id) if self._caches else None
        if plan is not None:
            self._drop_cached(plan)

    def _drop_cached(self, plan: PurgePlan) -> None:
        namespaces = () if plan.target.kind is PurgeKind.TENANT else tuple(plan.namespaces)
        for caches in self._caches:
            caches.forget_cached(plan.tenant, namespaces)

    def _verify(self, tenant: str, plan_id: str) -> PurgePlan:
        plan = self.status(tenant, plan_id)
        if plan.state is PurgeState.PLANNED:
            raise PurgeNotReady(f"plan {plan_id} has not been executed", plan_id=plan_id)
        if plan.state is PurgeState.COMPLETED:
            return plan
        if self._grow(plan) and plan.regrown <= MAX_REGROWTHS:
            plan.done = []  # records written meanwhile: every step again, then verify again
            return self._save(plan)
        scope = plan.scope()
        findings = [_safe(scope, step.find(scope)) for step in self.steps()]
        if plan.regrown > MAX_REGROWTHS:
            findings.append(StoreFinding(store="writes", items=1, refs=["records still being written"]))
        remaining = sum(f.items for f in findings)
        unreachable = sum(len(f.unreachable) for f in findings)
        plan.verification = Verification(
            at=self._clock.now(), remaining=remaining, unreachable=unreachable, stores=findings
        )
        if remaining == 0 and unreachable == 0 and len(plan.done) == len(self.steps()):
            return self._complete(plan, scope)
        plan.state = PurgeState.INCOMPLETE
        return self._save(plan)

    def _complete(self, plan: PurgePlan, scope: EraseScope) -> PurgePlan:
        """Drop the texts from the plan, then let the sealers (the ledger's own database) make sure the
        texts the plan held while executing are gone from their bytes too; else `incomplete`."""
        verification = plan.verification
        assert verification is not None
        kept = (plan.needles, plan.target)
        plan.state = PurgeState.COMPLETED
        plan.completed_at = verification.at
        plan.needles = []  # only the hashes stay (the subject's among them)
        plan.target = plan.target.model_copy(update={"subject": None})
        plan = self._save(plan)
        sealed = [_safe(scope, sealer.seal(scope)) for sealer in self._sealers]
        # A write acknowledged while the verification ran: found now, it makes the purge incomplete.
        probe = plan.model_copy(update={"needles": kept[0], "target": kept[1]})
        late = sorted(r.id for r in self._target_now(probe) if r.id not in set(plan.record_ids))
        if late:
            sealed.append(StoreFinding(store="writes", items=len(late), refs=late))
        if not any(f.items for f in sealed):
            return plan
        plan.needles, plan.target = kept
        plan.state = PurgeState.INCOMPLETE
        plan.completed_at = None
        verification.stores.extend(sealed)
        verification.remaining += sum(f.items for f in sealed)
        return self._save(plan)

    # ------------------------------------------------------------------ re-plan

    def _grow(self, plan: PurgePlan) -> bool:
        """Add to the plan the records of its target it does not hold yet: successors or versions linked to a
        purged record (a correction made after the plan), and records written to the target since. True when
        any was added (their texts become needles too)."""
        known = set(plan.record_ids)
        found = [r for r in self._target_now(plan) if r.id not in known]
        if not found:
            return False
        for record in found:
            plan.record_ids.append(record.id)
            plan.record_namespaces[record.id] = record.namespace
            plan.record_hashes[record.id] = record.content_hash or content_hash(record.content)
            if record.content not in plan.needles:
                plan.needles.append(record.content)
            if record.namespace not in plan.namespaces:
                plan.namespaces.append(record.namespace)
        plan.content_hashes = sorted(set(plan.content_hashes) | {content_hash(n) for n in plan.needles})
        plan.regrown += 1
        return True

    def _target_now(self, plan: PurgePlan) -> builtins.list[MemoryRecord]:
        tenant, target = plan.tenant, plan.target
        if target.kind is PurgeKind.NAMESPACE:
            current = self._all(tenant, plan.namespaces[0])
        elif target.kind is PurgeKind.TENANT:
            namespaces = set(self._record_eraser.namespaces(tenant)) | set(self._files.namespaces(tenant))
            current = [r for ns in sorted(namespaces) for r in self._all(tenant, ns)]
        else:
            current = []
            if target.kind is PurgeKind.SUBJECT and plan.needles and target.subject:
                current = self._resolve(tenant, target)[0]
        return current + self._linked(plan)

    def _linked(self, plan: PurgePlan) -> builtins.list[MemoryRecord]:
        """Records of the plan's namespaces that link to a purged record (transitively) or carry the content
        hash of one: a version written after the plan."""
        ids = set(plan.record_ids)
        hashes = set(plan.record_hashes.values())
        pool = [r for ns in plan.namespaces for r in self._all(plan.tenant, ns)]
        linked: dict[str, MemoryRecord] = {}
        grew = True
        while grew:
            grew = False
            for record in pool:
                if record.id in ids or record.id in linked:
                    continue
                links = {record.supersedes, record.superseded_by, record.corrected_from}
                if links & (ids | linked.keys()) or (record.content_hash and record.content_hash in hashes):
                    linked[record.id] = record
                    grew = True
        return list(linked.values())

    def _save(self, plan: PurgePlan) -> PurgePlan:
        expected = plan.version
        plan.version = expected + 1
        self._ledger.save(plan, expected_version=expected)
        return plan


NAMED_BY_USERS = frozenset({"files", "snapshots", "raw_bytes"})
"""Stores whose references are names a user chose (file paths with skill names, snapshot names)."""


def _safe(scope: EraseScope, finding: StoreFinding) -> StoreFinding:
    """A finding whose references name the purge (a path holding the subject) keeps their hashes instead; so
    do the user-named references of a namespace or tenant purge (every name in it is the purged content)."""
    if scope.whole_namespaces and finding.store in NAMED_BY_USERS:
        finding.refs = [hashed_ref(ref) for ref in finding.refs]
    finding.refs = [safe_ref(scope, ref) for ref in finding.refs]
    finding.unreachable = [safe_ref(scope, ref) for ref in finding.unreachable]
    return finding
