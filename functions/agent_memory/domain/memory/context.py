"""Keyword context of a memory (issue 15): what is indexed with it for keyword search besides its content.

Kept apart from the service: pure functions over the remember inputs of one batch."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from ..records import MAX_CONTEXT_CHARS

if TYPE_CHECKING:
    from .service import RememberInput


def cut_context(text: str) -> str:
    """The context as stored: whitespace collapsed, at most MAX_CONTEXT_CHARS, cut at a word."""
    text = " ".join(text.split())
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS].rsplit(" ", 1)[0]


_SESSION_KEYS = ("session", "session_id", "session_date")


def _session_of(item: RememberInput) -> tuple[object, ...]:
    return (item.namespace, *(item.metadata.get(key) for key in _SESSION_KEYS))


_T = TypeVar("_T")


def batch_context(
    accepted: list[tuple[int, RememberInput, _T]],
) -> list[tuple[int, RememberInput, _T]]:
    """Items without an explicit `context` get the contents of their neighbours in the batch (the item before
    and the item after) that share their namespace and session (metadata `session`, `session_id` and
    `session_date`, where given): an agent storing a conversation's turns in order gets each turn indexed
    with the exchange around it, so "What did Melanie paint?" finds the answer turn "Yes, a lake sunrise!"
    that follows the question naming the painting. Measured on LoCoMo (docs/architecture.md, "Recall")."""
    items = [item for _, item, _ in accepted]
    out = []
    for number, (position, item, extra) in enumerate(accepted):
        if item.context is None:
            session = _session_of(item)
            around = [
                items[other].content
                for other in (number - 1, number + 1)
                if 0 <= other < len(items) and _session_of(items[other]) == session
            ]
            item = replace(item, context=" ".join(around))
        out.append((position, item, extra))
    return out
