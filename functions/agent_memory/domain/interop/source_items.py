"""What every layout reader shares: stable item refs, front matter, skills, namespace segments, and the
`SkippedFile` a reader returns for a file it recognises and leaves out."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from typing import Any, NamedTuple

import yaml

from ..errors import TooLarge, ValidationFailed
from ..files.memory_files import is_skill_text_name
from ..skills.config import SkillsConfig
from .model import ItemKind, SourceItem
from .ports import SourceTree

MAX_NAMESPACE_ID = 64
SKILL_FILE = "SKILL.md"
MAX_SKILL_FILE_CHARS = SkillsConfig().max_file_chars
"""A file beside a SKILL.md over this is listed as skipped (the skills service's default cap)."""
_KINDS = "(.md, .txt, .json, .yaml, .py, .sh, .js, … as docs/reference/interop-and-versioning.md lists)"
MAX_ATTRIBUTE_CHARS = 256
"""A source attribute kept as metadata (front matter `description`, Mem0 `app_id`) is cut to this length."""


class SkippedFile(NamedTuple):
    path: str
    reason: str


def item_ref(path: str, content: str) -> str:
    """A stable id for an item: its path and the hash of its whitespace-normalised text."""
    digest = hashlib.sha256(" ".join(content.split()).encode("utf-8")).hexdigest()[:16]
    return f"{path}#{digest}"


def unique(items: list[SourceItem]) -> list[SourceItem]:
    """The same text twice in one file gets `~2`, `~3` appended to its ref (refs are unique per source)."""
    seen: dict[str, int] = {}
    result: list[SourceItem] = []
    for item in items:
        count = seen.get(item.ref, 0) + 1
        seen[item.ref] = count
        if count > 1:
            item = replace(item, ref=f"{item.ref}~{count}")
        result.append(item)
    return result


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


def front_matter_error(text: str) -> str | None:
    """Why a file that opens with `---` has no usable front matter (YAML error with its line, or no closing
    `---`), or None when it has none or a valid one."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None
    end = next((n for n in range(1, min(len(lines), 200)) if lines[n].strip() == "---"), None)
    if end is None:
        return "its front matter has no closing '---' line"
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).split("\n", 1)[0]
        return f"its front matter is not valid YAML{where}: {problem}"
    if meta is not None and not isinstance(meta, dict):
        return "its front matter is not a mapping of keys (name: ..., description: ...)"
    return None


def attribute(value: Any) -> str:
    """A front-matter or export value as one metadata string (lists joined with `, `)."""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value if v not in (None, ""))[:MAX_ATTRIBUTE_CHARS]
    return str(value).strip()[:MAX_ATTRIBUTE_CHARS]


def skill_items(tree: SourceTree, path: str) -> list[SourceItem] | SkippedFile:
    text = tree.read(path)
    broken = front_matter_error(text)
    if broken:
        return [
            SourceItem(
                ref=item_ref(path, text),
                kind=ItemKind.SKILL,
                content="",
                path=path,
                line=1,
                invalid=f"SKILL.md: {broken}; fix it and import again",
            )
        ]
    meta, body, _ = split_front_matter(text)
    folder = path.rsplit("/", 2)[-2] if path.count("/") >= 1 else ""
    name = skill_slug(str(meta.get("name") or folder))
    if not name:
        return SkippedFile(path, "SKILL.md without a usable name")
    description = str(meta.get("description") or "").strip() or first_line(body) or name
    return [
        SourceItem(
            ref=item_ref(path, text),
            kind=ItemKind.SKILL,
            content=body.strip() or description,
            path=path,
            skill_name=name,
            skill_description=description,
        )
    ]


def skill_file_items(tree: SourceTree, path: str) -> list[SourceItem] | None:
    """A file in a skill folder (beside or below its SKILL.md): an item kept in that skill's folder, or one
    listed as skipped (binary, over the size cap, a type a skill folder does not keep). None when no folder
    above it holds a SKILL.md."""
    parts = path.split("/")
    for cut in range(len(parts) - 1, 0, -1):
        root = "/".join(parts[:cut])
        try:
            skill_text = tree.read(f"{root}/{SKILL_FILE}")
        except (ValidationFailed, TooLarge):
            continue
        meta, _, _ = split_front_matter(skill_text)
        name = skill_slug(str(meta.get("name") or parts[cut - 1]))
        return [_skill_file(tree, path, "/".join(parts[cut:]), name)] if name else None
    return None


def _skill_file(tree: SourceTree, path: str, rel: str, name: str) -> SourceItem:
    def item(content: str, skip: str | None = None) -> SourceItem:
        return SourceItem(
            ref=item_ref(path, content),
            kind=ItemKind.SKILL_FILE,
            content=content,
            path=path,
            skill_name=name,
            skill_file=rel,
            skip=skip,
        )

    try:
        text = tree.read(path)
    except TooLarge as error:
        return item(rel, f"skill file not kept: {error.message}")
    except ValidationFailed:
        return item(rel, "skill file not kept: binary (not UTF-8 text); a skill folder keeps text files")
    if "\x00" in text:
        return item(rel, "skill file not kept: binary (NUL bytes); a skill folder keeps text files")
    if not is_skill_text_name(rel):
        base = rel.rsplit("/", 1)[-1]
        kind = f"a {base.rsplit('.', 1)[1]!r} file" if "." in base else "a file without a type"
        return item(
            rel, f"skill file not kept: {kind}; a skill folder keeps text files of known types {_KINDS}"
        )
    if len(text) > MAX_SKILL_FILE_CHARS:
        reason = f"skill file not kept: {len(text):,} characters, over the {MAX_SKILL_FILE_CHARS:,} a skill file keeps"
        return item(rel, reason)
    return item(text)


def skill_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64].strip("-")


def first_line(text: str) -> str:
    for line in text.split("\n"):
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:200]
    return ""


def namespace_segment(value: str) -> str:
    """`value` as one namespace segment: letters, digits, `.`, `_`, `-`; starting with a letter or digit."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", value).strip("-.") or "unknown"
    if not cleaned[0].isalnum():
        cleaned = "x" + cleaned
    return cleaned[:MAX_NAMESPACE_ID]


def at(line: int | None) -> str:
    return f":{line}" if line else ""
