"""`SourceTree` over an uploaded archive (zip or tar.gz), read in memory and checked before anything is read.

Refused (422 `unsafe_archive`): absolute member paths, `..` or empty segments, backslashes, NUL, symbolic or
hard links, devices and FIFOs, duplicate paths. Refused (413): more than `max_files` members, a member larger
than `max_file_bytes`, or more than `max_total_bytes` uncompressed (checked on the bytes actually read, so a
member that lies about its size in the header cannot inflate past the cap: a zip bomb stops at the cap).
Only `.md`, `.json` and `.jsonl` members are kept, and every file of a skill folder (one holding a SKILL.md,
as a directory walk keeps them); directories and other files are ignored."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
import zlib

from ..domain.errors import TooLarge, ValidationFailed
from .posix.source_tree import SKIPPED_DIRS, SOURCE_SUFFIXES, decode, in_skill_folder, skill_roots

MAX_FILES = 5_000
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024


class UnsafeArchive(ValidationFailed):
    code = "unsafe_archive"


_ZIP_ENCRYPTED = 0x1
"""General-purpose bit 0 of a zip member: the member is encrypted."""


class ArchiveSourceTree:
    def __init__(
        self,
        data: bytes,
        *,
        name: str = "upload",
        max_files: int = MAX_FILES,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_total_bytes: int = MAX_TOTAL_BYTES,
    ) -> None:
        self.label = name
        self._max_files = max_files
        self._max_file_bytes = max_file_bytes
        self._max_total = max_total_bytes
        self._total = 0
        self._files: dict[str, bytes] = {}
        if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
            self._read_zip(data)
        elif data[:2] == b"\x1f\x8b":
            self._read_tar(data)
        else:
            raise ValidationFailed(
                "the upload is neither a zip nor a tar.gz archive (checked by its first bytes)", name=name
            )

    def paths(self) -> list[str]:
        return sorted(self._files)

    def read(self, path: str) -> str:
        if path not in self._files:
            raise ValidationFailed(f"{path} is not a file of {self.label}", path=path)
        return decode(self._files[path], path)

    # ------------------------------------------------------------------ readers

    def _read_zip(self, data: bytes) -> None:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                self._zip_members(archive)
        except NotImplementedError as error:  # a compression method zipfile cannot read (e.g. deflate64)
            raise ValidationFailed(
                f"the zip archive uses a compression method this service cannot read ({error}): create it "
                "again with the standard deflate method"
            ) from None
        except (zipfile.BadZipFile, zlib.error, EOFError) as error:
            raise ValidationFailed(f"the zip archive is damaged: {error}") from None

    def _zip_members(self, archive: zipfile.ZipFile) -> None:
        members = archive.infolist()
        self._count(len(members))
        roots = skill_roots(info.filename.removeprefix("./") for info in members if not info.is_dir())
        for info in members:
            path = self._check_path(info.filename)
            mode = info.external_attr >> 16
            if mode and stat.S_ISLNK(mode):
                raise UnsafeArchive(f"{info.filename!r} is a symbolic link: links are refused", member=path)
            if info.is_dir() or not _wanted(path, roots):
                continue
            if info.flag_bits & _ZIP_ENCRYPTED:  # zipfile would raise RuntimeError asking for a password
                raise ValidationFailed(
                    f"{info.filename!r} is encrypted: export the archive without a password", member=path
                )
            self._check_size(path, info.file_size)
            with archive.open(info) as handle:
                self._keep(path, handle.read(self._max_file_bytes + 1))

    def _read_tar(self, data: bytes) -> None:
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
                self._tar_members(archive)
        except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
            raise ValidationFailed(f"the tar.gz archive is damaged: {error}") from None

    def _tar_members(self, archive: tarfile.TarFile) -> None:
        members = []
        for count, member in enumerate(archive, start=1):  # counted as read: a member bomb stops at the cap
            self._count(count)
            members.append(member)
        roots = skill_roots(m.name.removeprefix("./") for m in members if m.isfile())
        for member in members:
            if member.isdir() and member.name.rstrip("/") in (".", ""):
                continue  # the archive's own root folder (`tar -C dir .`)
            path = self._check_path(member.name)
            if member.issym() or member.islnk():
                raise UnsafeArchive(f"{member.name!r} is a link: links are refused", member=path)
            if member.isdev() or member.isfifo():
                raise UnsafeArchive(f"{member.name!r} is a device or FIFO", member=path)
            if not member.isfile() or not _wanted(path, roots):
                continue
            self._check_size(path, member.size)
            handle = archive.extractfile(member)
            if handle is not None:
                self._keep(path, handle.read(self._max_file_bytes + 1))

    # ------------------------------------------------------------------ checks

    def _count(self, count: int) -> None:
        if count > self._max_files:
            raise TooLarge(f"the archive has more than {self._max_files:,} members", limit=self._max_files)

    def _check_path(self, name: str) -> str:
        if "\x00" in name or "\\" in name:
            raise UnsafeArchive(
                f"member name {name!r} has a NUL or backslash", member=name.replace("\x00", "\\0")
            )
        if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
            raise UnsafeArchive(f"member {name!r} has an absolute path", member=name)
        path = name.removeprefix("./").rstrip("/")
        segments = path.split("/")
        if any(s in ("", ".", "..") for s in segments):
            raise UnsafeArchive(f"member {name!r} has an empty, '.' or '..' segment", member=name)
        if path in self._files:
            raise UnsafeArchive(f"member {name!r} appears twice", member=name)
        return path

    def _check_size(self, path: str, size: int) -> None:
        if size > self._max_file_bytes:
            raise TooLarge(
                f"{path} is {size:,} bytes; a member may be {self._max_file_bytes:,}",
                limit=self._max_file_bytes,
            )

    def _keep(self, path: str, content: bytes) -> None:
        if len(content) > self._max_file_bytes:
            raise TooLarge(
                f"{path} is larger than {self._max_file_bytes:,} bytes", limit=self._max_file_bytes
            )
        self._total += len(content)
        if self._total > self._max_total:
            raise TooLarge(
                f"the archive unpacks to more than {self._max_total:,} bytes", limit=self._max_total
            )
        self._files[path] = content


def _wanted(path: str, roots: set[str]) -> bool:
    """A source file (or any file of a skill folder) outside the folders a directory walk skips too
    (`node_modules`, `.git`, ...): the same bytes import the same through the CLI (a directory) and the API
    (an archive)."""
    if any(part in SKIPPED_DIRS for part in path.split("/")[:-1]):
        return False
    return path.endswith(SOURCE_SUFFIXES) or in_skill_folder(path, roots)
