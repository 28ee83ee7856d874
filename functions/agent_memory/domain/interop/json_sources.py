"""Mem0 exports (`*.json` holding `{"results": [...]}` or a list, or `*.jsonl` with one memory a line), and what
every JSON reader shares. One bad record never fails its file: it becomes an item marked `invalid` (reported as
rejected with its line and reason), and the rest of the file imports."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from ..errors import ValidationFailed
from .model import ItemKind, SourceItem
from .ports import SourceTree
from .source_items import SkippedFile, attribute, item_ref, namespace_segment

Found = list[SourceItem] | SkippedFile | None

_MEM0_METADATA_CHARS = 1024
"""Mem0's `metadata` object is kept as one JSON string up to this size (the record's metadata has a budget)."""


class BadRecord(ValueError):
    """A record of a JSON source that cannot be imported (the message says why)."""


def mem0_files(tree: SourceTree, prefix: str) -> bool:
    """Whether some `.json` or `.jsonl` file under `prefix` holds Mem0 memories. When none does and a JSON file
    could not be read or parsed, that error is raised (a truncated export is named as such, not as an unknown
    layout)."""
    failure: ValidationFailed | None = None
    for path in tree.paths():
        if not path.startswith(prefix) or not path.endswith((".json", ".jsonl")):
            continue
        try:
            text = tree.read(path)
            if path.endswith(".json") and mem0_records(json.loads(text)) is not None:
                return True
            if path.endswith(".jsonl") and _first_row_is_memory(text):
                return True
        except ValidationFailed as error:
            failure = failure or error
        except ValueError as error:
            if path.endswith(".json"):
                failure = failure or ValidationFailed(
                    f"{path}: not valid JSON (truncated or broken?): {error}"
                )
    if failure is not None:
        raise failure
    return False


def _first_row_is_memory(text: str) -> bool:
    for line in text.splitlines():
        if line.strip():
            row = json.loads(line)
            return isinstance(row, dict) and "memory" in row and "role" not in row
    return False


def mem0_records(data: Any) -> list[Any] | None:
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if isinstance(data, list) and (not data or any(isinstance(x, dict) and "memory" in x for x in data)):
        return data
    return None


def mem0(tree: SourceTree, path: str) -> Found:
    rows: list[tuple[int | None, Any]]
    if path.endswith(".jsonl"):
        rows = list(json_lines(tree, path))
        first = next((row for _, row in rows if not isinstance(row, BadRecord)), None)
        if isinstance(first, dict) and "role" in first and "memory" not in first:
            return SkippedFile(path, "a chat log, not Mem0 memories: import it with the jsonl format")
    elif path.endswith(".json"):
        try:
            data = json.loads(tree.read(path))
        except ValueError as error:
            return SkippedFile(path, f"not valid JSON (truncated or broken?): {error}")
        records = mem0_records(data)
        if records is None:
            return SkippedFile(path, "JSON without Mem0 memories (no objects with a 'memory' field)")
        rows = [(None, row) for row in records]
    else:
        return None
    items = []
    for index, (line, row) in enumerate(rows, start=1):
        try:
            items.append(_mem0_item(path, line, row))
        except BadRecord as error:
            items.append(invalid_item(path, line, index, ItemKind.MEMORY, str(error), row))
    return items


def _mem0_item(path: str, line: int | None, row: Any) -> SourceItem:
    if isinstance(row, BadRecord):
        raise row
    if not isinstance(row, dict):
        raise BadRecord("a Mem0 memory must be a JSON object")
    text = row.get("memory")
    if not isinstance(text, str) or not text.strip():
        raise BadRecord("a Mem0 memory needs a non-empty 'memory' text")
    content = text.strip()
    memory_id = str(row.get("id") or "") or None
    return SourceItem(
        ref=f"{path}#id:{memory_id}" if memory_id else item_ref(path, content),
        kind=ItemKind.MEMORY,
        content=content,
        path=path,
        line=line,
        message_id=memory_id,
        timestamp=parse_time(row.get("updated_at") or row.get("created_at"), "updated_at/created_at"),
        namespace_suffix=mem0_namespace(row),
        expires_at=parse_time(row.get("expiration_date"), "expiration_date"),
        attributes=_mem0_attributes(row),
    )


def _mem0_attributes(row: dict[str, Any]) -> dict[str, str]:
    """Mem0's `metadata` (as compact JSON), `categories` (joined) and `app_id`, when present."""
    kept: dict[str, str] = {}
    metadata = row.get("metadata")
    if isinstance(metadata, dict) and metadata:
        encoded = json.dumps(metadata, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
        if len(encoded) > _MEM0_METADATA_CHARS:
            raise BadRecord(
                f"its 'metadata' is {len(encoded):,} characters as JSON; at most {_MEM0_METADATA_CHARS:,} "
                "are kept with a memory: shorten it and import again"
            )
        kept["mem0_metadata"] = encoded
    categories = row.get("categories")
    if isinstance(categories, list) and categories:
        kept["mem0_categories"] = attribute(categories)
    if row.get("app_id") not in (None, ""):
        kept["mem0_app_id"] = attribute(row["app_id"])
    return kept


def mem0_namespace(row: dict[str, Any]) -> str:
    """`/users/<user_id>`, then `/agents/<agent_id>`, then `/runs/<run_id>` for the ids the memory has."""
    parts = []
    for key, segment in (("user_id", "users"), ("agent_id", "agents"), ("run_id", "runs")):
        value = row.get(key)
        if value not in (None, ""):
            parts.append(f"/{segment}/{namespace_segment(str(value))}")
    return "".join(parts)


def invalid_item(
    path: str, line: int | None, index: int, kind: ItemKind, reason: str, row: Any
) -> SourceItem:
    record_id = row.get("id") if isinstance(row, dict) else None
    ref = f"{path}#id:{record_id}" if record_id else f"{path}#{'L' if line else 'item'}{line or index}"
    where = f"line {line}" if line else f"item {index}"
    return SourceItem(
        ref=ref, kind=kind, content="", path=path, line=line, invalid=f"{where}: {reason}"[:500]
    )


def json_lines(tree: SourceTree, path: str) -> Iterator[tuple[int, Any]]:
    """(line, parsed row) for each non-blank line; a line that is not JSON yields a `BadRecord`."""
    for number, line in enumerate(tree.read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as error:
            yield number, BadRecord(f"not a JSON line (truncated?): {error.args[0][:80]}")


def parse_time(value: Any, name: str = "timestamp") -> datetime | None:
    """`value` as an aware time; the error names the field, never its value (a report keeps no source text)."""
    if value in (None, ""):
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds
            return datetime.fromtimestamp(seconds, UTC)
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise BadRecord(f"its {name} is not a time (ISO 8601 or epoch seconds)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
