"""The source layouts the importer reads, as they are on disk (pure: parsers take text from a `SourceTree`).

What each layout is, from the tools' own documentation and code (facts relied on, not code):

- **OpenClaw** (docs.openclaw.ai "Memory overview"): a workspace (default `~/.openclaw/workspace`) with
  `MEMORY.md` (curated long-term facts and decisions, Markdown), optional `USER.md` (stable preferences and
  profile directives), daily notes `memory/YYYY-MM-DD.md` or `memory/YYYY-MM-DD-<slug>.md` (the slugged ones
  written by the session-memory hook on `/new` or `/reset`), optional `DREAMS.md` (dream diary for human
  review), workspace skills `skills/<name>/SKILL.md`, and guidance files (`AGENTS.md`, `SOUL.md`, `TOOLS.md`,
  `IDENTITY.md`, `HEARTBEAT.md`, `BOOTSTRAP.md`) that are instructions, not memory.
- **Hermes Agent** (NousResearch/hermes-agent `tools/memory_tool.py`): two bounded stores `MEMORY.md` (agent
  notes) and `USER.md` (what the agent knows about the user) under `~/.hermes/memories/`, whose entries are
  separated by the delimiter `"\n§\n"` (a line holding only `§`); skills are `SKILL.md` files with YAML front
  matter under `~/.hermes/skills/<category>/<name>/`.
- **Claude Code** (docs.anthropic.com "Manage Claude's memory"): instruction files `CLAUDE.md` (project root,
  any subdirectory, or `.claude/CLAUDE.md`), `CLAUDE.local.md`, `~/.claude/CLAUDE.md` and modular rules
  `.claude/rules/*.md`; lines `@path/to/file` import other files. Auto memory lives in
  `~/.claude/projects/<project>/memory/`: `MEMORY.md` is an index (its first 200 lines are loaded) pointing at
  topic files (`debugging.md`, ...) that may open with YAML front matter (`name`, `description`, `type`).
- **Mem0** (docs.mem0.ai "Get memory", `Memory.get_all`): memories as JSON objects with `id`, `memory` (the
  text), `hash`, `metadata`, `categories`, `created_at`, `updated_at`, `user_id`, `agent_id`, `app_id`,
  `run_id`, and on the platform `expiration_date`; `get_all` answers `{"results": [...]}` (v1.1) or a bare list
  (v1.0). Files `*.json` holding either, or JSONL with one memory per line.
- **JSONL chat logs** (generic): one message per line with `role`, `content` (a string, or a list of
  `{"type": "text", "text": ...}` parts), `timestamp` (ISO 8601 or epoch seconds) and optionally `session_id`
  and `id`/`message_id`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, time
from enum import StrEnum
from typing import Any, NamedTuple

import yaml

from ..errors import ValidationFailed
from ..files.memory_files import DELIMITER
from .model import Inventory, ItemKind, SourceItem
from .ports import SourceTree


class Format(StrEnum):
    OPENCLAW = "openclaw"
    HERMES = "hermes"
    CLAUDE_CODE = "claude-code"
    MEM0 = "mem0"
    JSONL = "jsonl"


RESERVED_FORMATS = ("bundle",)
"""Format names kept for other readers (the export bundle of issue 14, part B)."""


class UnknownLayout(ValidationFailed):
    """The source is not in the named (or any known) layout."""

    code = "unknown_layout"


_DAILY = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})(?:-[A-Za-z0-9._-]+)?\.md$")
_TIME = re.compile(r"^(?:\[)?(\d{1,2}):(\d{2})(?:\])?\b")
_BULLET = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_IMPORT_LINE = re.compile(r"^@\S+$")
_LINK_ONLY = re.compile(r"^\[[^\]]*\]\([^)]*\)\s*(?:[-—–:]\s*.*)?$")
_FENCE = re.compile(r"^(```|~~~)")
_OPENCLAW_GUIDANCE = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md")
_CLAUDE_FILES = ("CLAUDE.md", "CLAUDE.local.md")
_MEM0_TYPES = {"user": "user_preference", "feedback": "user_preference", "project": "project_state"}
_CHAT_ROLES = ("user", "assistant")
_MAX_NAMESPACE_ID = 64


# --------------------------------------------------------------------------- refs and text


def item_ref(path: str, content: str) -> str:
    """A stable id for an item: its path and the hash of its whitespace-normalised text."""
    digest = hashlib.sha256(" ".join(content.split()).encode("utf-8")).hexdigest()[:16]
    return f"{path}#{digest}"


def _unique(items: list[SourceItem]) -> list[SourceItem]:
    """The same text twice in one file gets `~2`, `~3` appended to its ref (refs are unique per source)."""
    seen: dict[str, int] = {}
    result: list[SourceItem] = []
    for item in items:
        count = seen.get(item.ref, 0) + 1
        seen[item.ref] = count
        if count > 1:
            item = _replace_ref(item, f"{item.ref}~{count}")
        result.append(item)
    return result


def _replace_ref(item: SourceItem, ref: str) -> SourceItem:
    return replace(item, ref=ref)


def split_front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """(front matter, body, lines before the body). A file without front matter has `{}`; a malformed block is
    left in the body (it is text, not an error, for a memory note)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, 0
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() == "---":
            try:
                meta = yaml.safe_load("\n".join(lines[1:end])) or {}
            except yaml.YAMLError:
                return {}, text, 0
            if not isinstance(meta, dict):
                return {}, text, 0
            return meta, "\n".join(lines[end + 1 :]), end + 1
    return {}, text, 0


