"""Chat over a session: the frozen prefix, the history within a budget, and memory tools the model can use.

Every model call of a session sends the same prefix — the tool definitions (fixed per deployment, ordered by
name), then the session's system blocks (base text, memory snapshot, cache point) — so the provider caches it
on the first call and reads it on every later one. Everything that changes from turn to turn (the history,
an elision note or summary, the new message) comes after the cache point, in `messages`.

The model manages memory the way agents do: add / replace / remove entries of MEMORY.md and USER.md (the caps
and their refusal messages come back to the model as tool errors, so it can make room), remember a record,
recall records. Writes reach the files and records at once; the running session's snapshot never changes.

A turn is persisted only when it completed (tool loop included): a model failure leaves the history as it
was. Memory writes the model made before the failure stay written, like any other API write.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import DomainError, NotConfigured, TooLarge, ValidationFailed
from ..files.memory_files import FileView, MemoryFilesService
from ..memory.service import MemoryService, RecallInput, RememberInput
from ..ports import Clock
from ..records import MemoryType, Source, SourceKind
from ..skills.document import Provenance
from ..skills.service import Skill, SkillsService
from .config import (
    NO_MODEL_MESSAGE,
    ChatConfig,
    PromptCacheConfig,
    TurnCost,
)
from .ports import (
    ChatModel,
    Message,
    ModelReply,
    SessionRecord,
    SessionUsage,
    TokenCounter,
    ToolUse,
    TurnRecord,
    Usage,
)
from .prompt_cache import CharTokenEstimator, PrefixMonitor
from .sessions import SessionService


def build_prefix_monitor(
    config: ChatConfig,
    prompt_cache: PromptCacheConfig,
    counter: TokenCounter,
    *,
    exact: bool,
    skills: bool = False,
) -> PrefixMonitor:
    """The session token monitor for the configured chat model: its cache minimum, the deployment's tools
    (they are part of the cached prefix) and the snapshot ceiling (configured, or the budget's memory share)."""
    profile = prompt_cache.profile(config.model_id)
    window = config.context_window or profile.context_window
    return PrefixMonitor(
        counter,
        model_id=config.model_id,
        profile=profile,
        tool_config=tool_config(skills=skills),
        ceiling_tokens=config.snapshot_ceiling_tokens or config.budget.tokens(window)["memory"],
        exact=exact,
    )


# --------------------------------------------------------------------------- tools

_KIND = {
    "type": "string",
    "enum": ["memory", "user"],
    "description": "memory = MEMORY.md (your notes about the project, environment and lessons learned); "
    "user = USER.md (the user's profile and preferences)",
}
_MATCH = {
    "type": "string",
    "description": "A short unique substring of the one entry to change, copied from the entry",
}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"json": {"type": "object", "properties": properties, "required": required}}


