"""`SourceTree` over a directory on disk (the importer's `agent-memory import <format> <dir>`).

Read-only. Walks the directory without following symbolic links (a link is skipped, never read), keeps the
files an importer can read (`.md`, `.json`, `.jsonl`), leaves out version-control and dependency folders, and
caps the number of files and the bytes read so pointing it at a home directory fails clearly instead of
reading everything. A single file is a tree of one (`chat.jsonl`, `memories.json`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ...domain.errors import TooLarge, ValidationFailed

SOURCE_SUFFIXES = (".md", ".json", ".jsonl")
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
            for directory, dirs, files in os.walk(self._root, followlinks=False):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
                for name in files:
                    full = Path(directory, name)
                    if not name.endswith(SOURCE_SUFFIXES):
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
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValidationFailed(
            f"{path} is not UTF-8 text (byte {error.start}); convert it to UTF-8 first", path=path
        ) from None
