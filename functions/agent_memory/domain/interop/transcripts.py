"""Chat transcripts as items: the generic JSONL chat log (`role`, `content` a line), Claude Code session
transcripts (`~/.claude/projects/<project>/<session>.jsonl`: records of `type` user/assistant holding a
`message` with `role` and `content`, each with `uuid`, `sessionId`, `timestamp`), and OpenClaw session logs
(`~/.openclaw/agents/<agent>/sessions/<session>.jsonl`: a `session` header, then records of `type` message
holding a `message` with `role` and content parts).

Only what a person said or the assistant answered in text is a turn: tool calls and results, thinking, slash
command output, sidechain (sub-agent) records and bookkeeping records (summaries, snapshots, model changes)
are not turns. Each turn keeps its session and message id, so every kept memory is traced to both."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .json_sources import BadRecord, invalid_item, json_lines, parse_time
from .model import ItemKind, SourceItem
from .ports import SourceTree
from .source_items import SkippedFile, item_ref

Found = list[SourceItem] | SkippedFile | None

_CHAT_ROLES = ("user", "assistant")
_MESSAGE_TYPES = ("user", "assistant", "message")
_GENERATED = ("<command-name>", "<command-message>", "<local-command-stdout>", "<command-args>", "Caveat: ")
"""User records Claude Code writes itself (slash commands and their output), not something a person said."""


def jsonl(tree: SourceTree, path: str, namespace_suffix: str = "") -> Found:
    if not path.endswith(".jsonl"):
        return None
    items = []
    session: str | None = None
    for index, (line, row) in enumerate(json_lines(tree, path), start=1):
        if isinstance(row, dict) and row.get("type") == "session" and row.get("id"):
            session = str(row["id"])  # OpenClaw's header names the session
            continue
        try:
            item = _turn(path, line, row, session)
        except BadRecord as error:
            item = invalid_item(path, line, index, ItemKind.TURN, str(error), row)
        if item is not None:
            items.append(_suffixed(item, namespace_suffix) if namespace_suffix else item)
    return items


def _suffixed(item: SourceItem, suffix: str) -> SourceItem:
    return replace(item, namespace_suffix=suffix)


def _turn(path: str, line: int, row: Any, session: str | None) -> SourceItem | None:
    """A chat turn; None for a record that is not one (another role, no text, a tool or bookkeeping record)."""
    if isinstance(row, BadRecord):
        raise row
    if not isinstance(row, dict):
        raise BadRecord("a chat turn must be a JSON object")
    message = row.get("message")
    if "type" in row and "role" not in row:
        if row["type"] not in _MESSAGE_TYPES or not isinstance(message, dict):
            return None  # a summary, snapshot, model change, ...: not a turn
        if row.get("isSidechain") or row.get("isMeta"):
            return None
        fields = {**message, **{k: v for k, v in row.items() if k != "message"}}
    elif "role" in row and "content" in row:
        fields = row
    else:
        raise BadRecord("a chat turn needs 'role' and 'content' (or a 'message' holding them)")
    role = str(fields.get("role") or "")
    content = _text(fields.get("content"))
    if role not in _CHAT_ROLES or not content or content.startswith(_GENERATED):
        return None
    message_id = row.get("uuid") or row.get("id") or row.get("message_id") or fields.get("id")
    return SourceItem(
        ref=f"{path}#id:{message_id}" if message_id else f"{item_ref(path, content)}@L{line}",
        kind=ItemKind.TURN,
        content=content,
        path=path,
        line=line,
        message_id=str(message_id) if message_id else None,
        timestamp=parse_time(fields.get("timestamp") or fields.get("created_at"), "timestamp"),
        role=role,
        session_id=str(fields.get("session_id") or fields.get("sessionId") or session or "") or None,
    )


def _text(content: Any) -> str:
    """The text of a message: a string, or its text parts (tool calls, tool results and thinking left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(str(p) for p in parts).strip()
    raise BadRecord("'content' must be text or a list of text parts")
