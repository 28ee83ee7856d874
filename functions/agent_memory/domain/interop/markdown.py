"""Markdown memory files as items: entries (list items and paragraphs, with their section heading), `§`-delimited
entries (Hermes), and whole files (a Claude Code rule or topic file is one memory)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time

from ..files.memory_files import DELIMITER
from .model import ItemKind, SourceItem
from .ports import SourceTree
from .source_items import attribute, item_ref, split_front_matter

WHOLE_FILE_MAX_CHARS = 4000
"""A rule or topic file up to this size (the service's default content limit) is one memory; a longer one is
split by section, each section keeping its rationale paragraphs."""

_TIME = re.compile(r"^(?:\[)?(\d{1,2}):(\d{2})(?:\])?\b")
_BULLET = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_IMPORT_LINE = re.compile(r"^@\S+$")
_LINK_ONLY = re.compile(r"^\[[^\]]*\]\([^)]*\)\s*(?:[-—–:]\s*.*)?$")
_FENCE = re.compile(r"^(```|~~~)")
_RATIONALE = re.compile(
    r"^(?:\*\*|__)?(?:why|reason|rationale|because|how to apply)\s*:?(?:\*\*|__)?\s*:?\s", re.IGNORECASE
)
"""A paragraph that explains the entry before it (`**Why:** ...`, `How to apply: ...`): it stays with it."""
_PLACEHOLDER = re.compile(r"^(?:\*\*|__)[^*_\n]{1,60}:(?:\*\*|__)\s*(?:[*_]\([^)]*\)[*_])?\s*:?$")
"""A template's empty field (`**Name:**`, `**Pronouns:** *(optional)*`): nothing filled in."""
_INSTRUCTION = re.compile(r"^([*_])(?![*_\s]).*(?<![*_\s])\1$", re.DOTALL)
"""A line in italics only (`*Learn about the person you're helping.*`, `_(What do they care about?)_`): a
template's instruction to the agent."""
_TEMPLATE_TEXT = frozenset(
    {
        # The closing note of OpenClaw's USER.md template (docs.openclaw.ai, reference/templates/USER.md), under
        # its `---` rule: guidance to the agent, kept in every workspace made from the template.
        "the more you know, the better you can help. but remember you're learning about a person, not building "
        "a dossier. respect the difference.",
    }
)
"""Lines a tool's own template writes into every new file (compared lower-cased, dashes and spacing folded)."""
_TYPES = {
    "user": "user_preference",
    "feedback": "user_preference",
    "project": "project_state",
    "reference": "domain_knowledge",
}
"""Claude Code's auto-memory `type:` front matter → the memory type it states."""
_FRONT_MATTER_KEYS = ("name", "description", "paths")


def markdown_entries(text: str, *, skip_links: bool = False) -> list[tuple[int, str, str]]:
    """(1-based line, entry text, section heading) for each entry of a Markdown memory file: every list item
    (with its indented continuation lines) and every paragraph. A rationale paragraph (`**Why:**`, `How to
    apply:`) or a fenced code block joins the entry before it in its section. Headings name the section; fenced code stays with the entry it follows;
    HTML comments, rules, `§` delimiters and `@path` import lines are not entries. With `skip_links`, items
    that are only a link (an index pointing at another file) are left out."""
    parser = _EntryParser(skip_links)
    for number, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        parser.line(number, raw)
    parser.flush()
    return parser.entries


class _EntryParser:
    def __init__(self, skip_links: bool) -> None:
        self.skip_links = skip_links
        self.entries: list[tuple[int, str, str]] = []
        self.section = ""
        self.current: list[str] = []
        self.start = 0
        self.in_fence = False
        self.in_comment = False

    def flush(self) -> None:
        body = "\n".join(self.current).strip()
        self.current = []
        if not body or (self.skip_links and _LINK_ONLY.match(body)):
            return
        last = self.entries[-1] if self.entries else None
        joins = _RATIONALE.match(body) or _FENCE.match(body)
        if joins and last is not None and last[2] == self.section and not not_a_fact(last[1]):
            self.entries[-1] = (last[0], f"{last[1]}\n{body}", last[2])
            return
        self.entries.append((self.start, body, self.section))

    def line(self, number: int, raw: str) -> None:
        stripped = raw.strip()
        if self.in_fence:
            self.current.append(raw)
            self.in_fence = not _FENCE.match(stripped)
            return
        if self.in_comment:
            self.in_comment = "-->" not in stripped
            return
        if stripped.startswith("<!--"):
            self.in_comment = "-->" not in stripped
            return
        if _FENCE.match(stripped):
            self._begin(number)
            self.current.append(raw)
            self.in_fence = True
            return
        if not stripped or stripped == DELIMITER or re.fullmatch(r"[-*_]{3,}", stripped):
            self.flush()
            return
        if _IMPORT_LINE.match(stripped):
            self.flush()
            return
        heading = _HEADING.match(stripped)
        if heading:
            self.flush()
            self.section = heading.group(2)
            return
        bullet = _BULLET.match(stripped)
        if bullet and not raw[:1].isspace():
            self.flush()
            self.start = number
            self.current = [bullet.group(1)]
            return
        self._begin(number)
        self.current.append(stripped if not bullet else raw.rstrip())

    def _begin(self, number: int) -> None:
        if not self.current:
            self.start = number


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
    return [(line, entry.strip()) for line, entry in result if entry.strip()]


def entry_items(
    tree: SourceTree,
    path: str,
    kind: ItemKind,
    *,
    file_kind: str | None = None,
    day: datetime | None = None,
    skip_links: bool = False,
    delimited: bool = False,
) -> list[SourceItem]:
    """One item per entry of the file. With `day` (a dated log), each is a dated episode."""
    meta, body, offset = split_front_matter(tree.read(path))
    hint = _TYPES.get(str(meta.get("type", "")).lower()) if meta else None
    found: list[tuple[int, str, str]]
    if delimited:
        found = [(line + offset, entry, "") for line, entry in delimited_entries(body)]
    else:
        found = [(line + offset, e, s) for line, e, s in markdown_entries(body, skip_links=skip_links)]
    return [
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
            dated=day is not None,
            skip=not_a_fact(content),
        )
        for line, content, section in found
    ]


