"""/v1 session routes: start a session (frozen memory snapshot + cache-stable prompt blocks), read it, end it,
and chat in it when a chat model is configured in this runtime.

Services are looked up as `ctx.services.sessions` / `ctx.services.chat`; a runtime without them answers 503
with what to configure. A session of another tenant, or in a namespace the key may not use, is "not found".

Scopes: starting, ending and chatting in a session need `write` (each stores state: the session, its end, its
turns and what the memory tools write); reading a session needs `read`. An API key has at most
`SessionConfig.max_open_sessions_per_key` open sessions and a tenant at most `max_open_sessions` (409
`too_many_sessions` beyond either).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import Field

from ...domain.errors import NotConfigured, NotFound
from ...domain.identity import Scope
from ...domain.model import Model
from ...domain.sessions.config import MAX_BASE_SYSTEM_CHARS, NO_MODEL_MESSAGE
from ..context import RequestContext, current
from ..models import Namespace, Strict

if TYPE_CHECKING:  # the services and their ports load with the services (wiring), not with the routes
    from ...domain.sessions.chat import ChatService
    from ...domain.sessions.ports import SessionRecord
    from ...domain.sessions.sessions import SessionService

router = Router()

SystemBlocks = list[dict[str, Any]]


class SessionStartRequest(Strict):
    namespace: Namespace
    base_system: Annotated[str, Field(min_length=1, max_length=MAX_BASE_SYSTEM_CHARS)] | None = Field(
        None,
        description="Instructions placed before the memory snapshot; the deployment's default otherwise. "
        "A deployment may set a lower limit (AGENT_MEMORY_SESSIONS `max_base_system_chars`)",
    )
    cache_ttl: Literal["5m", "1h", "auto"] | None = Field(
        None,
        description="Prompt-cache TTL of the cache points: `5m` or `1h` (1h only on models that support it) "
        "for every cache point, or `auto` (the deployment's default): each turn through the service's chat "
        "chooses the snapshot and history cache points' TTLs from the gaps between the session's turns",
    )


class SessionOut(Model):
    id: str
    namespace: str
    status: Literal["open", "ended", "expired"]
    cache_ttl: Literal["5m", "1h", "auto"]
    snapshot_sha256: str
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None = None


class SessionStartResponse(Model):
    session: SessionOut
    system: SystemBlocks = Field(
        description="Bedrock Converse `system`: base text, memory snapshot, cachePoint. Send it unchanged on "
        "every turn of the session to keep the prompt cache warm"
    )
    snapshot_sha256: str
    token_monitor: dict[str, Any] | None = None


class SessionUsageOut(Model):
    """The session's token monitor: figures accumulated over its turns."""

    turns: int
    input_tokens: int = Field(description="Input tokens sent uncached")
    cache_read_input_tokens: int
    cache_write_input_tokens: int
    output_tokens: int
    cost_usd: float
    cache_breaks: int = Field(
        description="Turns whose first call read less from the prompt cache than the previous turn had left "
        "there (the cache expired between turns, or history trimming changed the prefix)"
    )
    cost_without_cache_usd: float = Field(description="What the same turns would have cost without caching")
    snapshot_1h_turns: int = Field(description="Turns whose snapshot cache point used the 1-hour TTL")
    history_1h_turns: int = Field(description="Turns whose history cache points used the 1-hour TTL")
    cache_ttl_switches: int = Field(description="Turns that changed a cache point's TTL from the turn before")


class CacheTtlsOut(Model):
    """The TTLs of a turn's cache points."""

    system: Literal["5m", "1h"] = Field(description="The snapshot's (system) cache point")
    history: Literal["5m", "1h"] = Field(description="The history cache point closing each request")


class SessionResponse(Model):
    session: SessionOut
    system: SystemBlocks
    turns: int
    usage: SessionUsageOut
    cache_ttls: CacheTtlsOut | None = Field(
        None,
        description="The TTLs the last turn used (none before the first turn through the service's chat)",
    )


class TurnRequest(Strict):
    message: Annotated[str, Field(min_length=1, description="The user's message")]


class ToolCallOut(Model):
    name: str
    status: Literal["success", "error"]
    summary: str


class TurnResponse(Model):
    session_id: str
    turn: int
    reply: str
    stop_reason: str
    model_id: str
    usage: dict[str, int]
    cache_hit_ratio: float
    cost_usd: float
    cost_without_cache_usd: float
    model_calls: int
    tool_calls: list[ToolCallOut]
    sent_turns: int
    elided_turns: int
    summarized: bool
    tool_limit_reached: bool
    cache_break: bool = Field(
        description="This turn read less from the prompt cache than the previous turn had left there"
    )
    cache_read_shortfall_tokens: int
    cache_ttls: CacheTtlsOut = Field(description="The TTLs of this turn's cache points")
    session_usage: SessionUsageOut


def _sessions(ctx: RequestContext) -> SessionService:
    service = getattr(ctx.services, "sessions", None)
    if service is None:
        raise NotConfigured("sessions are not enabled in this runtime: the server was built without them")
    return service