_TOOL_SPECS: list[dict[str, Any]] = [
    {
        "toolSpec": {
            "name": "memory_file_add",
            "description": "Add one entry to MEMORY.md or USER.md. Keep entries short, factual and durable. "
            "Refused when the file would exceed its character cap (replace or remove entries first) or the "
            "entry is an exact duplicate. Saved at once; visible in the snapshot from the next session.",
            "inputSchema": _object(
                {"kind": _KIND, "content": {"type": "string", "description": "The entry text"}},
                ["kind", "content"],
            ),
        }
    },
    {
        "toolSpec": {
            "name": "memory_file_replace",
            "description": "Replace the one entry of MEMORY.md or USER.md that contains `match` with new text "
            "(to correct it, or to merge entries and make room under the cap).",
            "inputSchema": _object(
                {
                    "kind": _KIND,
                    "match": _MATCH,
                    "content": {"type": "string", "description": "The new text"},
                },
                ["kind", "match", "content"],
            ),
        }
    },
    {
        "toolSpec": {
            "name": "memory_file_remove",
            "description": "Remove the one entry of MEMORY.md or USER.md that contains `match`.",
            "inputSchema": _object({"kind": _KIND, "match": _MATCH}, ["kind", "match"]),
        }
    },
    {
        "toolSpec": {
            "name": "remember",
            "description": "Store a fact as a memory record of this project (searchable with recall). "
            "Duplicates merge and contradictions supersede older records automatically.",
            "inputSchema": _object(
                {
                    "content": {"type": "string", "description": "The fact, in plain language"},
                    "type": {
                        "type": "string",
                        "enum": [t.value for t in MemoryType],
                        "description": "Optional; classified automatically when omitted",
                    },
                },
                ["content"],
            ),
        }
    },
    {
        "toolSpec": {
            "name": "recall",
            "description": "Search this project's memory records (meaning and keywords); returns the best "
            "matches with their ids, types and scores.",
            "inputSchema": _object(
                {
                    "query": {"type": "string", "description": "What to look for"},
                    "k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many results"},
                },
                ["query"],
            ),
        }
    },
]
# Part of the cached prefix: a fixed order makes the bytes identical on every call of every session.
_TOOL_SPECS.sort(key=lambda spec: spec["toolSpec"]["name"])
TOOL_NAMES: tuple[str, ...] = tuple(spec["toolSpec"]["name"] for spec in _TOOL_SPECS)
_SKILL_TOOL_SPECS: list[dict[str, Any]] = [
    {
        "toolSpec": {
            "name": "skill_view",
            "description": "Load the full procedure of one skill listed under 'Skills' in the memory snapshot "
            "(the snapshot lists names and descriptions only). The view is recorded as a use.",
            "inputSchema": _object({"name": {"type": "string", "description": "The skill's name"}}, ["name"]),
        }
    },
    {
        "toolSpec": {
            "name": "skill_manage",
            "description": "Write your own skills (procedures for a kind of task: do A, B, C, avoid D) and "
            "report how one worked. action=create (name, description, body), edit (name, body, optional "
            "description), patch (name, heading, content: replaces that section), archive or restore (name), "
            "outcome (name, outcome helped|failed|misled, note). Every change is versioned; a new skill "
            "appears in the snapshot from the next session. Skills that mislead are retired by the curator.",
            "inputSchema": _object(
                {
                    "action": {
                        "type": "string",
                        "enum": ["create", "edit", "patch", "archive", "restore", "outcome"],
                    },
                    "name": {"type": "string", "description": "Lower-case letters, digits and hyphens"},
                    "description": {"type": "string", "description": "One line: when to use the skill"},
                    "body": {"type": "string", "description": "The Markdown procedure"},
                    "heading": {"type": "string", "description": "patch: the section's heading"},
                    "content": {"type": "string", "description": "patch: the section's new lines"},
                    "outcome": {"type": "string", "enum": ["helped", "failed", "misled"]},
                    "note": {"type": "string", "description": "Why (change log) or what happened (outcome)"},
                },
                ["action", "name"],
            ),
        }
    },
]
"""Offered when the deployment has skills (`ChatService(skills=…)`): still fixed per deployment."""
SKILL_TOOL_NAMES: tuple[str, ...] = tuple(spec["toolSpec"]["name"] for spec in _SKILL_TOOL_SPECS)
_WRITE_TOOLS = frozenset(
    {"memory_file_add", "memory_file_replace", "memory_file_remove", "remember", "skill_manage"}
)


def tool_config(*, skills: bool = False) -> dict[str, Any]:
    """The Converse `toolConfig` (a fresh copy: callers may not alter the shared definitions); with `skills`,
    the skill tools too (sorted in with the others)."""
    specs = sorted([*_TOOL_SPECS, *_SKILL_TOOL_SPECS], key=lambda spec: spec["toolSpec"]["name"])
    return {"tools": copy.deepcopy(specs if skills else _TOOL_SPECS)}


# --------------------------------------------------------------------------- history trimming


