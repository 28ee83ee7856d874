"""Keyword context of a memory (issue 15): what is indexed with it for keyword search besides its content.

Kept apart from the service: pure functions over the remember inputs of one batch."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from ..ports import Embedding
from ..records import MAX_CONTEXT_CHARS
from ..text import tokenize

if TYPE_CHECKING:
    from .ports import Lexicon
    from .service import RememberInput


def cut_context(text: str) -> str:
    """The context as stored: whitespace collapsed, at most MAX_CONTEXT_CHARS, cut at a word."""
    text = " ".join(text.split())
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS].rsplit(" ", 1)[0]


_CAPITALISED_RE = re.compile(r"(?<![.!?] )\b[A-Z][a-z]+")
"""A capitalised word that does not open a sentence: a proper name ("went to Tampa"), most of the time."""


def name_kinds(content: str, lexicon: Lexicon | None) -> str:
    """The kinds of the places and things the content names (issue 34, bench/README.md "fifth round"): for
    each capitalised word that does not open the text or a sentence, what the lexicon says it is an instance
    and a part of (`Lexicon.kinds_of_name`: "Tampa" → "city", "Florida", "American state"), so that "Which US
    state did Jolene visit?" finds "I spent a week in Tampa" by its keywords. Empty without a lexicon."""
    if lexicon is None:
        return ""
    names = {match.group().casefold() for match in _CAPITALISED_RE.finditer(content) if match.start()}
    words: dict[str, None] = {}
    for token in tokenize(content):
        if token in names and len(token) > 2:
            words.update(dict.fromkeys(sorted(lexicon.kinds_of_name(token))))
    return " ".join(words)


_SESSION_KEYS = ("session", "session_id", "session_date")


def _session_of(item: RememberInput) -> tuple[object, ...]:
    return (item.namespace, *(item.metadata.get(key) for key in _SESSION_KEYS))


def _in_a_session(item: RememberInput) -> bool:
    return any(item.metadata.get(key) is not None for key in _SESSION_KEYS)


_T = TypeVar("_T")


def batch_context(
    accepted: list[tuple[int, RememberInput, _T]], turns: int = 1
) -> list[tuple[int, RememberInput, _T]]:
    """Items without an explicit `context` get the contents of their neighbours in the batch (up to `turns`
    items before and `turns` after, in batch order) that share their namespace and session (metadata
    `session`, `session_id` and `session_date`, where given): an agent storing a conversation's turns in order
    gets each turn indexed with the exchange around it, so "What did Melanie paint?" finds the answer turn
    "Yes, a lake sunrise!" that follows the question naming the painting. `turns` is
    `MemoryPolicy.keyword_context_turns` (2 by default; measured on LoCoMo in bench/README.md)."""
    items = [item for _, item, _ in accepted]
    out = []
    for number, (position, item, extra) in enumerate(accepted):
        if item.context is None:
            session = _session_of(item)
            around = [
                items[other].content
                for other in range(number - turns, number + turns + 1)
                if other != number and 0 <= other < len(items) and _session_of(items[other]) == session
            ]
            item = replace(item, context=" ".join(around))
        out.append((position, item, extra))
    return out


def turn_vectors(
    accepted: Sequence[tuple[int, RememberInput, object]], vectors: Sequence[Embedding], weight: float
) -> list[Embedding]:
    """The vectors indexed for a batch's items: an item of a conversation (metadata `session`, `session_id` or
    `session_date` given) gets its own content's vector plus `weight` × the mean vector of its neighbouring
    items of the same session, normalised; other items keep their own (issue 34, docs/decisions/recall-focus.md).

    A turn such as "Thanks! I have lots of reminders of it - a way to escape reality." says what it is about
    only with the turn before it; the keyword half has that turn in its context (`batch_context`), and this
    gives the vector half the same, at no extra embedding (the neighbours' vectors are in the batch already)."""
    if weight <= 0:
        return list(vectors)
    items = [item for _, item, _ in accepted]
    out: list[Embedding] = []
    for number, (item, vector) in enumerate(zip(items, vectors, strict=True)):
        session = _session_of(item)
        around = [
            vectors[other]
            for other in (number - 1, number + 1)
            if 0 <= other < len(items) and _in_a_session(item) and _session_of(items[other]) == session
        ]
        if not around:
            out.append(vector)
            continue
        mixed = [
            value + weight * sum(neighbour[i] for neighbour in around) / len(around)
            for i, value in enumerate(vector)
        ]
        norm = math.sqrt(math.fsum(value * value for value in mixed)) or 1.0
        out.append(Embedding([value / norm for value in mixed], vector.identity))
    return out
