"""Markdown memory files of a namespace (DESIGN §2 "Memory files").

`MEMORY.md` (agent notes) and `USER.md` (user profile) are lists of entries separated by a delimiter line
`§`. Caps are in characters of the file as it would be written, so they hold across models and scripts
(Chinese text counts one per character, not three bytes). Every state-dependent check (duplicate, match,
cap) runs inside the file store's locked `update` callback, so two concurrent writers can never both pass a
cap check.

The daily log `memory/YYYY-MM-DD.md` is append-only; `skills/<name>/SKILL.md` is listed here and written by
the skills wing (`domain/skills/`). The path rules are in `paths.py`, the entry format in `entries.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from enum import StrEnum

from .. import safety
from ..errors import (
    CapExceeded,
    DuplicateEntry,
    NotFound,
    UnsafeContent,
    ValidationFailed,
)
from ..memory.policy import FileCaps
from ..ports import Clock, FileStore
from ..records import is_valid_namespace, is_valid_tenant
from .entries import (
    DELIMITER,
    ENTRY_SEPARATOR,
    normalise_newlines,
    parse_entries,
    prepare_match,
    preview,
    render_entries,
    select,
    squash,
)
from .paths import (
    ALLOWED_SUFFIXES,
    CURATOR_DIR,
    DAILY_DIR,
    DAILY_RE,
    DREAMS_DIR,
    MAX_PATH_SEGMENTS,
    OWN_FOLDERS,
    SKILL_FILE,
    SKILL_FILE_NAMES,
    SKILL_FILE_SUFFIXES,
    SKILLS_DIR,
    is_own_path,
    is_skill_text_name,
    validate_dreams_path,
    validate_file_path,
    validate_namespace_folder,
    validate_path_prefix,
)

__all__ = [
    # re-exported: the path rules and the entry format were split out of this module (issue 31)
    "ALLOWED_SUFFIXES",
    "CURATOR_DIR",
    "DAILY_DIR",
    "DELIMITER",
    "DREAMS_DIR",
    "ENTRY_SEPARATOR",
    "MAX_PATH_SEGMENTS",
    "OWN_FOLDERS",
    "SKILLS_DIR",
    "SKILL_FILE",
    "SKILL_FILE_NAMES",
    "SKILL_FILE_SUFFIXES",
    "FileKind",
    "FileView",
    "MemoryFilesService",
    "is_own_path",
    "is_skill_text_name",
    "parse_entries",
    "render_entries",
    "validate_dreams_path",
    "validate_file_path",
    "validate_namespace_folder",
    "validate_path_prefix",
]


class FileKind(StrEnum):
    MEMORY = "memory"
    USER = "user"


_KIND_PATHS: dict[FileKind, str] = {FileKind.MEMORY: "MEMORY.md", FileKind.USER: "USER.md"}


@dataclass(frozen=True)
class FileView:
    """One entry file as the agent sees it: its entries, raw text and how much of the cap it uses."""

    kind: str
    path: str
    entries: list[str]
    text: str
    used: int
    limit: int

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


# --------------------------------------------------------------------------- service


class MemoryFilesService:
    """Entry files (`MEMORY.md`, `USER.md`), the daily log and read access to skills, for one deployment."""

    def __init__(
        self,
        files: FileStore,
        caps: FileCaps,
        scanner: Callable[[str], str | None],
        clock: Clock,
    ) -> None:
        self._files = files
        self._caps = caps
        self._scan = scanner
        self._clock = clock

    # ------------------------------------------------------------------ entry files

    def read(self, tenant: str, namespace: str, kind: str) -> FileView:
        file_kind, path, limit = self._spec(kind)
        _check_scope(tenant, namespace)
        text = self._files.read(tenant, namespace, path) or ""
        return FileView(file_kind.value, path, parse_entries(text), text, len(text), limit)

    def add(self, tenant: str, namespace: str, kind: str, content: str) -> FileView:
        entry = self._prepare_entry(content)

        def edit(entries: list[str], path: str) -> list[str]:
            if any(squash(existing) == squash(entry) for existing in entries):
                raise DuplicateEntry(
                    f"{path} already has this entry; nothing was added", path=path, entry=preview(entry)
                )
            return [*entries, entry]

        return self._mutate(tenant, namespace, kind, edit)

    def replace(self, tenant: str, namespace: str, kind: str, match: str, content: str) -> FileView:
        """Replace the one entry containing `match` with `content`."""
        entry = self._prepare_entry(content)
        needle = prepare_match(match)

        def edit(entries: list[str], path: str) -> list[str]:
            index = select(entries, needle, path)
            for other, existing in enumerate(entries):
                if other != index and squash(existing) == squash(entry):
                    raise DuplicateEntry(
                        f"{path} already has an entry with this text; remove the old one instead",
                        path=path,
                        entry=preview(entry),
                    )
            return [*entries[:index], entry, *entries[index + 1 :]]

        return self._mutate(tenant, namespace, kind, edit)

    def remove(self, tenant: str, namespace: str, kind: str, match: str, *, exact: bool = False) -> FileView:
        """Remove the one entry containing `match`; with `exact`, the entry whose whole text is `match`
        (whitespace-normalised), so a longer entry that merely contains it is never touched."""
        needle = prepare_match(match)

        def edit(entries: list[str], path: str) -> list[str]:
            if exact:
                index = next((i for i, entry in enumerate(entries) if squash(entry) == needle), None)
                if index is None:
                    raise NotFound(
                        f"no entry is exactly '{preview(needle)}' in {path}", path=path, match=needle
                    )
            else:
                index = select(entries, needle, path)
            return [*entries[:index], *entries[index + 1 :]]

        return self._mutate(tenant, namespace, kind, edit)

    def usage(self, tenant: str, namespace: str) -> dict[str, dict[str, int]]:
        """Used/limit (and entry count) per entry file, for stats and the usage-vs-cap dashboard."""
        usage: dict[str, dict[str, int]] = {}
        for kind in FileKind:
            view = self.read(tenant, namespace, kind.value)
            usage[kind.value] = {"used": view.used, "limit": view.limit, "entries": len(view.entries)}
        return usage

    # ------------------------------------------------------------------ daily log

    def append_daily(self, tenant: str, namespace: str, text: str, at: datetime | None = None) -> str:
        """Append `- HH:MM text` to today's (UTC) `memory/YYYY-MM-DD.md`, creating it with a heading.
        Returns the file's path."""
        _check_scope(tenant, namespace)
        moment = self._clock.now() if at is None else at
        if moment.tzinfo is None:
            raise ValidationFailed("the daily-log time must be timezone-aware (for example UTC)")
        moment = moment.astimezone(UTC)
        body = self._prepare_text(text)
        day = moment.date().isoformat()
        path = f"{DAILY_DIR}/{day}.md"
        first, *rest = body.split("\n")
        # Continuation lines are indented so a multi-line note stays one Markdown list item.
        line = "\n".join(
            [f"- {moment:%H:%M} {first}", *[f"  {part}" if part.strip() else "" for part in rest]]
        )
        limit = self._caps.daily_log

        def change(current: str | None) -> str:
            base = current if current and current.strip() else f"# {day}\n\n"
            if not base.endswith(("\n", "\r")):
                base += "\n"
            new_text = base + line + "\n"
            if len(new_text) > limit:
                raise CapExceeded(
                    f"{path} would be {len(new_text):,}/{limit:,} characters; the daily log for {day} is "
                    "full. Keep durable facts in MEMORY.md instead, or continue in the next day's log",
                    path=path,
                    used=len(current or ""),
                    limit=limit,
                    would_be=len(new_text),
                )
            return new_text

        self._files.update(tenant, namespace, path, change)
        return path

    def read_daily(self, tenant: str, namespace: str, day: date | str) -> str:
        _check_scope(tenant, namespace)
        iso = _parse_day(day)
        text = self._files.read(tenant, namespace, f"{DAILY_DIR}/{iso}.md")
        if text is None:
            raise NotFound(f"no daily log for {iso} in {namespace}", date=iso)
        return text

    def list_daily(self, tenant: str, namespace: str) -> list[str]:
        """Dates (YYYY-MM-DD) that have a daily log, oldest first."""
        _check_scope(tenant, namespace)
        days = []
        for path in self._files.list(tenant, namespace, f"{DAILY_DIR}/"):
            found = DAILY_RE.match(path)
            if found:
                days.append(found.group(1))
        return sorted(days)

    # ------------------------------------------------------------------ skills and raw files

    def list_skills(self, tenant: str, namespace: str) -> list[str]:
        """Names of skills that have a `skills/<name>/SKILL.md`, sorted."""
        _check_scope(tenant, namespace)
        names = set()
        for path in self._files.list(tenant, namespace, f"{SKILLS_DIR}/"):
            parts = path.split("/")
            if len(parts) == 3 and parts[2] == SKILL_FILE:
                names.add(parts[1])
        return sorted(names)

    def read_file(self, tenant: str, namespace: str, path: str) -> str:
        """Any allowed file of the namespace (confined to the namespace directory)."""
        _check_scope(tenant, namespace)
        validate_file_path(path)
        text = self._files.read(tenant, namespace, path)
        if text is None:
            raise NotFound(f"no file {path!r} in {namespace}", path=path)
        return text

    # ------------------------------------------------------------------ dreaming audit files

    def write_file(self, tenant: str, namespace: str, path: str, text: str) -> None:
        """Write (replace) a file under `.dreams/` atomically. The sweep's own files only: agent-visible files
        go through the capped, scanned entry methods above."""
        _check_scope(tenant, namespace)
        validate_dreams_path(path)
        self._files.update(tenant, namespace, path, lambda _current: text)

    def update_file(self, tenant: str, namespace: str, path: str, change: Callable[[str | None], str]) -> str:
        """Read-modify-write a file under `.dreams/` under its lock (leases, the promotion ledger)."""
        _check_scope(tenant, namespace)
        validate_dreams_path(path)
        return self._files.update(tenant, namespace, path, change)

    def delete_file(self, tenant: str, namespace: str, path: str) -> bool:
        """Remove a file under `.dreams/` (the retention of old sweep days); False when already absent."""
        _check_scope(tenant, namespace)
        validate_dreams_path(path)
        return self._files.delete(tenant, namespace, path)

    def list_files(self, tenant: str, namespace: str, prefix: str) -> list[str]:
        """Files of the namespace under `prefix` (for example `.dreams/2026-11-30/`)."""
        _check_scope(tenant, namespace)
        validate_path_prefix(prefix)
        return self._files.list(tenant, namespace, prefix)

    # ------------------------------------------------------------------ internals

    def _spec(self, kind: str) -> tuple[FileKind, str, int]:
        try:
            file_kind = FileKind(kind)
        except ValueError:
            valid = ", ".join(k.value for k in FileKind)
            raise ValidationFailed(
                f"unknown memory file kind {kind!r}: use one of {valid}", kind=kind
            ) from None
        limit = self._caps.memory_md if file_kind is FileKind.MEMORY else self._caps.user_md
        return file_kind, _KIND_PATHS[file_kind], limit

    def _mutate(
        self, tenant: str, namespace: str, kind: str, edit: Callable[[list[str], str], list[str]]
    ) -> FileView:
        file_kind, path, limit = self._spec(kind)
        _check_scope(tenant, namespace)

        def change(current: str | None) -> str:
            # Runs under the file lock: entries, match and cap are checked against what is on disk now.
            used = len(current or "")
            new_text = render_entries(edit(parse_entries(current or ""), path))
            would_be = len(new_text)
            # A file a person pushed over its cap may still shrink; it may never grow past the cap.
            if would_be > limit and would_be > used:
                raise CapExceeded(
                    f"{path} would be {would_be:,}/{limit:,} characters (it now holds {used:,}/{limit:,}); "
                    "replace or remove existing entries to make room, or shorten the new text",
                    path=path,
                    used=used,
                    limit=limit,
                    would_be=would_be,
                )
            return new_text

        text = self._files.update(tenant, namespace, path, change)
        return FileView(file_kind.value, path, parse_entries(text), text, len(text), limit)

    def _prepare_text(self, content: str) -> str:
        if not isinstance(content, str):
            raise ValidationFailed("content must be text")
        # A leading byte-order mark (pasted from an editor) is dropped; other invisible characters are refused.
        text = safety.normalise(normalise_newlines(content).strip()).strip()
        if not text:
            raise ValidationFailed("content is empty: write the note you want to keep")
        rule = self._scan(text)
        if rule is not None:
            raise UnsafeContent(
                f"content refused by the safety scan (rule '{rule}'); rephrase it as a plain note", rule=rule
            )
        return text

    def _prepare_entry(self, content: str) -> str:
        text = self._prepare_text(content)
        if any(line.strip() == DELIMITER for line in text.split("\n")):
            raise ValidationFailed(
                f"an entry may not contain a line that is only '{DELIMITER}': that line separates entries"
            )
        return text


def _check_scope(tenant: str, namespace: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")


def _parse_day(day: date | str) -> str:
    if isinstance(day, date) and not isinstance(day, datetime):
        return day.isoformat()
    if isinstance(day, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        try:
            return date.fromisoformat(day).isoformat()
        except ValueError:
            pass
    raise ValidationFailed(f"invalid date {day!r}: use YYYY-MM-DD", date=str(day))
