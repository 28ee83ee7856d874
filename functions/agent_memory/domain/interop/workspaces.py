"""Readers of the Markdown layouts: an OpenClaw workspace, a Hermes home, Claude Code projects and home.
Each takes one path of the tree and answers its items, a `SkippedFile` (recognised, left out, with why), or
None (not part of the layout)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

from .markdown import entry_items, whole_file_items
from .model import ItemKind, SourceItem
from .ports import SourceTree
from .source_items import SkippedFile, namespace_segment, skill_items

Found = list[SourceItem] | SkippedFile | None

DAILY = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})(?:-[A-Za-z0-9._-]+)?\.md$")
CLAUDE_FILES = ("CLAUDE.md", "CLAUDE.local.md")
CLAUDE_AUTO = re.compile(r"^(?:\.claude/)?projects/([^/]+)/memory/([^/]+\.md)$")
_OPENCLAW_GUIDANCE = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md")


def openclaw(tree: SourceTree, path: str) -> Found:
    if path == "MEMORY.md":
        return entry_items(tree, path, ItemKind.ENTRY, file_kind="memory")
    if path == "USER.md":
        return entry_items(tree, path, ItemKind.ENTRY, file_kind="user")
    daily = DAILY.match(path)
    if daily:
        try:
            day = datetime(int(daily.group(1)), int(daily.group(2)), int(daily.group(3)), tzinfo=UTC)
        except ValueError:
            day = None  # memory/2026-02-30.md: a note, undated
        return entry_items(tree, path, ItemKind.NOTE, day=day)
    if path.startswith("memory/") and path.endswith(".md"):
        return entry_items(tree, path, ItemKind.NOTE)
    if path.startswith("skills/") and path.endswith("/SKILL.md"):
        return skill_items(tree, path)
    if path in _OPENCLAW_GUIDANCE:
        return SkippedFile(path, "agent guidance (instructions), not memory")
    if path == "DREAMS.md":
        return SkippedFile(path, "dream diary for human review; its promoted facts are in MEMORY.md")
    return None


def hermes(tree: SourceTree, path: str) -> Found:
    name = path.removeprefix("memories/")
    if name in ("MEMORY.md", "USER.md"):
        file_kind = "memory" if name == "MEMORY.md" else "user"
        return entry_items(tree, path, ItemKind.ENTRY, file_kind=file_kind, delimited=True)
    if path.startswith("skills/") and path.endswith("/SKILL.md"):
        return skill_items(tree, path)
    return None


def claude(tree: SourceTree, path: str) -> Found:
    """Each auto-memory project (`projects/<project>/`) goes to its own sub-namespace `/projects/<project>`;
    its topic files and the project's rules are one memory each."""
    base = path.rsplit("/", 1)[-1]
    auto = CLAUDE_AUTO.match(path)
    if auto:
        suffix = "/projects/" + namespace_segment(auto.group(1))
        if auto.group(2) == "MEMORY.md":
            items = entry_items(tree, path, ItemKind.ENTRY, file_kind="memory", skip_links=True)
        else:
            items = whole_file_items(tree, path, "claude")
        return [replace(item, namespace_suffix=suffix) for item in items]
    if base in CLAUDE_FILES:
        return entry_items(tree, path, ItemKind.ENTRY, file_kind="memory")
    if re.match(r"^(?:\.claude/)?rules/.+\.md$", path) or path.startswith(".claude/rules/"):
        return whole_file_items(tree, path, "claude")
    if re.match(r"^(?:\.claude/)?skills/[^/]+/SKILL\.md$", path):
        return skill_items(tree, path)
    return None
