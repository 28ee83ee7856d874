"""/v1 memory routes: remember, recall, read, update, correct, archive, restore, history, changes, conflicts."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Response, Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from ...domain.errors import NotFound, TooLarge
from ...domain.identity import Principal, Scope
from ...domain.memory.service import Decision, RecallInput, RememberInput, RememberResult
from ...domain.ports import RecordQuery
from ...domain.records import MemoryRecord, MemoryType, Source, Status, Tier
from ...domain.versioning.tree import tree_selectors
from ..context import RequestContext, current
from ..jobs import JobFence, JobOrder
from ..models import (
    ChangePage,
    ConflictList,
    ConflictOut,
    CorrectRequest,
    CorrectResponse,
    HistoryResponse,
    MemoryPage,
    ReasonRequest,
    RecallHit,
    RecallRequest,
    RecallResponse,
    RememberBatchRequest,
    RememberBatchResponse,
    RememberRequest,
    RememberResponse,
    RerankReport,
    ResolveRequest,
    ResolveResponse,
    UpdateRequest,
)
from .jobs import JobResponse, accepted, accepted_response, jobs_of

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

    from ...domain.jobs.service import Progress, Work
    from ...domain.memory.service import MemoryService
    from ..context import Services

router = Router()
CHILD_HINT_RECORDS = 100
"""Records an empty parent's listing reads below it to name the namespaces that hold memories."""
MAX_HINTED_NAMESPACES = 20

_CREATED = {
    Decision.ADDED,
    Decision.SUPERSEDED,
    Decision.LINKED,
    Decision.OUTDATED,
    Decision.PENDING,
    Decision.QUARANTINED,
}
_REMEMBERED: dict[
    int, OpenAPIResponse
] = {  # the document's two successes of POST /v1/memories; the route decides which (remember)
    201: {
        "description": "A new memory was stored (`decision` "
        + ", ".join(f"`{d.value}`" for d in Decision if d in _CREATED)
        + "); `memory` is it",
        "content": {"application/json": {"model": RememberResponse}},
    },
    200: {
        "description": "No new memory (`decision` "
        + ", ".join(f"`{d.value}`" for d in Decision if d not in _CREATED)
        + "): merged into or reactivated an existing memory (`memory`), or rejected by the write discipline "
        "(`reason` and `rule` say why)",
        "content": {"application/json": {"model": RememberResponse}},
    },
}


def _to_input(body: RememberRequest, ctx: RequestContext) -> RememberInput:
    return _input(body, ctx.principal.actor)


def _input(body: RememberRequest, actor: str) -> RememberInput:
    source = body.source
    return RememberInput(
        content=body.content,
        namespace=body.namespace,
        type=body.type,
        tier=body.tier,
        score=body.score,
        half_life_hours=body.half_life_hours,
        metadata=body.metadata,
        source=Source(kind=source.kind, ref=source.ref, actor=actor) if source else Source(actor=actor),
        valid_from=body.valid_from,
        context=body.context,
    )


def _to_response(result: RememberResult) -> RememberResponse:
    return RememberResponse(
        decision=result.decision.value,
        reason=result.reason,
        rule=result.rule,
        memory=result.record,
        related=result.related,
    )


def _visible(ctx: RequestContext, memory_id: str) -> MemoryRecord:
    """Load a record of the caller's tenant in a namespace the key may use. Anything else is "not found",
    so a key cannot even learn that a record exists outside its namespaces."""
    record = ctx.services.memory.get(ctx.principal.tenant, memory_id)
    if not ctx.principal.allows(record.namespace):
        raise NotFound(f"no memory with id {memory_id!r}")
    return record


@router.post(
    "/memories",
    summary="Remember one memory (write discipline applies). Send `Idempotency-Key` to make retries safe.",
    tags=["memories"],
    responses=_REMEMBERED,
)
def remember(body: RememberRequest) -> Response[RememberResponse]:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)

    def compute() -> dict:
        result = ctx.services.memory.remember(
            ctx.principal.tenant, _to_input(body, ctx), actor=ctx.principal.actor
        )
        status = 201 if result.decision in _CREATED else 200
        return {"status": status, "body": _to_response(result).model_dump(mode="json")}

    key = ctx.headers.get("Idempotency-Key") if ctx.headers else None  # header access is case-insensitive
    if key is not None and ctx.services.idempotency is not None:
        outcome = ctx.services.idempotency.run(
            ctx.principal.tenant,
            "remember",
            key,
            body.model_dump(mode="json"),
            compute,
            caller=ctx.principal.key_id,
        )
    else:
        outcome = compute()
    return Response(
        status_code=outcome["status"],
        content_type="application/json",
        body=RememberResponse.model_validate(outcome["body"]),
    )


