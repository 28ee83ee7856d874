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
  topic files (`debugging.md`, ...) that may open with YAML front matter (`name`, `description`, `type`); a
  topic file holds one memory (a rule or fact, then its `**Why:**` and `**How to apply:**` lines). Rules may open
  with front matter `paths` (the files they apply to). `~/.claude/projects/` holds one folder per project.
- **Mem0** (docs.mem0.ai "Get memory", `Memory.get_all`): memories as JSON objects with `id`, `memory` (the
  text), `hash`, `metadata`, `categories`, `created_at`, `updated_at`, `user_id`, `agent_id`, `app_id`,
  `run_id`, and on the platform `expiration_date`; `get_all` answers `{"results": [...]}` (v1.1) or a bare list
  (v1.0). Files `*.json` holding either, or `*.jsonl` with one memory per line.
- **JSONL chat logs** (generic): one message per line with `role`, `content` (a string, or a list of
  `{"type": "text", "text": ...}` parts), `timestamp` (ISO 8601 or epoch seconds) and optionally `session_id`
  and `id`/`message_id`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum

from ..errors import ValidationFailed
from .json_sources import mem0, mem0_files, mem0_namespace
from .markdown import delimited_entries, markdown_entries
from .model import Inventory
from .ports import SourceTree
from .source_items import SkippedFile, item_ref, skill_slug, split_front_matter, unique
from .transcripts import jsonl
from .workspaces import (
    CLAUDE_AUTO,
    CLAUDE_FILES,
    CLAUDE_TRANSCRIPT,
    DAILY,
    OPENCLAW_SESSIONS,
    OPENCLAW_WORKSPACE,
    Found,
    claude,
    hermes,
    openclaw,
)

__all__ = [
    "RESERVED_FORMATS",
    "Format",
    "UnknownLayout",
    "delimited_entries",
    "detect",
    "inventory",
    "item_ref",
    "markdown_entries",
    "mem0_namespace",
    "skill_slug",
    "split_front_matter",
]


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
    def workspace_file(p: str) -> bool:
        return p in ("MEMORY.md", "USER.md") or bool(DAILY.match(p))

    return any(
        workspace_file(p)
        or OPENCLAW_SESSIONS.match(p)
        or ((nested := OPENCLAW_WORKSPACE.match(p)) is not None and workspace_file(nested.group(2)))
        for p in paths
    )


def _is_hermes(paths: list[str]) -> bool:
    return any(re.match(r"^(?:profiles/[^/]+/)?memories/(?:MEMORY|USER)\.md$", p) for p in paths)


def _is_claude(paths: list[str]) -> bool:
    return any(
        p.rsplit("/", 1)[-1] in CLAUDE_FILES
        or re.search(r"(?:^|/)\.claude/rules/", p)
        or CLAUDE_AUTO.match(p)
        or CLAUDE_TRANSCRIPT.match(p)
        for p in paths
    )


def _is_mem0(paths: list[str]) -> bool:
    return any(p.endswith((".json", ".jsonl")) for p in paths) and not any(p.endswith(".md") for p in paths)


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
_READERS: dict[Format, Callable[[SourceTree, str], Found]] = {
    Format.OPENCLAW: openclaw,
    Format.HERMES: hermes,
    Format.CLAUDE_CODE: claude,
    Format.MEM0: mem0,
    Format.JSONL: jsonl,
}
_LOOKED_FOR = {
    Format.OPENCLAW: "MEMORY.md, USER.md or memory/YYYY-MM-DD.md at the workspace root or under workspace/, or "
    "agents/<agent>/sessions/*.jsonl (~/.openclaw)",
    Format.HERMES: "memories/MEMORY.md or memories/USER.md, or profiles/<name>/memories/ (a Hermes home such as "
    "~/.hermes)",
    Format.CLAUDE_CODE: "CLAUDE.md, CLAUDE.local.md, .claude/rules/*.md, projects/<project>/memory/*.md or "
    "projects/<project>/*.jsonl",
    Format.MEM0: "*.json or *.jsonl files of Mem0 memories (no Markdown)",
    Format.JSONL: "*.jsonl chat logs (no Markdown)",
}


def detect(tree: SourceTree) -> Format:
    """The layout of `tree`, checked in a fixed order (most specific first)."""
    paths = tree.paths()
    for fmt, markers in _DETECTORS:
        if markers(paths) or _root_prefix(paths, markers):
            if fmt is Format.MEM0 and not mem0_files(tree, _root_prefix(paths, markers)):
                continue
            return fmt
    wanted = "; ".join(f"{f.value}: {w}" for f, w in _LOOKED_FOR.items())
    raise UnknownLayout(
        f"{tree.label}: no known layout found among {len(paths)} files (looked for {wanted}); "
        "name the format explicitly or check the path",
        files=len(paths),
    )


def inventory(tree: SourceTree, fmt: Format | str) -> Inventory:
    """Everything the layout finds in `tree`: the items to import (a record that cannot be imported is an item
    marked `invalid`, so it is reported) and the files it leaves out (with why). Raises `UnknownLayout` when
    `tree` is not in that layout."""
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
    reader = _READERS[fmt]
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
    found.items = unique(found.items)
    if fmt is Format.MEM0 and not found.files:
        why = "; ".join(f"{path}: {reason}" for path, reason in found.skipped_files[:5])
        raise UnknownLayout(
            f"{tree.label}: no Mem0 memories found in its JSON files{f' ({why})' if why else ''}",
            format=fmt.value,
        )
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