def markdown_entries(text: str, *, skip_links: bool = False) -> list[tuple[int, str, str]]:
    """(1-based line, entry text, section heading) for each entry of a Markdown memory file: every list item
    (with its indented continuation lines) and every paragraph. Headings name the section; fenced code stays
    with the entry it follows; HTML comments, rules, `§` delimiters and `@path` import lines are not entries.
    With `skip_links`, items that are only a link (an index pointing at another file) are left out."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    entries: list[tuple[int, str, str]] = []
    section = ""
    current: list[str] = []
    start = 0
    in_fence = False
    in_comment = False

    def flush() -> None:
        nonlocal current
        body = "\n".join(current).strip()
        if body and not (skip_links and _LINK_ONLY.match(body)):
            entries.append((start, body, section))
        current = []

    for number, raw in enumerate(text.split("\n"), start=1):
        stripped = raw.strip()
        if in_fence:
            current.append(raw)
            if _FENCE.match(stripped):
                in_fence = False
            continue
        if in_comment:
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if _FENCE.match(stripped):
            if not current:
                start = number
            current.append(raw)
            in_fence = True
            continue
        if not stripped or stripped == DELIMITER or re.fullmatch(r"[-*_]{3,}", stripped):
            flush()
            continue
        if _IMPORT_LINE.match(stripped):
            flush()
            continue
        heading = _HEADING.match(stripped)
        if heading:
            flush()
            section = heading.group(2)
            continue
        bullet = _BULLET.match(stripped)
        if bullet and not raw[:1].isspace():
            flush()
            start = number
            current = [bullet.group(1)]
            continue
        if not current:
            start = number
        current.append(stripped if not bullet else raw.rstrip())
    flush()
    return entries


def delimited_entries(text: str) -> list[tuple[int, str]]:
    """(1-based line, entry) of a file whose entries are separated by `§` lines (Hermes' MEMORY.md/USER.md, and
    this service's own): the same entries as `files.memory_files.parse_entries`, with where each starts."""
    result: list[tuple[int, str]] = []
    current: list[str] = []
    start = 1
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        if line.strip() == DELIMITER:
            result.append((start, "\n".join(current)))
            current, start = [], number + 1
        else:
            if not current and not line.strip():
                start = number + 1
            current.append(line)
    result.append((start, "\n".join(current)))
    entries = [(line, entry.strip()) for line, entry in result if entry.strip()]
    return entries


def _entry_items(
    tree: SourceTree,
    path: str,
    kind: ItemKind,
    *,
    file_kind: str | None = None,
    day: datetime | None = None,
    skip_links: bool = False,
    delimited: bool = False,
) -> list[SourceItem]:
    meta, body, offset = split_front_matter(tree.read(path))
    hint = _MEM0_TYPES.get(str(meta.get("type", "")).lower()) if meta else None
    found: list[tuple[int, str, str]]
    if delimited:
        found = [(line + offset, entry, "") for line, entry in delimited_entries(body)]
    else:
        found = [
            (line + offset, entry, section)
            for line, entry, section in markdown_entries(body, skip_links=skip_links)
        ]
    items = []
    for line, content, section in found:
        items.append(
            SourceItem(
                ref=item_ref(path, content),
                kind=kind,
                content=content,
                path=path,
                line=line,
                timestamp=_entry_time(day, content, section),
                file_kind=file_kind,
                section=section,
                hint=hint,
            )
        )
    return items


def _entry_time(day: datetime | None, content: str, section: str) -> datetime | None:
    """A daily note's time: its date, at the `HH:MM` its line or section starts with, if any."""
    if day is None:
        return None
    for text in (content, section):
        match = _TIME.match(text)
        if match and int(match.group(1)) < 24 and int(match.group(2)) < 60:
            return datetime.combine(day.date(), time(int(match.group(1)), int(match.group(2))), UTC)
    return day


def _skill_item(tree: SourceTree, path: str) -> SourceItem | SkippedFile:
    text = tree.read(path)
    meta, body, _ = split_front_matter(text)
    folder = path.rsplit("/", 2)[-2] if path.count("/") >= 1 else ""
    name = skill_slug(str(meta.get("name") or folder))
    if not name:
        return SkippedFile(path, "SKILL.md without a usable name")
    description = str(meta.get("description") or "").strip() or _first_line(body) or name
    return SourceItem(
        ref=item_ref(path, text),
        kind=ItemKind.SKILL,
        content=body.strip() or description,
        path=path,
        skill_name=name,
        skill_description=description,
    )


def skill_slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64].strip("-")
    return slug


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:200]
    return ""