@dataclass(frozen=True)
class HistoryPlan:
    keep: tuple[int, ...]
    elided: tuple[int, ...]


def plan_history(
    turn_tokens: Sequence[int], budget: int, note_tokens: int, *, step_tokens: int = 0
) -> HistoryPlan:
    """Which past turns fit `budget` tokens: all of them if possible; otherwise the first exchange (it sets
    the conversation up), then the most recent turns going back while they fit, and a note (`note_tokens`)
    in place of the middle. Whole turns only, so a tool call is never separated from its result.

    `step_tokens` makes the elision move in steps, for the prompt cache: the elided span grows only when
    the conversation has grown by another `step_tokens` beyond the budget, and then by at least that much.
    Between steps the kept history is the same sequence of turns plus new ones at the end, so every turn's
    request shares the previous turn's prefix and reads it from the cache; only a step rewrites it. The
    plan is a function of the turn sizes alone (no state): turns never change once stored, so the elided
    span of a later turn is the same or longer, never different in another way."""
    count = len(turn_tokens)
    if sum(turn_tokens) <= budget:
        return HistoryPlan(tuple(range(count)), ())
    remaining = budget - note_tokens
    keep_first = count > 0 and turn_tokens[0] <= remaining
    if keep_first:
        remaining -= turn_tokens[0]
    start = 1 if keep_first else 0
    candidates = turn_tokens[start:]
    # Elide the shortest run of turns from `start` whose tokens reach `excess` (rounded up to a step), so
    # that the rest fits `remaining`.
    excess = sum(candidates) - max(0, remaining)
    if step_tokens > 0 and excess > 0:
        excess = -(-excess // step_tokens) * step_tokens
    elided_count, dropped = 0, 0
    while elided_count < len(candidates) and dropped < excess:
        dropped += candidates[elided_count]
        elided_count += 1
    recent = range(start + elided_count, count)
    keep = ([0] if keep_first else []) + list(recent)
    kept = set(keep)
    return HistoryPlan(tuple(keep), tuple(i for i in range(count) if i not in kept))


def _with_note(message: Message, note: str) -> Message:
    return {"role": message["role"], "content": [{"text": note}, *message["content"]]}


def assemble_messages(
    turns: Sequence[Sequence[Message]], plan: HistoryPlan, note: str | None, current: Message
) -> list[Message]:
    """History messages of the kept turns, then the current message; the note opens the first message after
    the elided turns (a user message: every turn starts with the user's text)."""
    first_elided = min(plan.elided) if plan.elided else None
    messages: list[Message] = []
    noted = note is None
    for index in plan.keep:
        turn = [dict(m) for m in turns[index]]
        if not noted and first_elided is not None and index > first_elided:
            turn[0] = _with_note(turn[0], note or "")
            noted = True
        messages.extend(turn)
    messages.append(current if noted else _with_note(current, note or ""))
    return messages


# --------------------------------------------------------------------------- cache points on the history

MAX_CACHE_POINTS = 4
"""Bedrock Converse accepts at most four cache points per request, in tools, system and messages together."""


def cache_point_block(ttl: str) -> dict[str, Any]:
    """A Converse `CachePointBlock` as a message content block (the 5-minute default carries no `ttl`, like
    the session's system cache point)."""
    point: dict[str, Any] = {"type": "default"}
    if ttl != "5m":
        point["ttl"] = ttl
    return {"cachePoint": point}


def with_cache_points(
    messages: Sequence[Message], marks: Sequence[int], ttl: str, *, system: Sequence[Mapping[str, Any]] = ()
) -> list[Message]:
    """A copy of `messages` with a cache point closing the first `n` messages for each `n` of `marks` (a
    `cachePoint` content block appended to message `n - 1`): the provider caches the prompt up to there.
    The system's own cache points count against the limit of four: beyond it the latest marks win. The
    stored history never carries cache points; only the request does."""
    room = MAX_CACHE_POINTS - sum(1 for block in system if "cachePoint" in block)
    chosen = sorted({n for n in marks if 0 < n <= len(messages)})[-room:] if room > 0 else []
    out = [dict(message) for message in messages]
    for n in chosen:
        message = out[n - 1]
        out[n - 1] = {**message, "content": [*message["content"], cache_point_block(ttl)]}
    return out


def _transcript(turns: Sequence[Sequence[Message]], first_number: int, limit: int) -> str:
    """Plain text of turns for the summariser: user and assistant text, tool calls by name."""
    lines: list[str] = []
    for offset, turn in enumerate(turns):
        lines.append(f"Turn {first_number + offset}:")
        for message in turn:
            for block in message.get("content", ()):
                if "text" in block:
                    lines.append(f"{message['role']}: {block['text']}")
                elif "toolUse" in block:
                    lines.append(f"assistant used tool {block['toolUse'].get('name')}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + "\n[…transcript cut]"


SUMMARY_SYSTEM = (
    "Summarise the conversation turns below for the assistant that continues the conversation: the user's "
    "goals, decisions made, facts established and open questions. At most 200 words, plain prose, no preamble."
)

# --------------------------------------------------------------------------- results


ToolCallStatus = Literal["success", "error"]


@dataclass(frozen=True)
class ToolCallOutcome:
    name: str
    status: ToolCallStatus
    """`success` or `error` (the error text went back to the model)."""
    summary: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "summary": self.summary}


@dataclass(frozen=True)
class TurnResult:
    session_id: str
    index: int
    reply: str
    stop_reason: str
    model_id: str
    usage: Usage
    cost: TurnCost
    model_calls: int
    tool_calls: list[ToolCallOutcome] = field(default_factory=list)
    sent_turns: int = 0
    elided_turns: int = 0
    summarized: bool = False
    tool_limit_reached: bool = False
    cache_break: bool = False
    """The first call read less from the cache than the previous turn had left there."""
    cache_read_shortfall_tokens: int = 0
    session_usage: SessionUsage = field(default_factory=SessionUsage)
    """The session's totals including this turn (the token monitor)."""


@dataclass(frozen=True)
class _ToolContext:
    tenant: str
    session: SessionRecord
    actor: str
    can_write: bool
    turn_index: int


class ChatService:
    def __init__(
        self,
        sessions: SessionService,
        files: MemoryFilesService,
        memory: MemoryService,
        model: ChatModel | None,
        clock: Clock,
        config: ChatConfig | None = None,
        prompt_cache: PromptCacheConfig | None = None,
        *,
        estimator: TokenCounter | None = None,
        skills: SkillsService | None = None,
    ) -> None:
        self._sessions = sessions
        self._skills = skills
        self._files = files
        self._memory = memory
        self._model = model
        self._clock = clock
        self.config = config or ChatConfig()
        self.prompt_cache = prompt_cache or PromptCacheConfig()
        # History trimming runs on every turn, so it estimates locally instead of calling CountTokens.
        self._estimate = estimator or CharTokenEstimator()
        self._observers: list[Callable[[TurnResult], None]] = []

    @property
    def configured(self) -> bool:
        return self._model is not None

    @property
    def model_id(self) -> str:
        return self._model.model_id if self._model is not None else self.config.model_id

    @property
    def context_window(self) -> int:
        return self.config.context_window or self.prompt_cache.profile(self.model_id).context_window

    def add_observer(self, observer: Callable[[TurnResult], None]) -> None:
        """Called after every persisted turn (the Lambda handler emits usage and cost metrics from it)."""
        self._observers.append(observer)

    # ------------------------------------------------------------------ a turn

    def turn(self, tenant: str, session_id: str, message: str, *, actor: str, can_write: bool) -> TurnResult:
        if self._model is None:
            raise NotConfigured(NO_MODEL_MESSAGE)
        text = self._check_message(message)
        session = self._sessions.get(tenant, session_id)
        self._sessions.require_open(session)
        system = self._sessions.prompt(session)
        history = self._sessions.history(tenant, session_id)
        index = len(history)
        context = _ToolContext(tenant, session, actor, can_write, index)

        current: Message = {"role": "user", "content": [{"text": text}]}
        messages, plan, summary_usage = self._context(history, current)
        new_messages: list[Message] = [current]
        tools = tool_config(skills=self._skills is not None)
        inference = self._inference_config()
        # Where the previous request ended: the last kept turn without its final answer (that turn's last
        # call sent everything before the answer and put its cache point there).
        previous_end = len(messages) - 2 if plan.keep and plan.keep[-1] == index - 1 else 0

        usage = summary_usage
        outcomes: list[ToolCallOutcome] = []
        reply: ModelReply | None = None
        first_read: int | None = None
        limit_reached = False
        calls = 0
        for round_number in range(self.config.max_tool_rounds + 1):
            request = self._with_history_cache_points(
                system, messages, tools, [previous_end, len(messages)], session.cache_ttl
            )
            reply = self._model.converse(
                system=system, messages=request, tool_config=tools, inference_config=inference
            )
            calls += 1
            usage = usage + reply.usage
            previous_end = len(messages)
            if first_read is None:
                first_read = reply.usage.cache_read_input_tokens
            uses = reply.tool_uses if reply.stop_reason == "tool_use" else []
            if not uses:
                assistant = _assistant_message(reply.content, without_tools=True, fallback="[no reply]")
                new_messages.append(assistant)
                break
            if round_number == self.config.max_tool_rounds:
                # Unanswered tool calls would make the stored history invalid: keep only the text.
                limit_reached = True
                assistant = _assistant_message(
                    reply.content,
                    without_tools=True,
                    fallback=f"[stopped: the limit of {self.config.max_tool_rounds} tool rounds per turn was reached]",
                )
                new_messages.append(assistant)
                break
            assistant = _assistant_message(reply.content, without_tools=False, fallback="")
            results = [self._run_tool(use, context) for use in uses]
            outcomes.extend(outcome for _, outcome in results)
            tool_message: Message = {"role": "user", "content": [block for block, _ in results]}
            new_messages.extend([assistant, tool_message])
            messages = [*messages, assistant, tool_message]
        assert reply is not None  # the loop runs at least once

        final_text = "".join(block.get("text", "") for block in new_messages[-1]["content"])
        cost = self.prompt_cache.cost(self.model_id, usage, session.cache_ttl)
        # Cache breakage: the first call read less than the previous turn left in the cache (the TTL ran out
        # between the turns, or trimming changed the history prefix).
        expected = history[-1].cached_prefix_tokens if history else 0
        shortfall = max(0, expected - (first_read or 0))
        record = TurnRecord(
            tenant=tenant,
            session_id=session_id,
            index=index,
            messages=new_messages,
            usage=usage.as_bedrock(),
            cost_usd=round(cost.usd, 8),
            model_id=self.model_id,
            stop_reason=reply.stop_reason,
            tool_calls=[outcome.as_dict() for outcome in outcomes],
            created_at=self._clock.now(),
            cached_prefix_tokens=reply.usage.cache_read_input_tokens + reply.usage.cache_write_input_tokens,
            cache_break=shortfall > 0,
        )
        self._sessions.record_turn(record)
        result = TurnResult(
            session_id=session_id,
            index=index,
            reply=final_text,
            stop_reason=reply.stop_reason,
            model_id=self.model_id,
            usage=usage,
            cost=cost,
            model_calls=calls,
            tool_calls=outcomes,
            sent_turns=len(plan.keep),
            elided_turns=len(plan.elided),
            summarized=bool(plan.elided) and self.config.summarize_history,
            tool_limit_reached=limit_reached,
            cache_break=shortfall > 0,
            cache_read_shortfall_tokens=shortfall,
            session_usage=session.usage.plus(record),
        )
        for observer in self._observers:
            observer(result)
        return result

    def _with_history_cache_points(
        self,
        system: Sequence[Mapping[str, Any]],
        messages: Sequence[Message],
        tools: Mapping[str, Any],
        marks: Sequence[int],
        ttl: str,
    ) -> list[Message]:
        """The request's messages with cache points after the first `n` messages for each `n` of `marks`
        (the previous request's end: read; this request's end: written for the next call), each only where
        the prompt up to it reaches the model's minimum cacheable length (below it the provider caches
        nothing, so the cache point would buy nothing)."""
        if not self.config.history_cache_points:
            return list(messages)
        minimum = self.prompt_cache.profile(self.model_id).min_cacheable_tokens
        worth = [
            n
            for n in marks
            if n > 0 and self._estimate.count(messages[:n], system=system, tool_config=tools) >= minimum
        ]
        return with_cache_points(messages, worth, ttl, system=system)

    def _check_message(self, message: str) -> str:
        if not isinstance(message, str) or not message.strip():
            raise ValidationFailed("message is empty: write what you want to say")
        limit = self.config.max_message_chars
        if len(message) > limit:
            raise TooLarge(
                f"message is {len(message):,} characters; at most {limit:,} are allowed",
                chars=len(message),
                limit=limit,
            )
        return message

    def _inference_config(self) -> dict[str, Any]:
        response_budget = self.config.budget.tokens(self.context_window)["response"]
        inference: dict[str, Any] = {"maxTokens": max(1, min(self.config.max_output_tokens, response_budget))}
        if self.config.temperature is not None:
            inference["temperature"] = self.config.temperature
        return inference

    # ------------------------------------------------------------------ context

    def _context(
        self, history: Sequence[TurnRecord], current: Message
    ) -> tuple[list[Message], HistoryPlan, Usage]:
        turns = [record.messages for record in history]
        history_budget = self.config.budget.tokens(self.context_window)["history"]
        current_tokens = self._estimate.count([current])
        sizes = [self._estimate.count(turn) for turn in turns]
        # Room for the note: a fixed elision line, or the summary's maximum length.
        note_tokens = self.config.summary_max_tokens + 40 if self.config.summarize_history else 40
        step = int(history_budget * self.config.elision_step)
        # Planned on the history alone, so the plan does not jitter with the size of each new message (a
        # step leaves room for it); only a message that does not fit makes it elide more.
        plan = plan_history(sizes, history_budget, note_tokens, step_tokens=step)
        kept = sum(sizes[i] for i in plan.keep) + (note_tokens if plan.elided else 0)
        if kept + current_tokens > history_budget:
            plan = plan_history(sizes, max(0, history_budget - current_tokens), note_tokens, step_tokens=step)
        if not plan.elided:
            return assemble_messages(turns, plan, None, current), plan, Usage()
        first, last = plan.elided[0] + 1, plan.elided[-1] + 1  # people count turns from 1
        span = f"turn {first}" if first == last else f"turns {first}-{last}"
        usage = Usage()
        if self.config.summarize_history and self._model is not None:
            summary, usage = self._summarize([turns[i] for i in plan.elided], first)
            note = f"[Summary of earlier {span}, omitted to fit the context budget]\n{summary}"
        else:
            note = (
                f"[{len(plan.elided)} earlier {span.split(' ')[0]} omitted to fit the context budget: {span}]"
            )
        return assemble_messages(turns, plan, note, current), plan, usage

    def _summarize(self, turns: list[list[Message]], first_number: int) -> tuple[str, Usage]:
        assert self._model is not None
        limit = self.config.budget.tokens(self.context_window)["history"] * 4  # ~4 characters per token
        reply = self._model.converse(
            system=[{"text": SUMMARY_SYSTEM}],
            messages=[{"role": "user", "content": [{"text": _transcript(turns, first_number, limit)}]}],
            tool_config=None,
            inference_config={"maxTokens": self.config.summary_max_tokens},
        )
        return reply.text.strip() or "(no summary)", reply.usage

    # ------------------------------------------------------------------ tools

    def _run_tool(self, use: ToolUse, context: _ToolContext) -> tuple[dict[str, Any], ToolCallOutcome]:
        status: ToolCallStatus
        try:
            available = (*TOOL_NAMES, *SKILL_TOOL_NAMES) if self._skills is not None else TOOL_NAMES
            if use.name not in available:
                raise ValidationFailed(f"unknown tool {use.name!r}; available: {', '.join(available)}")
            if use.name in _WRITE_TOOLS and not context.can_write:
                raise ValidationFailed(
                    "this API key is read-only: memory writes are not allowed in this session"
                )
            payload, summary = self._dispatch(use, context)
            status = "success"
        except DomainError as error:
            # Refusals (caps, duplicates, unsafe content, bad input) are information for the model, not a
            # failed turn: it can replace or remove entries and try again.
            payload = {"error": error.code, "message": error.message}
            payload.update(
                {k: v for k, v in error.details.items() if isinstance(v, str | int | float | bool)}
            )
            summary = f"{error.code}: {error.message}"
            status = "error"
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        limit = self.config.tool_result_max_chars
        if len(text) > limit:
            text = text[:limit] + "…[cut]"
        block = {"toolResult": {"toolUseId": use.id, "content": [{"text": text}], "status": status}}
        return block, ToolCallOutcome(use.name, status, summary[:300])

    def _dispatch(self, use: ToolUse, context: _ToolContext) -> tuple[dict[str, Any], str]:
        args = use.input
        tenant, namespace = context.tenant, context.session.namespace
        if use.name == "memory_file_add":
            view = self._files.add(tenant, namespace, _arg(args, "kind"), _arg(args, "content"))
            return _file_payload(view, "added"), f"added to {view.path} ({view.used}/{view.limit})"
        if use.name == "memory_file_replace":
            view = self._files.replace(
                tenant, namespace, _arg(args, "kind"), _arg(args, "match"), _arg(args, "content")
            )
            return _file_payload(view, "replaced"), f"replaced in {view.path} ({view.used}/{view.limit})"
        if use.name == "memory_file_remove":
            view = self._files.remove(tenant, namespace, _arg(args, "kind"), _arg(args, "match"))
            return _file_payload(view, "removed"), f"removed from {view.path} ({view.used}/{view.limit})"
        if use.name in ("skill_view", "skill_manage"):
            return self._skill_tool(use.name, args, context)
        if use.name == "remember":
            raw_type = args.get("type")
            try:
                memory_type = MemoryType(raw_type) if raw_type else None
            except ValueError:
                raise ValidationFailed(f"unknown memory type {raw_type!r}") from None
            result = self._memory.remember(
                tenant,
                RememberInput(
                    content=_arg(args, "content"),
                    namespace=namespace,
                    type=memory_type,
                    source=Source(
                        kind=SourceKind.TOOL,
                        ref=f"session:{context.session.id}#turn:{context.turn_index + 1}",
                        actor=context.actor,
                    ),
                ),
                actor=context.actor,
            )
            record_id = result.record.id if result.record else None
            payload = {"decision": result.decision.value, "reason": result.reason, "id": record_id}
            return payload, f"{result.decision.value}: {result.reason}"
        # recall
        k = args.get("k", self.config.recall_k)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 50:
            raise ValidationFailed("k must be an integer from 1 to 50")
        found = self._memory.recall(
            tenant, RecallInput(query=_arg(args, "query"), namespaces=(namespace,), k=k)
        ).results
        results = [
            {
                "id": item.record.id,
                "type": item.record.type.value,
                "content": item.record.content[:1000],
                "score": round(item.score, 3),
            }
            for item in found
        ]
        return {"results": results}, f"{len(results)} results"

    def _skill_tool(
        self, name: str, args: Mapping[str, Any], context: _ToolContext
    ) -> tuple[dict[str, Any], str]:
        """`skill_view` and `skill_manage`: agent-written skills (provenance `agent`, author the session's
        actor); a skill written here reaches the snapshot of the next session only."""
        if self._skills is None:
            raise NotConfigured("skills are not configured on this deployment")
        skills, tenant, namespace, actor = (
            self._skills,
            context.tenant,
            context.session.namespace,
            context.actor,
        )
        skill_name = _arg(args, "name")
        if name == "skill_view":
            skill = skills.view(tenant, namespace, skill_name, actor=actor)
            return _skill_payload(skill, body=True), f"viewed {skill_name} v{skill.meta.version}"
        action = _arg(args, "action")
        raw_note = args.get("note")
        note = raw_note if isinstance(raw_note, str) else ""
        if action == "create":
            skill = skills.create(
                tenant,
                namespace,
                skill_name,
                description=_arg(args, "description"),
                body=_arg(args, "body"),
                actor=actor,
                provenance=Provenance.AGENT,
                note=note,
            )
        elif action == "edit":
            description = args.get("description")
            skill = skills.edit(
                tenant,
                namespace,
                skill_name,
                body=_arg(args, "body"),
                description=description if isinstance(description, str) and description.strip() else None,
                actor=actor,
                note=note,
            )
        elif action == "patch":
            content = args.get("content")
            if not isinstance(content, str):
                raise ValidationFailed("the tool input needs a string `content` for patch")
            skill = skills.patch(
                tenant,
                namespace,
                skill_name,
                heading=_arg(args, "heading"),
                content=content,
                actor=actor,
                note=note,
            )
        elif action in ("archive", "restore"):
            change = skills.archive if action == "archive" else skills.restore
            skill = change(tenant, namespace, skill_name, actor=actor, note=note)
        elif action == "outcome":
            signals = skills.report_outcome(
                tenant, namespace, skill_name, _arg(args, "outcome"), actor=actor, note=note
            )
            return {
                "status": "recorded",
                "outcomes": signals.as_dict()["outcomes"],
            }, f"outcome for {skill_name}"
        else:
            raise ValidationFailed(
                f"unknown skill_manage action {action!r}: use create, edit, patch, archive, restore or outcome"
            )
        payload = _skill_payload(skill, body=False)
        payload["note"] = "saved; it appears in the skills listing of the snapshot from the next session"
        return payload, f"{action} {skill_name} v{skill.meta.version}"


def _skill_payload(skill: Skill, *, body: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "name": skill.meta.name,
        "description": skill.meta.description,
        "status": skill.meta.status.value,
        "version": skill.meta.version,
        "provenance": skill.meta.provenance.value,
    }
    if body:
        payload["body"] = skill.body
    return payload


def _arg(args: Mapping[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed(f"the tool input needs a non-empty string `{name}`")
    return value


def _file_payload(view: FileView, action: str) -> dict[str, Any]:
    return {
        "status": action,
        "path": view.path,
        "used": view.used,
        "limit": view.limit,
        "entries": len(view.entries),
        "note": "saved; it appears in the memory snapshot from the next session",
    }


def _assistant_message(
    content: Sequence[Mapping[str, Any]], *, without_tools: bool, fallback: str
) -> Message:
    """The assistant message as it goes into the history: text and (unless `without_tools`) tool calls only,
    so the stored history stays JSON and valid for the next request. Empty content gets `fallback`."""
    blocks: list[dict[str, Any]] = []
    for block in content:
        if block.get("text"):
            blocks.append({"text": block["text"]})
        elif "toolUse" in block and not without_tools:
            blocks.append({"toolUse": dict(block["toolUse"])})
    if not blocks:
        blocks = [{"text": fallback or "[no reply]"}]
    return {"role": "assistant", "content": blocks}