@router.post(
    "/memories/batch",
    summary="Remember up to 100 memories, one decision each (a large batch runs as a job: 202)",
    tags=["memories"],
    responses={
        200: {
            "description": "Every item's decision (`results`, in request order) and their `counts`",
            "content": {"application/json": {"model": RememberBatchResponse}},
        },
        **accepted_response("A batch of more items than `jobs.batch_threshold` (25 by default)"),
    },
)
def remember_batch(body: RememberBatchRequest) -> Response[RememberBatchResponse | JobResponse]:
    ctx = current()
    namespaces = {item.namespace for item in body.items}
    ctx.allow(Scope.WRITE, *namespaces)
    inputs = [_to_input(item, ctx) for item in body.items]
    tenant, actor, jobs = ctx.principal.tenant, ctx.principal.actor, jobs_of(ctx)
    if jobs is not None and len(inputs) > jobs.batch_threshold:
        _within_max_batch(ctx.services.memory, len(inputs))
        order = JobOrder.of(ctx.principal, ctx.services.erasure, body.model_dump_json())
        job = jobs.submit(
            tenant, ctx.principal.key_id, "memory_batch", sorted(namespaces), order, total=len(inputs)
        )
        return accepted(job)
    results = ctx.services.memory.remember_batch(tenant, inputs, actor=actor)
    return Response(status_code=200, content_type="application/json", body=_batch_response(results))


def _within_max_batch(memory: MemoryService, count: int) -> None:
    """Over the policy's `max_batch`: 413 within the request, no job."""
    limit = memory.policy.max_batch
    if count > limit:
        raise TooLarge(
            f"a batch holds at most {limit} memories; got {count}. Split it.", limit=limit, got=count
        )


def batch_work(services: Services, principal: Principal, request: str, fence: JobFence) -> Work:
    """A queued batch (api/jobs.py) in one `remember_batch` call, as the synchronous route makes it: items
    without a `context` take their accepted neighbours' contents, so the batch is not cut in chunks (a batch
    is at most `max_batch` items; an import's progress is finer)."""
    body = RememberBatchRequest.model_validate_json(request)
    inputs = [_input(item, principal.actor) for item in body.items]
    _within_max_batch(services.memory, len(inputs))

    def work(progress: Progress) -> dict[str, Any]:
        fence.check()
        results = services.memory.remember_batch(principal.tenant, inputs, actor=principal.actor)
        progress(len(results), len(inputs))
        return _batch_response(results).model_dump(mode="json")

    return work


def _batch_response(results: list[RememberResult]) -> RememberBatchResponse:
    responses = [_to_response(result) for result in results]
    return RememberBatchResponse(results=responses, counts=dict(Counter(r.decision for r in responses)))


@router.post("/recall", summary="Hybrid recall (vector + BM25, fused and re-ranked)", tags=["memories"])
def recall(body: RecallRequest) -> RecallResponse:
    ctx = current()
    ctx.allow(Scope.READ, *body.namespaces)
    started = time.perf_counter()
    result = ctx.services.memory.recall(
        ctx.principal.tenant,
        RecallInput(
            query=body.query,
            namespaces=tuple(dict.fromkeys(body.namespaces)),
            k=body.k,
            types=tuple(body.types),
            statuses=tuple(body.statuses),
            as_of=body.as_of,
            min_score=body.min_score,
            mode=body.mode,
            rerank=body.rerank,
        ),
    )
    if ctx.services.recall_latency is not None:
        elapsed_ms = (time.perf_counter() - started) * 1000
        ctx.services.recall_latency.record(
            ctx.principal.tenant, tuple(dict.fromkeys(body.namespaces)), elapsed_ms
        )
    outcome = result.rerank
    scores = outcome.scores if outcome is not None else {}
    return RecallResponse(
        query_hash=result.query_hash,
        rerank=None
        if outcome is None
        else RerankReport(
            reranker=outcome.reranker,
            model=outcome.model,
            applied=outcome.applied,
            candidates=outcome.candidates,
            latency_ms=outcome.latency_ms,
            fallback=outcome.fallback,
        ),
        results=[
            RecallHit(
                memory=item.record,
                score=round(item.score, 6),
                relevance=round(item.relevance, 6),
                recency=round(item.recency, 6),
                importance=round(item.importance, 6),
                strength=round(item.strength, 6),
                similarity=item.fused.similarity,
                keyword_score=item.fused.keyword_score,
                vector_rank=item.fused.vector_rank,
                keyword_rank=item.fused.keyword_rank,
                rerank_score=scores.get(item.record.id),
            )
            for item in result.results
        ],
    )


