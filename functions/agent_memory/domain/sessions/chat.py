"""Chat over a session: the frozen prefix, the history within a budget, and memory tools the model can use.

Every model call of a session sends the same prefix — the tool definitions (fixed per deployment, ordered by
name), then the session's system blocks (base text, memory snapshot, cache point) — so the provider caches it
on the first call and reads it on every later one. Everything that changes from turn to turn (the history,
an elision note or summary, the new message) comes after the cache point, in `messages`. The cache points'
TTLs are the session's fixed TTL, or chosen per turn from the session's rhythm (`cache_ttl.py`).

The tools live in `chat_tools.py`, history trimming and the history cache points in `history.py`.

A turn is persisted only when it completed (tool loop included): a model failure leaves the history as it
was. Memory writes the model made before the failure stay written, like any other API write.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import NotConfigured, TooLarge, ValidationFailed
from ..files.memory_files import MemoryFilesService
from ..memory.service import MemoryService
from ..ports import Clock
from ..skills.service import SkillsService
from .cache_ttl import PromptSizes, TtlChoice, choose_ttls, fixed, previous_end_ttl
from .chat_tools import (
    SKILL_TOOL_NAMES,
    TOOL_NAMES,
    MemoryTools,
    ToolCallOutcome,
    ToolCallStatus,
    ToolContext,
    tool_config,
)
from .config import NO_MODEL_MESSAGE, CacheTtl, ChatConfig, PromptCacheConfig, TurnCost
from .history import (
    MAX_CACHE_POINTS,
    SUMMARY_SYSTEM,
    HistoryPlan,
    assemble_messages,
    cache_point_block,
    plan_history,
    transcript,
    with_cache_points,
)
from .ports import (
    ChatModel,
    Message,
    ModelReply,
    SessionRecord,
    SessionUsage,
    SystemBlock,
    TokenCounter,
    TurnCacheTtl,
    TurnRecord,
    Usage,
)
from .prompt_cache import CharTokenEstimator, PrefixMonitor
from .sessions import SessionService

__all__ = [
    "MAX_CACHE_POINTS",
    "SKILL_TOOL_NAMES",
    "TOOL_NAMES",
    "ChatService",
    "HistoryPlan",
    "ToolCallOutcome",
    "ToolCallStatus",
    "TurnResult",
    "assemble_messages",
    "build_prefix_monitor",
    "cache_point_block",
    "plan_history",
    "tool_config",
    "with_cache_points",
]


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


# --------------------------------------------------------------------------- results


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
    cache_ttl: TtlChoice = field(default_factory=TtlChoice)
    """The TTLs of the turn's cache points."""


@dataclass(frozen=True)
class _TurnTtls:
    choice: TtlChoice
    previous_end: str
    """The TTL marking the previous request's end on the first call."""
    switched: bool


@dataclass
class _Exchange:
    """What a turn's model calls produced."""

    new_messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    reply: ModelReply = field(default_factory=lambda: ModelReply([], ""))
    first_read: int = 0
    outcomes: list[ToolCallOutcome] = field(default_factory=list)
    calls: int = 0
    limit_reached: bool = False