def not_a_fact(content: str) -> str | None:
    """Why an entry holds no fact (an unfilled template field, a template instruction, a code block alone), or
    None."""
    if _PLACEHOLDER.match(content):
        return "not a fact: an empty template field (nothing filled in after the label)"
    if "\n" not in content and _INSTRUCTION.match(content):
        return "not a fact: a template's instruction in italics"
    if _FENCE.match(content):
        return "not a fact: a code block with no statement before it in its section"
    if _folded(content) in _TEMPLATE_TEXT:
        return "not a fact: the tool's template text (the same in every new file)"
    return None


def _folded(text: str) -> str:
    """Lower case, curly quotes straight, dashes dropped, spacing collapsed: one form for template text."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(re.sub(r"\s[\u2014\u2013-]+\s", " ", f" {text} ").split())


def whole_file_items(tree: SourceTree, path: str, prefix: str) -> list[SourceItem]:
    """A Claude Code rule or auto-memory topic file: one item holding the whole body (its rule, **Why:** and
    **How to apply:**), its front matter's `name`, `description` and `paths` kept as `<prefix>_<key>` metadata
    and its `type` as the memory type. A body over `WHOLE_FILE_MAX_CHARS` is one item per section."""
    meta, body, offset = split_front_matter(tree.read(path))
    hint = _TYPES.get(str(meta.get("type", "")).lower())
    attributes = {
        f"{prefix}_{key}": attribute(meta[key])
        for key in _FRONT_MATTER_KEYS
        if meta.get(key) not in (None, "", [])
    }
    text = body.strip()
    if not text:
        return []
    parts = [(offset + _first_text_line(body), text, "")]
    if len(text) > WHOLE_FILE_MAX_CHARS:
        parts = _sections(body, offset)
    return [
        SourceItem(
            ref=item_ref(path, content),
            kind=ItemKind.TOPIC,
            content=content,
            path=path,
            line=line,
            section=section,
            hint=hint,
            attributes=attributes,
        )
        for line, content, section in parts
    ]


def _sections(body: str, offset: int) -> list[tuple[int, str, str]]:
    """The entries of `body` grouped by section heading (each group one item)."""
    groups: dict[str, tuple[int, list[str]]] = {}
    for line, entry, section in markdown_entries(body):
        _, texts = groups.setdefault(section, (line + offset, []))
        texts.append(entry if _RATIONALE.match(entry) else f"- {entry}")
    return [
        (start, (f"## {section}\n" if section else "") + "\n".join(texts), section)
        for section, (start, texts) in groups.items()
    ]


def _first_text_line(body: str) -> int:
    for number, line in enumerate(body.split("\n"), start=1):
        if line.strip():
            return number
    return 1


def _entry_time(day: datetime | None, content: str, section: str) -> datetime | None:
    """A daily note's time: its date, at the `HH:MM` its line or section starts with, if any."""
    if day is None:
        return None
    for text in (content, section):
        match = _TIME.match(text)
        if match and int(match.group(1)) < 24 and int(match.group(2)) < 60:
            return datetime.combine(day.date(), time(int(match.group(1)), int(match.group(2))), UTC)
    return day
