"""Readers of the agent tools' layouts: an OpenClaw workspace or state directory, a Hermes home (with
profiles), Claude Code projects and home. Each takes one path of the tree and answers its items, a `SkippedFile`
(recognised, left out, with why), or None (not part of the layout).

Roots as people have them: `~/.openclaw` holds `workspace/` (and `workspace-<agent>/` for other agents) and
`agents/<agent>/sessions/*.jsonl`; `~/.hermes` holds `memories/`, `skills/` and `profiles/<name>/` with the same
inside; `~/.claude` holds `CLAUDE.md` and `projects/<project>/` with `memory/` and session transcripts. Each other
agent, profile and project goes to its own sub-namespace."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

from .markdown import entry_items, whole_file_items
from .model import ItemKind, SourceItem
from .ports import SourceTree
from .source_items import SkippedFile, namespace_segment, skill_file_items, skill_items
from .transcripts import jsonl

Found = list[SourceItem] | SkippedFile | None

DAILY = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})(?:-[A-Za-z0-9._-]+)?\.md$")
CLAUDE_FILES = ("CLAUDE.md", "CLAUDE.local.md")
CLAUDE_AUTO = re.compile(r"^(?:\.claude/)?projects/([^/]+)/memory/([^/]+\.md)$")
CLAUDE_TRANSCRIPT = re.compile(r"^(?:\.claude/)?projects/([^/]+)/[^/]+\.jsonl$")
OPENCLAW_WORKSPACE = re.compile(r"^workspace(?:-([A-Za-z0-9._-]+))?/(.+)$")
OPENCLAW_SESSIONS = re.compile(r"^agents/([^/]+)/sessions/[^/]+\.jsonl$")
HERMES_PROFILE = re.compile(r"^profiles/([^/]+)/(.+)$")
_OPENCLAW_GUIDANCE = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md")


def openclaw(tree: SourceTree, path: str) -> Found:
    """A workspace's files, at the root or under `workspace/` (`~/.openclaw`); another agent's workspace
    (`workspace-<agent>/`) and sessions go to `/agents/<agent>`."""
    sessions = OPENCLAW_SESSIONS.match(path)
    if sessions:
        agent = sessions.group(1)
        return jsonl(tree, path, "" if agent == "main" else "/agents/" + namespace_segment(agent))
    nested = OPENCLAW_WORKSPACE.match(path)
    if nested:
        found = _workspace_file(tree, path, nested.group(2))
        if nested.group(1) and isinstance(found, list):
            suffix = "/agents/" + namespace_segment(nested.group(1))
            found = [replace(item, namespace_suffix=suffix) for item in found]
        return found
    return _workspace_file(tree, path, path)


def _workspace_file(tree: SourceTree, path: str, name: str) -> Found:
    """`name` is the file's path inside its workspace; `path` where it is in the tree."""
    if name == "MEMORY.md":
        return entry_items(tree, path, ItemKind.ENTRY, file_kind="memory")
    if name == "USER.md":
        return entry_items(tree, path, ItemKind.ENTRY, file_kind="user")
    daily = DAILY.match(name)
    if daily:
        try:
            day = datetime(int(daily.group(1)), int(daily.group(2)), int(daily.group(3)), tzinfo=UTC)
        except ValueError:
            day = None  # memory/2026-02-30.md: a note, undated
        return entry_items(tree, path, ItemKind.NOTE, day=day)
    if name.startswith("memory/") and name.endswith(".md"):
        return entry_items(tree, path, ItemKind.NOTE)
    if name.startswith("skills/") and name.endswith("/SKILL.md"):
        return skill_items(tree, path)
    if name.startswith("skills/"):
        return skill_file_items(tree, path)
    if name in _OPENCLAW_GUIDANCE:
        return SkippedFile(path, "agent guidance (instructions), not memory")
    if name == "DREAMS.md":
        return SkippedFile(path, "dream diary for human review; its promoted facts are in MEMORY.md")
    return None


def hermes(tree: SourceTree, path: str) -> Found:
    """A Hermes home; each `profiles/<name>/` (a home of its own) goes to `/profiles/<name>`."""
    profile = HERMES_PROFILE.match(path)
    if profile:
        found = _hermes_file(tree, path, profile.group(2))
        if isinstance(found, list):
            suffix = "/profiles/" + namespace_segment(profile.group(1))
            found = [replace(item, namespace_suffix=suffix) for item in found]
        return found
    return _hermes_file(tree, path, path)


def _hermes_file(tree: SourceTree, path: str, name: str) -> Found:
    memory = name.removeprefix("memories/")
    if name.startswith("memories/") and memory in ("MEMORY.md", "USER.md"):
        file_kind = "memory" if memory == "MEMORY.md" else "user"
        return entry_items(tree, path, ItemKind.ENTRY, file_kind=file_kind, delimited=True)
    if name.startswith("skills/") and name.endswith("/SKILL.md"):
        return skill_items(tree, path)
    if name.startswith("skills/"):
        return skill_file_items(tree, path)
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
    transcript = CLAUDE_TRANSCRIPT.match(path)
    if transcript:
        return jsonl(tree, path, "/projects/" + namespace_segment(transcript.group(1)))
    if re.search(r"(?:^|/)skills/[^/]+/.+", path) and not path.endswith("/SKILL.md"):
        found = skill_file_items(tree, path)
        if found is not None:
            return found
    if base in CLAUDE_FILES:
        return entry_items(tree, path, ItemKind.ENTRY, file_kind="memory")
    if re.match(r"^(?:\.claude/)?rules/.+\.md$", path) or re.search(r"(?:^|/)\.claude/rules/.+\.md$", path):
        return whole_file_items(tree, path, "claude")
    if re.search(r"(?:^|/)(?:\.claude/)?skills/[^/]+/SKILL\.md$", path):
        return skill_items(tree, path)
    return None