def _fixed_or_default(mode: str) -> CacheTtl:
    return "1h" if mode == "1h" else "5m"


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
        self._tools = MemoryTools(files, memory, self.config, skills)
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
        self._sessions.prompt(session)  # checks the snapshot against its digest before anything is sent
        history = self._sessions.history(tenant, session_id)
        index = len(history)
        current: Message = {"role": "user", "content": [{"text": text}]}
        messages, plan, summary_usage = self._context(history, current)
        tools = tool_config(skills=self._skills is not None)
        # Where the previous request ended: the last kept turn without its final answer (that turn's last
        # call sent everything before the answer and put its cache point there).
        previous_end = len(messages) - 2 if plan.keep and plan.keep[-1] == index - 1 else 0
        ttls = self._ttls(session, history, tools, messages, previous_end)
        system = self._sessions.prompt(session, ttls.choice.system)
        exchange = self._exchange(
            ToolContext(tenant, session, actor, can_write, index), system, tools, messages, previous_end, ttls
        )
        usage = summary_usage.with_write_ttl("5m") + exchange.usage
        cost = self.prompt_cache.cost(self.model_id, usage, ttls.choice.system)
        # Cache breakage: the first call read less than the previous turn left in the cache (the TTL ran out
        # between the turns, or trimming changed the history prefix).
        expected = history[-1].cached_prefix_tokens if history else 0
        shortfall = max(0, expected - exchange.first_read)
        record = self._record(tenant, session_id, index, exchange, usage, cost, ttls, shortfall)
        self._sessions.record_turn(record)
        result = TurnResult(
            session_id=session_id,
            index=index,
            reply="".join(block.get("text", "") for block in exchange.new_messages[-1]["content"]),
            stop_reason=exchange.reply.stop_reason,
            model_id=self.model_id,
            usage=usage,
            cost=cost,
            model_calls=exchange.calls,
            tool_calls=exchange.outcomes,
            sent_turns=len(plan.keep),
            elided_turns=len(plan.elided),
            summarized=bool(plan.elided) and self.config.summarize_history,
            tool_limit_reached=exchange.limit_reached,
            cache_break=shortfall > 0,
            cache_read_shortfall_tokens=shortfall,
            session_usage=session.usage.plus(record),
            cache_ttl=ttls.choice,
        )
        for observer in self._observers:
            observer(result)
        return result

    def _record(
        self,
        tenant: str,
        session_id: str,
        index: int,
        exchange: _Exchange,
        usage: Usage,
        cost: TurnCost,
        ttls: _TurnTtls,
        shortfall: int,
    ) -> TurnRecord:
        last = exchange.reply.usage
        return TurnRecord(
            tenant=tenant,
            session_id=session_id,
            index=index,
            messages=exchange.new_messages,
            usage=usage.as_bedrock(),
            cost_usd=round(cost.usd, 8),
            cost_without_cache_usd=round(cost.usd_without_cache, 8),
            model_id=self.model_id,
            stop_reason=exchange.reply.stop_reason,
            tool_calls=[outcome.as_dict() for outcome in exchange.outcomes],
            created_at=self._clock.now(),
            cached_prefix_tokens=last.cache_read_input_tokens + last.cache_write_input_tokens,
            cache_break=shortfall > 0,
            cache_ttl=TurnCacheTtl(system=ttls.choice.system, history=ttls.choice.history),
            cache_ttl_switch=ttls.switched,
        )

    def _ttls(
        self,
        session: SessionRecord,
        history: Sequence[TurnRecord],
        tools: Mapping[str, Any],
        messages: Sequence[Message],
        previous_end: int,
    ) -> _TurnTtls:
        """This turn's cache-point TTLs (`cache_ttl.choose_ttls`) from the gaps between the session's turns
        and the sizes of the prompt's parts, and the TTL of the previous request's end."""
        mode = session.cache_ttl
        previous: TtlChoice | None = None
        if history:
            stored = history[-1].cache_ttl
            previous = TtlChoice(stored.system, stored.history) if stored else fixed(_fixed_or_default(mode))
        times = [turn.created_at for turn in history] + [self._clock.now()]
        gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(times)]
        system = self._sessions.prompt(session)
        history_tokens = self._estimate.count(messages) if self.config.history_cache_points else 0
        sizes = PromptSizes(
            system=self._estimate.count([], system=system, tool_config=tools),
            history=history_tokens,
            increment=history_tokens // max(1, len(history) + 1),
        )
        profile = self.prompt_cache.profile(self.model_id)
        choice = choose_ttls(
            mode, profile, previous, gaps, sizes, min_horizon=self.config.cache_ttl_horizon_turns
        )
        gap = gaps[-1] if gaps else None
        return _TurnTtls(
            choice=choice,
            previous_end=previous_end_ttl(choice, previous, gap) if previous_end else choice.history,
            switched=previous is not None and choice != previous,
        )

    def _exchange(
        self,
        context: ToolContext,
        system: Sequence[SystemBlock],
        tools: Mapping[str, Any],
        messages: list[Message],
        previous_end: int,
        ttls: _TurnTtls,
    ) -> _Exchange:
        """The turn's model calls: the model answers, or asks for tools, whose results go back to it, up to
        `max_tool_rounds` times."""
        assert self._model is not None
        inference = self._inference_config()
        out = _Exchange(new_messages=[messages[-1]])
        previous_ttl = ttls.previous_end
        for round_number in range(self.config.max_tool_rounds + 1):
            marks = {previous_end: previous_ttl, len(messages): ttls.choice.history}
            request = self._with_history_cache_points(system, messages, tools, marks)
            reply = self._model.converse(
                system=system, messages=request, tool_config=tools, inference_config=inference
            )
            out.calls += 1
            out.usage = out.usage + reply.usage.with_write_ttl(ttls.choice.system)
            out.reply = reply
            if out.calls == 1:
                out.first_read = reply.usage.cache_read_input_tokens
            previous_end, previous_ttl = len(messages), ttls.choice.history
            uses = reply.tool_uses if reply.stop_reason == "tool_use" else []
            if not uses:
                out.new_messages.append(
                    _assistant_message(reply.content, without_tools=True, fallback="[no reply]")
                )
                break
            if round_number == self.config.max_tool_rounds:
                # Unanswered tool calls would make the stored history invalid: keep only the text.
                out.limit_reached = True
                stopped = (
                    f"[stopped: the limit of {self.config.max_tool_rounds} tool rounds per turn was reached]"
                )
                out.new_messages.append(
                    _assistant_message(reply.content, without_tools=True, fallback=stopped)
                )
                break
            assistant = _assistant_message(reply.content, without_tools=False, fallback="")
            results = [self._tools.run(use, context) for use in uses]
            out.outcomes.extend(outcome for _, outcome in results)
            tool_message: Message = {"role": "user", "content": [block for block, _ in results]}
            out.new_messages.extend([assistant, tool_message])
            messages = [*messages, assistant, tool_message]
        return out

    def _with_history_cache_points(
        self,
        system: Sequence[Mapping[str, Any]],
        messages: Sequence[Message],
        tools: Mapping[str, Any],
        marks: Mapping[int, str],
    ) -> list[Message]:
        """The request's messages with a cache point after the first `n` messages for each `n` of `marks`,
        with its TTL (the previous request's end: read; this request's end: written for the next call), each
        only where the prompt up to it reaches the model's minimum cacheable length (below it the provider
        caches nothing, so the cache point would buy nothing)."""
        if not self.config.history_cache_points:
            return list(messages)
        minimum = self.prompt_cache.profile(self.model_id).min_cacheable_tokens
        worth = {
            n: ttl
            for n, ttl in marks.items()
            if n > 0 and self._estimate.count(messages[:n], system=system, tool_config=tools) >= minimum
        }
        return with_cache_points(messages, list(worth), "5m", system=system, ttls=worth)

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
            messages=[{"role": "user", "content": [{"text": transcript(turns, first_number, limit)}]}],
            tool_config=None,
            inference_config={"maxTokens": self.config.summary_max_tokens},
        )
        return reply.text.strip() or "(no summary)", reply.usage


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
