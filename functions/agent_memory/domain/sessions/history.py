"""The conversation history of a chat turn: which past turns fit the context budget (trimming in steps, so
the cached prefix survives between steps), the messages that are sent, and the cache points on them.

Everything here is a pure function of the stored turns: no clock, no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .ports import Message


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
    messages: Sequence[Message],
    marks: Sequence[int],
    ttl: str,
    *,
    system: Sequence[Mapping[str, Any]] = (),
    ttls: Mapping[int, str] | None = None,
) -> list[Message]:
    """A copy of `messages` with a cache point closing the first `n` messages for each `n` of `marks` (a
    `cachePoint` content block appended to message `n - 1`): the provider caches the prompt up to there.
    Each point has the TTL `ttls[n]` where given, else `ttl`. The system's own cache points count against
    the limit of four: beyond it the latest marks win. The stored history never carries cache points; only
    the request does."""
    room = MAX_CACHE_POINTS - sum(1 for block in system if "cachePoint" in block)
    chosen = sorted({n for n in marks if 0 < n <= len(messages)})[-room:] if room > 0 else []
    out = [dict(message) for message in messages]
    for n in chosen:
        message = out[n - 1]
        point = cache_point_block((ttls or {}).get(n, ttl))
        out[n - 1] = {**message, "content": [*message["content"], point]}
    return out


def transcript(turns: Sequence[Sequence[Message]], first_number: int, limit: int) -> str:
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
