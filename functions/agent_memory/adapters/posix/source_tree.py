"""`SourceTree` over a directory on disk (the importer's `agent-memory import <format> <dir>`).

Read-only. Walks the directory without following symbolic links (a link is skipped, never read), keeps the
files an importer can read (`.md`, `.json`, `.jsonl`, and every file of a skill folder), leaves out version-control and dependency folders, and
caps the number of files and the bytes read so pointing it at a home directory fails clearly instead of
reading everything. A single file is a tree of one (`chat.jsonl`, `memories.json`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ...domain.errors import TooLarge, ValidationFailed

SOURCE_SUFFIXES = (".md", ".json", ".jsonl")
SKILL_FILE = "SKILL.md"
"""A folder holding one is a skill folder: every file in it and below is listed (any type), so the importer keeps
its `references/`, `scripts/` and `assets/` or lists why not (binary, too big), never drops them unsaid."""


def skill_roots(paths: Iterable[str]) -> set[str]:
    """The folders (`a/skills/x/`) of every SKILL.md among `paths` below the root."""
    return {
        path.rsplit("/", 1)[0] + "/" for path in paths if "/" in path and path.rsplit("/", 1)[1] == SKILL_FILE
    }


def in_skill_folder(path: str, roots: set[str]) -> bool:
    return any(path.startswith(root) for root in roots)


SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".cache"})
MAX_FILES = 20_000
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_TOTAL_BYTES = 512 * 1024 * 1024


class PosixSourceTree:
    def __init__(
        self,
        root: str | Path,
        *,
        max_files: int = MAX_FILES,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_total_bytes: int = MAX_TOTAL_BYTES,
    ) -> None:
        path = Path(root).expanduser()
        try:
            info = path.lstat()
        except OSError as error:
            raise ValidationFailed(f"cannot read {path}: {error.strerror or error}", path=str(path)) from None
        if stat.S_ISLNK(info.st_mode):
            path = (
                path.resolve()
            )  # the root itself may be a link (e.g. ~/.openclaw/workspace); inside, none is followed
            info = path.stat()
        self.label = str(path)
        self._root = path if stat.S_ISDIR(info.st_mode) else path.parent
        self._single = None if stat.S_ISDIR(info.st_mode) else path.name
        self._max_file_bytes = max_file_bytes
        self._sizes: dict[str, int] = {}
        self._walk(max_files, max_total_bytes)

    def _walk(self, max_files: int, max_total_bytes: int) -> None:
        if self._single is not None:
            self._sizes[self._single] = (self._root / self._single).stat().st_size
        else:
            roots: set[str] = set()
            for directory, dirs, files in os.walk(self._root, followlinks=False):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
                here = Path(directory).relative_to(self._root).as_posix()
                if SKILL_FILE in files and here != ".":
                    roots.add(here + "/")  # top-down: a skill folder is seen before what is inside it
                for name in files:
                    full = Path(directory, name)
                    rel = name if here == "." else f"{here}/{name}"
                    if not name.endswith(SOURCE_SUFFIXES) and not in_skill_folder(rel, roots):
                        continue
                    info = full.lstat()
                    if not stat.S_ISREG(info.st_mode):
                        continue  # links, sockets, devices: never read
                    self._sizes[full.relative_to(self._root).as_posix()] = info.st_size
                    if len(self._sizes) > max_files:
                        raise TooLarge(
                            f"{self.label} holds more than {max_files:,} source files: point the import at the "
                            "tool's workspace, not a larger folder",
                            limit=max_files,
                        )
        total = sum(self._sizes.values())
        if total > max_total_bytes:
            raise TooLarge(
                f"{self.label} holds {total:,} bytes of source files; the limit is {max_total_bytes:,}",
                limit=max_total_bytes,
                got=total,
            )

    def paths(self) -> list[str]:
        return sorted(self._sizes)

    def read(self, path: str) -> str:
        if path not in self._sizes:
            raise ValidationFailed(f"{path} is not a file of {self.label}", path=path)
        full = self._root / path
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(full, flags)
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(self._max_file_bytes + 1)
        except OSError as error:
            raise ValidationFailed(f"cannot read {path}: {error.strerror or error}", path=path) from None
        if len(data) > self._max_file_bytes:
            raise TooLarge(
                f"{path} is larger than {self._max_file_bytes:,} bytes", limit=self._max_file_bytes
            )
        return decode(data, path)


def decode(data: bytes, path: str) -> str:
    """UTF-8 text (a BOM dropped); anything else is refused naming what it looks like and how to convert it."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValidationFailed(
            f"{path} is not UTF-8 text (byte {error.start}){_looks_like(data)}", path=path
        ) from None


def _looks_like(data: bytes) -> str:
    """What a file that is not UTF-8 probably is, with the command that converts it."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(data) > 3 and (data[1] == 0) != (data[0] == 0)):
        return ": it looks like UTF-16 (Windows 'Unicode'); convert it first: iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8"
    if b"\x00" in data:
        return ": it looks binary, not text"
    return ": it looks like Latin-1 / Windows-1252; convert it first: iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.utf8"
