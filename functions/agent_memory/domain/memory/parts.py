"""What every part of the memory service shares: the ports, the policy, and the few steps every mutation takes
(validate, scan, embed, commit with its change-log entries, index, settle the index)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .. import safety
from ..errors import NotFound
from ..ports import Clock, Embedder, Embedding, IndexEntry, RecordStore, RecordWrite, SearchIndex, Vector
from ..records import ChangeEntry, ChangeOperation, MemoryRecord, Status
from ..safety.fields import FieldFinding, decide, memory_write_fields, require_clean
from . import limits, transitions
from .inputs import RememberInput
from .policy import MemoryPolicy
from .ports import Lexicon, Reranker

ScanFn = Callable[[str], list[safety.SafetyFinding]]


class MemoryParts:
    def __init__(
        self,
        store: RecordStore,
        index: SearchIndex,
        embedder: Embedder,
        clock: Clock,
        policy: MemoryPolicy,
        scan: ScanFn,
        read_embedder: Callable[[str], Embedder] | None,
        overlap_halves: bool,
        lexicon: Lexicon | None = None,
        rerankers: Mapping[str, Reranker] | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.embedder_of = read_embedder or (lambda _tenant: embedder)  # a tenant's model (domain/migration)
        self.clock = clock
        self.policy = policy
        self.scan = scan
        self.overlap_halves = overlap_halves
        self.lexicon = lexicon
        """What words mean, for the merge guard and the kinds of the names a memory holds in its keyword context
        (adapters/lexicon); None: the guard's own tables only, no kinds."""
        self.rerankers: Mapping[str, Reranker] = dict(rerankers or {})
        """The second-stage rerankers a recall may ask for, by name (domain/memory/reranking.py)."""
        self.thresholds = policy.similarity_thresholds(embedder.identity.name)
        self._ready_tenants: set[str] = set()

    def now(self) -> datetime:
        return self.clock.now()

    def get(self, tenant: str, record_id: str) -> MemoryRecord:
        record = self.store.get(tenant, record_id)
        if record is None:
            raise NotFound(f"no memory with id {record_id!r}")
        return record

    # ------------------------------------------------------------------ input

    def validate(self, item: RememberInput) -> None:
        limits.check_memory(
            self.policy,
            namespace=item.namespace,
            content=item.content,
            metadata=item.metadata,
            score=item.score,
            half_life_hours=item.half_life_hours,
        )

    def must_reject(self, finding: safety.SafetyFinding) -> bool:
        """Credentials are never stored, not even in quarantine. Other blocking findings are refused unless
        the policy quarantines them; `quarantine`-severity findings (e.g. a preference worded as an order to
        the agent) are stored in quarantine, out of recall, until a person releases them with restore."""
        if finding.rule == "secret":
            return True
        return finding.severity == "block" and not self.policy.quarantine_unsafe

    def first_finding(self, item: RememberInput) -> FieldFinding | None:
        """The finding that decides a remember, over every text field of the write (content, context, metadata
        keys and values, source ref): the first blocking one, else the first quarantine one (issue 29)."""
        fields = memory_write_fields(
            content=item.content, context=item.context, metadata=item.metadata, source_ref=item.source.ref
        )
        return decide(fields, self.scan).first

    def require_clean(self, what: str, **fields: object) -> None:
        """Refuse (422 `unsafe_content`, naming the field) a text with any finding: reasons and metadata of
        state changes, which have no quarantine state."""
        given = {name.replace("_", "."): value for name, value in fields.items() if value}
        if given:
            require_clean(given, what, self.scan)

    # ------------------------------------------------------------------ vectors and index

    def ensure_tenant(self, tenant: str) -> None:
        if tenant not in self._ready_tenants:
            self.index.ensure_tenant(tenant, self.embedder_of(tenant).identity)
            self._ready_tenants.add(tenant)

    def embed(self, tenant: str, texts: Sequence[str]) -> list[Embedding]:
        embedder = self.embedder_of(
            tenant
        )  # once: the vectors name the model that made them (ports.Embedding)
        return [Embedding(v, embedder.identity) for v in embedder.embed_documents(list(texts))]

    def index_record(self, tenant: str, record: MemoryRecord, vector: Vector) -> None:
        identity = vector.identity if isinstance(vector, Embedding) else self.embedder_of(tenant).identity
        self.index.upsert(tenant, identity, [entry(record, vector)])

    def settle(self, tenant: str, written: dict[str, Status]) -> None:
        transitions.settle_index(self.store, self.index, tenant, written)

    # ------------------------------------------------------------------ commits

    def commit(self, writes: list[RecordWrite], changes: list[ChangeEntry]) -> None:
        self.store.commit(writes, changes)

    def change(
        self,
        record: MemoryRecord,
        operation: ChangeOperation,
        actor: str,
        *,
        before: dict[str, Any] | None = None,
        reason: str = "",
    ) -> ChangeEntry:
        return ChangeEntry(
            tenant=record.tenant,
            namespace=record.namespace,
            record_id=record.id,
            operation=operation,
            actor=actor,
            at=self.clock.now(),
            reason=reason,
            before=before,
            after=record.public_dict(),
        )

    def create(self, record: MemoryRecord, vector: Vector, actor: str, reason: str = "") -> None:
        """Commit a new record with its change-log entry, then index it."""
        self.commit(
            [RecordWrite(record, None)], [self.change(record, ChangeOperation.CREATE, actor, reason=reason)]
        )
        self.index_record(record.tenant, record, vector)

    def add_beside(
        self,
        record: MemoryRecord,
        vector: Vector,
        changed: Sequence[tuple[MemoryRecord, MemoryRecord]],
        operation: ChangeOperation,
        actor: str,
        reason: str,
    ) -> None:
        """Create `record` and rewrite the existing records it relates to — (before, after) pairs: superseded,
        linked or held in conflict — in one atomic commit guarded by each one's version, then index the new
        record and bring the others' index status in line."""
        writes = [RecordWrite(record, None)]
        entries = [self.change(record, ChangeOperation.CREATE, actor, reason=reason)]
        for before, after in changed:
            writes.append(RecordWrite(after, before.version))
            entries.append(self.change(after, operation, actor, before=before.public_dict(), reason=reason))
        self.commit(writes, entries)
        self.index_record(record.tenant, record, vector)
        for _, after in changed:
            self.index.set_status(record.tenant, [after.id], after.status)


def entry(record: MemoryRecord, vector: Vector) -> IndexEntry:
    return IndexEntry(
        record_id=record.id,
        namespace=record.namespace,
        type=record.type,
        status=record.status,
        text=f"{record.content}\n{record.context}" if record.context else record.content,
        vector=list(vector),
        embedded_text=record.content,
    )
