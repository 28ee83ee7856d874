"""Where a namespace's files live and which paths may be addressed (DESIGN §2 "Memory files"): the folder
names, the file types a namespace and a skill folder keep, and the pure path checks. The file-store adapter
enforces them again and also resolves symbolic links.
"""

from __future__ import annotations

import re

from ..errors import PathEscape, ValidationFailed

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
"""What a skill folder keeps beside its SKILL.md (`skills/<name>/references/…`, `scripts/…`, `assets/…`):
text files of these types, so the folder stays whole (a script, a template, a reference table). Binary files
are not kept (the file store holds text)."""
SKILL_FILE_NAMES = frozenset(
    {"LICENSE", "NOTICE", "COPYING", "README", "CHANGELOG", "AUTHORS", "Makefile", "Dockerfile", "Justfile"}
)
"""Text files a skill folder often holds without a type (a skill's licence, its build file)."""


def is_skill_text_name(name: str) -> bool:
    """A file name a skill folder keeps: a text type of `SKILL_FILE_SUFFIXES` or a name of `SKILL_FILE_NAMES`."""
    base = name.rsplit("/", 1)[-1]
    return base.endswith(SKILL_FILE_SUFFIXES) or base in SKILL_FILE_NAMES


MAX_PATH_SEGMENTS = 8
_SEGMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""A segment starts with a letter or digit: `.`, `..`, hidden, lock and temp files are not addressable."""
DAILY_RE = re.compile(rf"^{DAILY_DIR}/(\d{{4}}-\d{{2}}-\d{{2}})\.md$")
"""A daily log's path; its group is the date."""


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