@router.get(
    "/memories",
    summary="List memories of a namespace and of the namespaces below it (include_children=false: it alone)",
    description="A page of `limit`; follow `next_cursor` to the end. By default the page covers `namespace` "
    "and every namespace below it that this key may read (`/me` covers `/me/users/u-1`, never `/meta`), by "
    "namespace then oldest first, in one bounded query per part of the tree the key reaches. With "
    "`include_children=false` only `namespace` itself is listed, oldest first. An empty first page says why in "
    "`empty_reason`; without children it also names the child namespaces that hold memories "
    "(`child_namespaces`).",
    tags=["memories"],
)
def list_memories(
    namespace: Annotated[str, Query(max_length=520)],
    type: Annotated[MemoryType | None, Query()] = None,
    status: Annotated[Status | None, Query()] = None,
    tier: Annotated[Tier | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=2000)] = None,
    include_children: Annotated[
        bool,
        Query(
            description="List the namespaces below `namespace` that this key may read too (the default); "
            "false lists `namespace` alone"
        ),
    ] = True,
) -> MemoryPage:
    ctx = current()
    filters = RecordQuery(
        types=(type,) if type else (),
        statuses=(status,) if status else (),
        tiers=(tier,) if tier else (),
        limit=limit,
        cursor=cursor,
    )
    if include_children:
        ctx.principal.require_scope(Scope.READ)
        exact, below = tree_selectors(ctx.principal.namespaces, namespace)
        if not exact and not below:
            ctx.allow(Scope.READ, namespace)  # the key reaches nothing of this tree: its refusal
    else:
        ctx.allow(Scope.READ, namespace)
        exact, below = (namespace,), ()
    query = replace(filters, namespaces=exact, namespaces_below=below)
    page = ctx.services.memory.list(ctx.principal.tenant, query)
    answer = MemoryPage(
        items=page.items, next_cursor=page.next_cursor, skipped=page.skipped, empty_reason=None
    )
    if page.items or page.skipped or cursor is not None or page.next_cursor:
        return answer
    if include_children:
        return _explain_empty_tree(namespace, answer, filters)
    return _explain_empty(ctx, namespace, answer, filters)


def _explain_empty_tree(namespace: str, answer: MemoryPage, filters: RecordQuery) -> MemoryPage:
    matching = " matching these filters" if filters.types or filters.statuses or filters.tiers else ""
    reason = f"neither {namespace} nor any namespace below it that this key may read holds memories{matching}"
    return answer.model_copy(update={"empty_reason": reason, "child_namespaces": []})


def _explain_empty(
    ctx: RequestContext, namespace: str, answer: MemoryPage, filters: RecordQuery
) -> MemoryPage:
    """An empty parent says where its memories are: the namespaces below it (that the key may read) holding
    memories that match the same filters, from one page of the subtree."""
    _exact, below = tree_selectors(ctx.principal.namespaces, namespace)
    found: dict[str, None] = {}
    more = False
    if below:
        query = replace(filters, namespaces_below=below, limit=CHILD_HINT_RECORDS, cursor=None)
        hint = ctx.services.memory.list(ctx.principal.tenant, query)
        found = dict.fromkeys(record.namespace for record in hint.items)
        more = hint.next_cursor is not None
    children = sorted(found)[:MAX_HINTED_NAMESPACES]
    matching = " matching these filters" if filters.types or filters.statuses or filters.tiers else ""
    if children:
        listed = ", ".join(children) + (" …" if more or len(found) > len(children) else "")
        reason = (
            f"{namespace} itself holds no memories{matching}; namespaces below it do: {listed} (leave out "
            "include_children=false to list them with it)"
        )
    elif more:
        reason = (
            f"{namespace} itself holds no memories{matching}, and none below it were found in the first part "
            "of the tenant read: leave out include_children=false and follow next_cursor to look further"
        )
    else:
        reason = (
            f"neither {namespace} nor any namespace below it that this key may read holds memories{matching}"
        )
    return answer.model_copy(update={"empty_reason": reason, "child_namespaces": children})


@router.get("/memories/<memory_id>", summary="Read one memory", tags=["memories"])
def get_memory(memory_id: str) -> MemoryRecord:
    ctx = current()
    ctx.allow(Scope.READ)
    return _visible(ctx, memory_id)