class SkippedFile(NamedTuple):
    path: str
    reason: str


# --------------------------------------------------------------------------- layouts


def _root_prefix(paths: list[str], markers: Callable[[list[str]], bool]) -> str:
    """An archive often wraps the layout in one top-level folder: use it when the layout is not at the root."""
    if markers(paths):
        return ""
    tops = {p.split("/", 1)[0] for p in paths if "/" in p}
    if len(tops) == 1 and all("/" in p for p in paths):
        prefix = tops.pop() + "/"
        if markers([p.removeprefix(prefix) for p in paths]):
            return prefix
    return ""


def _is_openclaw(paths: list[str]) -> bool:
    return any(p in ("MEMORY.md", "USER.md") or _DAILY.match(p) for p in paths)


def _is_hermes(paths: list[str]) -> bool:
    return any(p in ("memories/MEMORY.md", "memories/USER.md") for p in paths)


def _is_claude(paths: list[str]) -> bool:
    return any(
        p.rsplit("/", 1)[-1] in _CLAUDE_FILES
        or p.startswith(".claude/rules/")
        or re.match(r"^(?:\.claude/)?projects/[^/]+/memory/[^/]+\.md$", p)
        for p in paths
    )


def _is_mem0(paths: list[str]) -> bool:
    return any(p.endswith(".json") for p in paths) and not any(p.endswith(".md") for p in paths)


def _is_jsonl(paths: list[str]) -> bool:
    return any(p.endswith(".jsonl") for p in paths) and not any(p.endswith(".md") for p in paths)


_DETECTORS: list[tuple[Format, Callable[[list[str]], bool]]] = [
    (Format.CLAUDE_CODE, _is_claude),
    (Format.HERMES, _is_hermes),
    (Format.OPENCLAW, _is_openclaw),
    (Format.MEM0, _is_mem0),
    (Format.JSONL, _is_jsonl),
]
_DETECTOR = dict(_DETECTORS)
_LOOKED_FOR = {
    Format.OPENCLAW: "MEMORY.md, USER.md or memory/YYYY-MM-DD.md at the workspace root",
    Format.HERMES: "memories/MEMORY.md or memories/USER.md (a Hermes home such as ~/.hermes)",
    Format.CLAUDE_CODE: "CLAUDE.md, CLAUDE.local.md, .claude/rules/*.md or projects/<project>/memory/*.md",
    Format.MEM0: "*.json files of Mem0 memories (no Markdown)",
    Format.JSONL: "*.jsonl chat logs (no Markdown)",
}


def detect(tree: SourceTree) -> Format:
    """The layout of `tree`, checked in a fixed order (most specific first)."""
    paths = tree.paths()
    for fmt, markers in _DETECTORS:
        if markers(paths) or _root_prefix(paths, markers):
            if fmt is Format.MEM0 and not _mem0_files(tree, _root_prefix(paths, markers)):
                continue
            return fmt
    wanted = "; ".join(f"{f.value}: {w}" for f, w in _LOOKED_FOR.items())
    raise UnknownLayout(
        f"{tree.label}: no known layout found among {len(paths)} files (looked for {wanted}); "
        "name the format explicitly or check the path",
        files=len(paths),
    )