def _chat(ctx: RequestContext) -> ChatService:
    service = getattr(ctx.services, "chat", None)
    if service is None or not service.configured:
        raise NotConfigured(NO_MODEL_MESSAGE)
    return service


def _visible(ctx: RequestContext, session_id: str) -> SessionRecord:
    session = _sessions(ctx).get(ctx.principal.tenant, session_id)
    if not ctx.principal.allows(session.namespace):
        raise NotFound(f"no session with id {session_id!r}")
    return session


def _out(session: SessionRecord, now: datetime) -> SessionOut:
    return SessionOut(
        id=session.id,
        namespace=session.namespace,
        status=session.effective_status(now),
        cache_ttl=session.cache_ttl,
        snapshot_sha256=session.snapshot_sha256,
        created_at=session.created_at,
        expires_at=session.expires_at,
        ended_at=session.ended_at,
    )


@router.post(
    "/sessions",
    summary="Start a session: freeze the memory snapshot, get the prompt blocks (write scope)",
    description="Needs the `write` scope: a session is stored state. An API key has at most "
    "`max_open_sessions_per_key` (AGENT_MEMORY_SESSIONS, default 20) open sessions and a tenant at most "
    "`max_open_sessions` (default 100), so one key cannot use up its tenant's; beyond either the answer is "
    "409 `too_many_sessions` (`details.per` says which): end sessions with "
    "`POST /v1/sessions/{session_id}/end` or let them expire. `base_system` is refused with 422 "
    "`unsafe_content` when it carries a credential, hidden characters or an instruction override.",
    tags=["sessions"],
    status_code=201,
    response_description="The session was started: send `system` unchanged on every turn",
)
def start_session(body: SessionStartRequest) -> SessionStartResponse:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    started = _sessions(ctx).start(
        ctx.principal.tenant,
        body.namespace,
        actor=ctx.principal.actor,
        base_system=body.base_system,
        cache_ttl=body.cache_ttl,
    )
    return SessionStartResponse(
        session=_out(started.session, started.session.created_at),
        system=started.system,
        snapshot_sha256=started.session.snapshot_sha256,
        token_monitor=started.tokens.as_dict() if started.tokens is not None else None,
    )


@router.get(
    "/sessions/<session_id>",
    summary="Read a session and its (unchanged) prompt blocks (read scope)",
    tags=["sessions"],
)
def get_session(session_id: str) -> SessionResponse:
    ctx = current()
    ctx.allow(Scope.READ)
    session = _visible(ctx, session_id)
    sessions = _sessions(ctx)
    history = sessions.history(ctx.principal.tenant, session_id)
    last = history[-1].cache_ttl if history else None
    return SessionResponse(
        session=_out(session, sessions.now()),
        system=sessions.prompt(session),
        turns=len(history),
        usage=SessionUsageOut.model_validate(session.usage.model_dump()),
        cache_ttls=CacheTtlsOut(system=last.system, history=last.history) if last else None,
    )


@router.post(
    "/sessions/<session_id>/end",
    summary="End a session: releases its snapshot and its place under the open-sessions cap (write scope)",
    tags=["sessions"],
)
def end_session(session_id: str) -> SessionOut:
    ctx = current()
    ctx.allow(Scope.WRITE)
    _visible(ctx, session_id)
    sessions = _sessions(ctx)
    return _out(sessions.end(ctx.principal.tenant, session_id), sessions.now())


@router.post(
    "/sessions/<session_id>/turns",
    summary="Chat turn with the configured model, memory tools included (write scope)",
    tags=["sessions"],
)
def chat_turn(session_id: str, body: TurnRequest) -> TurnResponse:
    ctx = current()
    ctx.allow(Scope.WRITE)
    chat = _chat(ctx)
    _visible(ctx, session_id)
    result = chat.turn(
        ctx.principal.tenant, session_id, body.message, actor=ctx.principal.actor, can_write=True
    )
    return TurnResponse(
        session_id=result.session_id,
        turn=result.index + 1,
        reply=result.reply,
        stop_reason=result.stop_reason,
        model_id=result.model_id,
        usage=result.usage.as_bedrock(),
        cache_hit_ratio=round(result.usage.cache_hit_ratio, 4),
        cost_usd=round(result.cost.usd, 8),
        cost_without_cache_usd=round(result.cost.usd_without_cache, 8),
        model_calls=result.model_calls,
        tool_calls=[
            ToolCallOut(name=outcome.name, status=outcome.status, summary=outcome.summary)
            for outcome in result.tool_calls
        ],
        sent_turns=result.sent_turns,
        elided_turns=result.elided_turns,
        summarized=result.summarized,
        tool_limit_reached=result.tool_limit_reached,
        cache_break=result.cache_break,
        cache_read_shortfall_tokens=result.cache_read_shortfall_tokens,
        cache_ttls=CacheTtlsOut(system=result.cache_ttl.system, history=result.cache_ttl.history),
        session_usage=SessionUsageOut.model_validate(result.session_usage.model_dump()),
    )