@router.patch(
    "/memories/<memory_id>",
    summary="Update governance fields of a memory",
    description="Send at least one of score, half_life_hours, metadata, type, tier (none: 422 'nothing to "
    "change'). Values equal to the stored ones answer 200 with the memory unchanged: no new version.",
    tags=["memories"],
)
def update_memory(memory_id: str, body: UpdateRequest) -> MemoryRecord:
    ctx = current()
    ctx.allow(Scope.WRITE)
    _visible(ctx, memory_id)
    return ctx.services.memory.update(
        ctx.principal.tenant,
        memory_id,
        actor=ctx.principal.actor,
        expected_version=body.expected_version,
        score=body.score,
        half_life_hours=body.half_life_hours,
        metadata=body.metadata,
        type=body.type,
        tier=body.tier,
    )


@router.post("/memories/<memory_id>/correct", summary="Correct a memory's content", tags=["memories"])
def correct_memory(memory_id: str, body: CorrectRequest) -> CorrectResponse:
    ctx = current()
    ctx.allow(Scope.WRITE)
    _visible(ctx, memory_id)
    previous, memory = ctx.services.memory.correct(
        ctx.principal.tenant, memory_id, body.content, actor=ctx.principal.actor, reason=body.reason
    )
    return CorrectResponse(previous=previous, memory=memory)


@router.post(
    "/memories/<memory_id>/archive",
    summary="Archive (never deletes; restorable)",
    description="An active memory is archived and can be restored. A quarantined memory is rejected: "
    "archived with `status_reason` 'rejected from quarantine: <reason>', never indexed and never restored.",
    tags=["memories"],
)
def archive_memory(memory_id: str, body: ReasonRequest) -> MemoryRecord:
    ctx = current()
    ctx.allow(Scope.WRITE)
    _visible(ctx, memory_id)
    return ctx.services.memory.archive(
        ctx.principal.tenant, memory_id, actor=ctx.principal.actor, reason=body.reason
    )


@router.post("/memories/<memory_id>/restore", summary="Restore an archived memory", tags=["memories"])
def restore_memory(memory_id: str, body: ReasonRequest) -> MemoryRecord:
    ctx = current()
    ctx.allow(Scope.WRITE)
    _visible(ctx, memory_id)
    return ctx.services.memory.restore(
        ctx.principal.tenant, memory_id, actor=ctx.principal.actor, reason=body.reason
    )


@router.get("/memories/<memory_id>/history", summary="Lineage and change log of a memory", tags=["memories"])
def memory_history(memory_id: str) -> HistoryResponse:
    ctx = current()
    ctx.allow(Scope.READ)
    _visible(ctx, memory_id)
    lineage, changes = ctx.services.memory.history(ctx.principal.tenant, memory_id)
    lineage = [record for record in lineage if ctx.principal.allows(record.namespace)]
    visible_ids = {record.id for record in lineage}
    return HistoryResponse(lineage=lineage, changes=[c for c in changes if c.record_id in visible_ids])


@router.get("/changes", summary="Change log of a namespace, oldest first", tags=["memories"])
def change_log(
    namespace: Annotated[str, Query(max_length=520)],
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Query(max_length=2000)] = None,
) -> ChangePage:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    page = ctx.services.memory.changes(ctx.principal.tenant, namespace, limit=limit, cursor=cursor)
    return ChangePage(items=page.items, next_cursor=page.next_cursor)


@router.get("/conflicts", summary="Open conflict groups of a namespace", tags=["conflicts"])
def list_conflicts(namespace: Annotated[str, Query(max_length=520)]) -> ConflictList:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    groups = ctx.services.memory.conflicts(ctx.principal.tenant, namespace)
    return ConflictList(conflicts=[ConflictOut(group=g.group, memories=g.records) for g in groups])


@router.post(
    "/conflicts/<group>/resolve",
    summary="Resolve a conflict: keep some, supersede the rest",
    tags=["conflicts"],
)
def resolve_conflict(group: str, body: ResolveRequest) -> ResolveResponse:
    ctx = current()
    ctx.allow(Scope.WRITE)
    for memory_id in body.keep:
        _visible(ctx, memory_id)
    # A group with members outside the key's namespaces answers exactly like an unknown group (404), never
    # with its member ids.
    resolved = ctx.services.memory.resolve_conflict(
        ctx.principal.tenant,
        group,
        keep=body.keep,
        actor=ctx.principal.actor,
        reason=body.reason,
        visible=ctx.principal.allows,
    )
    return ResolveResponse(memories=resolved)