def inventory(tree: SourceTree, fmt: Format | str) -> Inventory:
    """Everything the layout finds in `tree`: the items to import and the files it leaves out (with why).
    Raises `UnknownLayout` when `tree` is not in that layout, `ValidationFailed` for a file that cannot be
    parsed (named with its line)."""
    if str(fmt) in RESERVED_FORMATS:
        raise ValidationFailed(f"format {fmt!r} is read by another importer, not this one")
    try:
        fmt = Format(fmt)
    except ValueError:
        known = ", ".join(f.value for f in Format)
        raise ValidationFailed(f"unknown import format {fmt!r}: use one of {known} or auto") from None
    paths = tree.paths()
    prefix = _root_prefix(paths, _DETECTOR[fmt])
    if not _DETECTOR[fmt]([p.removeprefix(prefix) for p in paths if p.startswith(prefix)]):
        raise UnknownLayout(
            f"{tree.label} is not a {fmt.value} source: expected {_LOOKED_FOR[fmt]}", format=fmt.value
        )
    reader = {
        Format.OPENCLAW: _openclaw,
        Format.HERMES: _hermes,
        Format.CLAUDE_CODE: _claude,
        Format.MEM0: _mem0,
        Format.JSONL: _jsonl,
    }[fmt]
    found = Inventory(format=fmt.value)
    view = _Prefixed(tree, prefix)
    for path in view.paths():
        outcome = reader(view, path)
        if outcome is None:
            found.skipped_files.append((path, "not part of the layout"))
        elif isinstance(outcome, SkippedFile):
            found.skipped_files.append((outcome.path, outcome.reason))
        else:
            found.files.append(path)
            found.items.extend(outcome)
    found.items = _unique(found.items)
    if fmt is Format.MEM0 and not found.files:
        raise UnknownLayout(f"{tree.label}: no Mem0 memories found in its JSON files", format=fmt.value)
    return found


class _Prefixed:
    def __init__(self, tree: SourceTree, prefix: str) -> None:
        self._tree = tree
        self._prefix = prefix
        self.label = tree.label

    def paths(self) -> list[str]:
        return [p.removeprefix(self._prefix) for p in self._tree.paths() if p.startswith(self._prefix)]

    def read(self, path: str) -> str:
        return self._tree.read(self._prefix + path)


def _openclaw(tree: SourceTree, path: str) -> list[SourceItem] | SkippedFile | None:
    if path == "MEMORY.md":
        return _entry_items(tree, path, ItemKind.ENTRY, file_kind="memory")
    if path == "USER.md":
        return _entry_items(tree, path, ItemKind.ENTRY, file_kind="user")
    daily = _DAILY.match(path)
    if daily:
        day = datetime(int(daily.group(1)), int(daily.group(2)), int(daily.group(3)), tzinfo=UTC)
        return _entry_items(tree, path, ItemKind.NOTE, day=day)
    if path.startswith("memory/") and path.endswith(".md"):
        return _entry_items(tree, path, ItemKind.NOTE)
    if path.startswith("skills/") and path.endswith("/SKILL.md"):
        return _skill(tree, path)
    if path in _OPENCLAW_GUIDANCE:
        return SkippedFile(path, "agent guidance (instructions), not memory")
    if path == "DREAMS.md":
        return SkippedFile(path, "dream diary for human review; its promoted facts are in MEMORY.md")
    return None


def _hermes(tree: SourceTree, path: str) -> list[SourceItem] | SkippedFile | None:
    name = path.removeprefix("memories/")
    if name in ("MEMORY.md", "USER.md"):
        return _entry_items(
            tree, path, ItemKind.ENTRY, file_kind="memory" if name == "MEMORY.md" else "user", delimited=True
        )
    if path.startswith("skills/") and path.endswith("/SKILL.md"):
        return _skill(tree, path)
    return None


def _claude(tree: SourceTree, path: str) -> list[SourceItem] | SkippedFile | None:
    base = path.rsplit("/", 1)[-1]
    auto = re.match(r"^(?:\.claude/)?projects/[^/]+/memory/([^/]+\.md)$", path)
    if auto:
        if auto.group(1) == "MEMORY.md":
            return _entry_items(tree, path, ItemKind.ENTRY, file_kind="memory", skip_links=True)
        return _entry_items(tree, path, ItemKind.NOTE)
    if base in _CLAUDE_FILES:
        return _entry_items(tree, path, ItemKind.ENTRY, file_kind="memory")
    if re.match(r"^(?:\.claude/)?rules/.+\.md$", path) or path.startswith(".claude/rules/"):
        return _entry_items(tree, path, ItemKind.NOTE)
    if re.match(r"^(?:\.claude/)?skills/[^/]+/SKILL\.md$", path):
        return _skill(tree, path)
    return None


