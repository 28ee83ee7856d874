"""Markdown memory files of a namespace (DESIGN §2 "Memory files").

`MEMORY.md` (agent notes) and `USER.md` (user profile) are lists of entries separated by a delimiter line
`§`. Caps are in characters of the file as it would be written, so they hold across models and scripts
(Chinese text counts one per character, not three bytes). Every state-dependent check (duplicate, match,
cap) runs inside the file store's locked `update` callback, so two concurrent writers can never both pass a
cap check.

The daily log `memory/YYYY-MM-DD.md` is append-only; `skills/<name>/SKILL.md` is listed here and written by
the skills wing (`domain/skills/`). Path rules live here (pure) and are enforced again by the file-store
adapter, which also resolves symbolic links.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from enum import StrEnum

from .. import safety
from ..errors import (
    AmbiguousMatch,
    CapExceeded,
    DuplicateEntry,
    NotFound,
    PathEscape,
    UnsafeContent,
    ValidationFailed,
)
from ..memory.policy import FileCaps
from ..ports import Clock, FileStore
from ..records import is_valid_namespace, is_valid_tenant

DELIMITER = "§"
ENTRY_SEPARATOR = f"\n{DELIMITER}\n"
DAILY_DIR = "memory"
SKILLS_DIR = "skills"
SKILL_FILE = "SKILL.md"
DREAMS_DIR = ".dreams"
"""The dreaming sweep's audit and state directory. Hidden on purpose: the file store's listings skip hidden
names, so agents listing their files never see it."""
CURATOR_DIR = ".curator"
"""The skills curator's audit and state directory (`domain/skills/curator.py`), hidden like `.dreams/`. These
two are the only leading-dot segments a path may have."""

ALLOWED_SUFFIXES = (".md", ".json")
SKILL_FILE_SUFFIXES = (
    *ALLOWED_SUFFIXES,
    ".txt",
    ".yaml",
    ".yml",
    ".toml",
    ".csv",
    ".tsv",
    ".xml",
    ".html",
    ".css",
    ".py",
    ".sh",
    ".js",
    ".mjs",
    ".ts",
    ".sql",
    ".j2",
    ".rst",
    ".ini",
    ".cfg",
    ".rb",
    ".go",
    ".rs",
    ".java",
    ".kt",
    ".swift",
    ".c",
    ".h",
    ".cpp",
    ".lua",
    ".pl",
    ".r",
    ".ps1",
    ".tf",
    ".graphql",
    ".proto",
    ".svg",
    ".jsonl",
    ".env.example",
)
SKILL_FILE_NAMES = frozenset(
    {"LICENSE", "NOTICE", "COPYING", "README", "CHANGELOG", "AUTHORS", "Makefile", "Dockerfile", "Justfile"}
)
"""Text files a skill folder often holds without a type (a skill's licence, its build file)."""


def is_skill_text_name(name: str) -> bool:
    """A file name a skill folder keeps: a text type of `SKILL_FILE_SUFFIXES` or a name of `SKILL_FILE_NAMES`."""
    base = name.rsplit("/", 1)[-1]
    return base.endswith(SKILL_FILE_SUFFIXES) or base in SKILL_FILE_NAMES


"""What a skill folder keeps beside its SKILL.md (`skills/<name>/references/…`, `scripts/…`, `assets/…`):
text files of these types, so the folder stays whole (a script, a template, a reference table). Binary files
are not kept (the file store holds text)."""
MAX_PATH_SEGMENTS = 8
_SEGMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""A segment starts with a letter or digit: `.`, `..`, hidden, lock and temp files are not addressable."""
_DAILY_RE = re.compile(rf"^{DAILY_DIR}/(\d{{4}}-\d{{2}}-\d{{2}})\.md$")
_PREVIEW_CHARS = 60


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


# --------------------------------------------------------------------------- pure helpers


def validate_file_path(path: str) -> str:
    """Check a namespace-relative POSIX path and return it unchanged.

    Escape attempts (absolute, `..`, `.`, backslash, NUL, empty segment) raise `PathEscape`; names outside the
    allowed alphabet or suffixes raise `ValidationFailed`. Symbolic links are the adapter's job."""
    if not isinstance(path, str) or not path:
        raise ValidationFailed("file path is empty: use a relative path such as 'MEMORY.md'")
    _check_escape(path)
    segments = path.split("/")
    if len(segments) > MAX_PATH_SEGMENTS:
        raise ValidationFailed(f"file path {path!r} is deeper than {MAX_PATH_SEGMENTS} segments")
    for position, segment in enumerate(segments):
        if not _valid_segment(segment, position):
            raise ValidationFailed(
                f"file path {path!r} has an invalid segment {segment!r}: use letters, digits, '.', '_' "
                "or '-', starting with a letter or digit"
            )
    in_skill = segments[0] == SKILLS_DIR and len(segments) >= 3
    suffixes = SKILL_FILE_SUFFIXES if in_skill else ALLOWED_SUFFIXES
    if not (is_skill_text_name(segments[-1]) if in_skill else segments[-1].endswith(suffixes)):
        where = " in a skill folder" if in_skill else ""
        raise ValidationFailed(f"file path {path!r} must end with one of {', '.join(suffixes)}{where}")
    return path


def validate_path_prefix(prefix: str) -> str:
    """Check a listing prefix (`""`, `memory/`, `skills/pr`): a path's escape rules, no suffix rule."""
    if prefix == "":
        return prefix
    _check_escape(prefix.removesuffix("/"))
    for position, segment in enumerate(prefix.removesuffix("/").split("/")):
        if not _valid_segment(segment, position):
            raise ValidationFailed(f"path prefix {prefix!r} has an invalid segment {segment!r}")
    return prefix


OWN_FOLDERS = (DAILY_DIR, SKILLS_DIR)
"""The folders of a namespace's own directory; every other sub-directory is another namespace's."""

_DATE_MD = r"\d{4}-\d{2}-\d{2}\.md"
_OWN_PATH_RE = re.compile(
    rf"^(?:[^/]+|{DAILY_DIR}/{_DATE_MD}|{SKILLS_DIR}/.+|\{DREAMS_DIR}/.+|\{CURATOR_DIR}/.+)$"
)
_NAMESPACE_FILES_RE = re.compile(rf"^(?:MEMORY\.md|USER\.md|{DAILY_DIR}/{_DATE_MD}|{SKILLS_DIR}/[^/]+/.+)$")
"""What a namespace writes at its own directory: a path that ends so below a sub-directory is a
descendant namespace's file."""


def is_own_path(path: str) -> bool:
    """Whether `path` (relative to a namespace's directory) is one of the namespace's own files. Namespaces
    nest on disk (`/a/b/kid` is `a/b/kid/`, `/a/b/skills/deploy` is `a/b/skills/deploy/`): a path is a
    descendant's when, below some sub-directory, it reads like a namespace's own file (`kid/MEMORY.md`,
    `skills/deploy/MEMORY.md`, `skills/memory/2026-12-01.md`). Listing only the namespace's own keeps every
    namespace's files apart: a namespace purge, an export or a listing never takes a child's for the parent's."""
    if not _OWN_PATH_RE.match(path):
        return False
    parts = path.split("/")
    return not any(_NAMESPACE_FILES_RE.match("/".join(parts[cut:])) for cut in range(1, len(parts)))


def validate_namespace_folder(namespace: str) -> str:
    """A namespace segment named like a file (`/a/b/MEMORY.md`) would turn an ancestor's file into a
    directory: refused for memory files."""
    segments = namespace.strip("/").split("/")
    for position, segment in enumerate(segments[1:], start=1):
        if segment.endswith(ALLOWED_SUFFIXES):
            ancestor = "/" + "/".join(segments[:position])
            raise ValidationFailed(
                f"namespace {namespace} cannot hold memory files: its segment {segment!r} is named like a file "
                f"of namespace {ancestor}; use another name for it (records in it are unaffected)",
                namespace=namespace,
                segment=segment,
            )
    return namespace


def _valid_segment(segment: str, position: int) -> bool:
    return bool(_SEGMENT_RE.match(segment)) or (position == 0 and segment in (DREAMS_DIR, CURATOR_DIR))


def validate_dreams_path(path: str) -> str:
    """A path inside `.dreams/` (the dreaming audit directory), checked like any file path."""
    validate_file_path(path)
    if not path.startswith(DREAMS_DIR + "/"):
        raise ValidationFailed(
            f"{path!r} is not under {DREAMS_DIR}/: only the dreaming sweep's files go there"
        )
    return path


def _check_escape(path: str) -> None:
    if "\x00" in path:
        raise PathEscape("file path contains a NUL character", path=path.replace("\x00", "\\0"))
    if "\\" in path:
        raise PathEscape(f"file path {path!r} contains a backslash: use '/' between segments", path=path)
    if path.startswith("/"):
        raise PathEscape(f"file path {path!r} is absolute: use a path relative to the namespace", path=path)
    for segment in path.split("/"):
        if segment == "":
            raise PathEscape(f"file path {path!r} has an empty segment", path=path)
        if segment in (".", ".."):
            raise PathEscape(f"file path {path!r} may not contain '.' or '..' segments", path=path)


def parse_entries(text: str) -> list[str]:
    """Entries of an entry file. Tolerates hand edits: CRLF or CR line ends, blank lines, leading, trailing or
    repeated delimiter lines and a missing trailing newline. Entries are stripped; empty ones are dropped."""
    entries: list[str] = []
    current: list[str] = []
    for line in _normalise_newlines(text).split("\n"):
        if line.strip() == DELIMITER:
            entries.append("\n".join(current).strip())
            current = []
        else:
            current.append(line)
    entries.append("\n".join(current).strip())
    return [entry for entry in entries if entry]


def render_entries(entries: list[str]) -> str:
    """The canonical file text: entries joined by the delimiter line, with one trailing newline."""
    return ENTRY_SEPARATOR.join(entries) + "\n" if entries else ""


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _squash(text: str) -> str:
    """Whitespace-normalised form used for duplicate detection and substring matching."""
    return " ".join(text.split())


def _preview(text: str) -> str:
    flat = _squash(text)
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


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
            if any(_squash(existing) == _squash(entry) for existing in entries):
                raise DuplicateEntry(
                    f"{path} already has this entry; nothing was added", path=path, entry=_preview(entry)
                )
            return [*entries, entry]

        return self._mutate(tenant, namespace, kind, edit)

    def replace(self, tenant: str, namespace: str, kind: str, match: str, content: str) -> FileView:
        """Replace the one entry containing `match` with `content`."""
        entry = self._prepare_entry(content)
        needle = _prepare_match(match)

        def edit(entries: list[str], path: str) -> list[str]:
            index = _select(entries, needle, path)
            for other, existing in enumerate(entries):
                if other != index and _squash(existing) == _squash(entry):
                    raise DuplicateEntry(
                        f"{path} already has an entry with this text; remove the old one instead",
                        path=path,
                        entry=_preview(entry),
                    )
            return [*entries[:index], entry, *entries[index + 1 :]]

        return self._mutate(tenant, namespace, kind, edit)

    def remove(self, tenant: str, namespace: str, kind: str, match: str, *, exact: bool = False) -> FileView:
        """Remove the one entry containing `match`; with `exact`, the entry whose whole text is `match`
        (whitespace-normalised), so a longer entry that merely contains it is never touched."""
        needle = _prepare_match(match)

        def edit(entries: list[str], path: str) -> list[str]:
            if exact:
                index = next((i for i, entry in enumerate(entries) if _squash(entry) == needle), None)
                if index is None:
                    raise NotFound(
                        f"no entry is exactly '{_preview(needle)}' in {path}", path=path, match=needle
                    )
            else:
                index = _select(entries, needle, path)
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
            found = _DAILY_RE.match(path)
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
        text = safety.normalise(_normalise_newlines(content).strip()).strip()
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


def _prepare_match(match: str) -> str:
    needle = _squash(match) if isinstance(match, str) else ""
    if not needle:
        raise ValidationFailed("match is empty: give a substring of the entry to change")
    return needle


def _select(entries: list[str], needle: str, path: str) -> int:
    """Index of the one entry containing `needle` (whitespace-normalised, case-sensitive)."""
    hits = [index for index, entry in enumerate(entries) if needle in _squash(entry)]
    if not hits:
        raise NotFound(f"no entry contains '{_preview(needle)}' in {path}", path=path, match=needle)
    # Hand-edited files may hold identical entries; acting on the first of identical twins is unambiguous.
    if len({_squash(entries[index]) for index in hits}) > 1:
        previews = [_preview(entries[index]) for index in hits]
        listing = "; ".join(f"{n}) '{text}'" for n, text in enumerate(previews, start=1))
        raise AmbiguousMatch(
            f"'{_preview(needle)}' matches {len(hits)} entries in {path}; use a longer substring that "
            f"appears in only one of them: {listing}",
            path=path,
            match=needle,
            count=len(hits),
            previews=previews,
        )
    return hits[0]


def _parse_day(day: date | str) -> str:
    if isinstance(day, date) and not isinstance(day, datetime):
        return day.isoformat()
    if isinstance(day, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        try:
            return date.fromisoformat(day).isoformat()
        except ValueError:
            pass
    raise ValidationFailed(f"invalid date {day!r}: use YYYY-MM-DD", date=str(day))
