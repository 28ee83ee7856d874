"""The SKILL.md format: YAML front matter fenced by `---` lines, then a Markdown body.

    ---
    name: deploy-checklist
    description: Steps to ship a release safely
    provenance: agent          # agent | human | imported — the curator governs only `agent`
    author: key-123            # the actor who created it
    created: '2026-11-30T12:00:00+00:00'
    updated: '2026-11-30T12:00:00+00:00'
    version: 1
    status: active             # active | stale | archived
    status_since: '2026-11-30T12:00:00+00:00'
    pinned: false              # pinned skills are never changed by the curator
    ---

    # Deploy checklist
    ...

Parsing is strict (PyYAML's safe loader, then a pydantic model that forbids unknown keys): a malformed file
raises `MalformedSkill` naming what is wrong, never a half-read skill. `status_since` is when the current
judgement started (creation, a content change or a status change): the curator counts idle days and
outcomes from it, so a restored or rewritten skill is judged afresh.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

import yaml
from pydantic import ConfigDict, Field, ValidationError, field_validator

from ..errors import AmbiguousMatch, NotFound, ValidationFailed
from ..model import Model

FENCE = "---"
NAME_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
_NAME_RE = re.compile(NAME_PATTERN)
_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
# libyaml's safe loader and dumper when the wheel has them (10x faster: a curator sweep parses every skill).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class MalformedSkill(ValidationFailed):
    """A SKILL.md whose front matter or body breaks the format (422)."""

    code = "malformed_skill"


class Provenance(StrEnum):
    AGENT = "agent"
    HUMAN = "human"
    IMPORTED = "imported"


class SkillStatus(StrEnum):
    ACTIVE = "active"
    STALE = "stale"
    ARCHIVED = "archived"


class SkillMeta(Model):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: Annotated[str, Field(min_length=1, max_length=1024)]
    provenance: Provenance
    author: Annotated[str, Field(min_length=1, max_length=128)]
    created: datetime
    updated: datetime
    version: Annotated[int, Field(ge=1)]
    status: SkillStatus
    status_since: datetime
    pinned: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return validate_name(value)

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        if "\n" in value or "\r" in value:
            raise ValueError("the description is one line")
        return value

    @field_validator("created", "updated", "status_since")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.utcoffset() is None:
            raise ValueError("times need a time zone (for example +00:00)")
        return value


def validate_name(name: object) -> str:
    """A skill name: lower-case letters, digits and inner hyphens, 1–64 characters (it is a directory name)."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValidationFailed(
            f"invalid skill name {name!r}: use 1-64 lower-case letters, digits and hyphens, starting and "
            "ending with a letter or digit (e.g. 'deploy-checklist')",
            name=str(name)[:80],
        )
    return name


def parse(text: str, *, path: str = "SKILL.md") -> tuple[SkillMeta, str]:
    """Front matter and body of a SKILL.md; `MalformedSkill` says what is wrong."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines or lines[0].strip() != FENCE:
        raise MalformedSkill(f"{path} does not start with a '---' front-matter line", path=path)
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == FENCE)
    except StopIteration:
        raise MalformedSkill(f"{path} has no closing '---' line after its front matter", path=path) from None
    try:
        data = yaml.load("\n".join(lines[1:end]), Loader=_LOADER)  # a safe loader (C or Python)
    except yaml.YAMLError as error:
        raise MalformedSkill(f"the front matter of {path} is not valid YAML: {error}", path=path) from None
    if not isinstance(data, dict):
        raise MalformedSkill(f"the front matter of {path} is not a mapping of keys to values", path=path)
    try:
        meta = SkillMeta.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc']) or 'front matter'}: {item['msg']}"
            for item in error.errors()
        )
        raise MalformedSkill(f"the front matter of {path} is invalid: {problems}", path=path) from None
    body = "\n".join(lines[end + 1 :]).strip("\n")
    return meta, body


def render(meta: SkillMeta, body: str) -> str:
    """The canonical SKILL.md text (front matter in a fixed key order, times as quoted ISO strings)."""
    data: dict[str, Any] = meta.model_dump(mode="json")
    front = yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=1_000_000)
    return f"{FENCE}\n{front}{FENCE}\n\n{body.strip(chr(10))}\n"


def patch_section(body: str, heading: str, content: str) -> str:
    """Replace the content under one Markdown heading (up to the next heading of the same or a higher level).
    `heading` is the heading's text, with or without its `#`s; it must name exactly one heading."""
    wanted = _heading_text(heading)
    if not wanted:
        raise ValidationFailed("heading is empty: name the section to replace, e.g. '## Steps'")
    lines = body.split("\n")
    hits = []
    for index, line in enumerate(lines):
        found = _HEADING_RE.match(line)
        if found and found.group(2).strip() == wanted:
            hits.append((index, len(found.group(1))))
    if not hits:
        raise NotFound(
            f"no section headed {wanted!r} in the skill; patch names an existing heading", heading=wanted
        )
    if len(hits) > 1:
        raise AmbiguousMatch(
            f"{len(hits)} sections are headed {wanted!r}; edit the whole skill instead", heading=wanted
        )
    start, level = hits[0]
    end = len(lines)
    for index in range(start + 1, len(lines)):
        found = _HEADING_RE.match(lines[index])
        if found and len(found.group(1)) <= level:
            end = index
            break
    replacement = content.strip("\n").split("\n") if content.strip() else []
    tail = [""] if end < len(lines) else []
    return "\n".join([*lines[: start + 1], *replacement, *tail, *lines[end:]]).strip("\n")


def _heading_text(heading: str) -> str:
    text = heading.strip()
    found = _HEADING_RE.match(text)
    return found.group(2).strip() if found else text