def _skill(tree: SourceTree, path: str) -> list[SourceItem] | SkippedFile:
    found = _skill_item(tree, path)
    return found if isinstance(found, SkippedFile) else [found]


# --------------------------------------------------------------------------- JSON sources


def _mem0_files(tree: SourceTree, prefix: str) -> bool:
    for path in tree.paths():
        if path.startswith(prefix) and path.endswith(".json"):
            try:
                if _mem0_records(json.loads(tree.read(path))) is not None:
                    return True
            except (ValueError, ValidationFailed):
                continue
    return False


def _mem0_records(data: Any) -> list[Any] | None:
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if isinstance(data, list) and (not data or all(isinstance(x, dict) and "memory" in x for x in data)):
        return data
    return None


def _mem0(tree: SourceTree, path: str) -> list[SourceItem] | SkippedFile | None:
    if path.endswith(".jsonl"):
        rows: list[tuple[int | None, Any]] = list(_json_lines(tree, path))
    elif path.endswith(".json"):
        try:
            data = json.loads(tree.read(path))
        except ValueError as error:
            return SkippedFile(path, f"not JSON: {error}")
        records = _mem0_records(data)
        if records is None:
            return SkippedFile(path, "JSON without Mem0 memories (no objects with a 'memory' field)")
        rows = [(None, row) for row in records]
    else:
        return None
    items = []
    for line, row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("memory"), str) or not row["memory"].strip():
            raise ValidationFailed(f"{path}{_at(line)}: a Mem0 memory needs a non-empty 'memory' text")
        content = row["memory"].strip()
        memory_id = str(row.get("id") or "") or None
        items.append(
            SourceItem(
                ref=f"{path}#id:{memory_id}" if memory_id else item_ref(path, content),
                kind=ItemKind.MEMORY,
                content=content,
                path=path,
                line=line,
                message_id=memory_id,
                timestamp=_time(row.get("updated_at") or row.get("created_at"), path, line),
                namespace_suffix=mem0_namespace(row),
                expires_at=_time(row.get("expiration_date"), path, line),
            )
        )
    return items


def mem0_namespace(row: dict[str, Any]) -> str:
    """`/users/<user_id>`, then `/agents/<agent_id>`, then `/runs/<run_id>` for the ids the memory has."""
    parts = []
    for key, segment in (("user_id", "users"), ("agent_id", "agents"), ("run_id", "runs")):
        value = row.get(key)
        if value not in (None, ""):
            parts.append(f"/{segment}/{_namespace_segment(str(value))}")
    return "".join(parts)


def _namespace_segment(value: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", value).strip("-.") or "unknown"
    if not cleaned[0].isalnum():
        cleaned = "x" + cleaned
    return cleaned[:_MAX_NAMESPACE_ID]


def _jsonl(tree: SourceTree, path: str) -> list[SourceItem] | SkippedFile | None:
    if not path.endswith(".jsonl"):
        return None
    items = []
    for line, row in _json_lines(tree, path):
        if not isinstance(row, dict) or "role" not in row or "content" not in row:
            raise ValidationFailed(f"{path}{_at(line)}: a chat turn needs 'role' and 'content'")
        role = str(row["role"])
        content = _text(row["content"], path, line)
        if role not in _CHAT_ROLES or not content:
            continue
        message_id = row.get("id") or row.get("message_id") or row.get("uuid")
        items.append(
            SourceItem(
                ref=f"{path}#id:{message_id}" if message_id else f"{item_ref(path, content)}@L{line}",
                kind=ItemKind.TURN,
                content=content,
                path=path,
                line=line,
                message_id=str(message_id) if message_id else None,
                timestamp=_time(row.get("timestamp") or row.get("created_at"), path, line),
                role=role,
                session_id=str(row.get("session_id") or row.get("sessionId") or "") or None,
            )
        )
    return items


def _json_lines(tree: SourceTree, path: str) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(tree.read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as error:
            raise ValidationFailed(f"{path}:{number}: not a JSON line ({error.args[0][:80]})") from None


def _text(content: Any, path: str, line: int | None) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(str(p) for p in parts).strip()
    raise ValidationFailed(f"{path}{_at(line)}: 'content' must be text or a list of text parts")


def _time(value: Any, path: str, line: int | None) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value > 1e11 else value  # epoch milliseconds
            return datetime.fromtimestamp(seconds, UTC)
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise ValidationFailed(f"{path}{_at(line)}: {value!r} is not a timestamp") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _at(line: int | None) -> str:
    return f":{line}" if line else ""
