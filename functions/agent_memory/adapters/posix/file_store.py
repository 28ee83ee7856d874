"""`FileStore` on a POSIX directory: a local folder, or the S3 Files (NFSv4.1) mount at /mnt/memory in AWS.

Layout: `<root>/<tenant>/<namespace without leading slash>/<relative path>`.

Only operations that behave on NFSv4.1 are used: `open` with O_EXCL/O_NOFOLLOW, `fsync`, `rename` (atomic on
the server) and `flock` on a lock file, which the Linux NFS client maps to a whole-file NFSv4 byte-range
lock (unless the mount uses `local_lock=flock`). Lock and temp files are hidden (`.MEMORY.md.lock`,
`.MEMORY.md.<hex>.tmp`): no allowed path can name them and `list` skips them. Lock files are never deleted:
unlinking a lock file while another process waits on it would let two writers lock two different inodes.

Confinement: path syntax is checked by `domain.files.memory_files.validate_file_path`; then the path is resolved
with symbolic links followed and must stay inside the namespace directory (and the namespace directory
itself may not be a link), and the final open refuses links (O_NOFOLLOW). Someone who can already create
symbolic links inside the directory between the check and the open could still race it; neither the API nor
S3 can create links.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ...domain.errors import Conflict, PathEscape, TooLarge, ValidationFailed
from ...domain.files.memory_files import (
    DAILY_DIR,
    MAX_PATH_SEGMENTS,
    OWN_FOLDERS,
    SKILL_FILE,
    SKILLS_DIR,
    is_own_path,
    validate_file_path,
    validate_namespace_folder,
    validate_path_prefix,
)
from ...domain.records import is_valid_namespace, is_valid_tenant
from ...domain.retry import Retry, RetryPolicy

FILE_MODE = 0o640
DIR_MODE = 0o750
LOCK_SUFFIX = ".lock"
TEMP_SUFFIX = ".tmp"

# flock on NFS becomes a POSIX lock, which is owned by the process: two threads of one process would both
# "get" it. A per-process lock per lock file serialises threads; the file lock serialises processes and hosts.
_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


def _thread_lock(key: str) -> threading.Lock:
    with _thread_locks_guard:
        lock = _thread_locks.get(key)
        if lock is None:
            lock = _thread_locks[key] = threading.Lock()
        return lock


class PosixFileStore:
    """Markdown memory files under `root`, one directory per tenant and namespace."""

    def __init__(self, root: Path, *, lock_timeout: float = 30.0, max_bytes: int = 16 * 1024 * 1024) -> None:
        self._root = Path(root)
        self._lock_timeout = lock_timeout
        self._max_bytes = max_bytes

    # ------------------------------------------------------------------ FileStore

    def read(self, tenant: str, namespace: str, path: str) -> str | None:
        if not _has_own_folder(namespace):
            return None  # named like an ancestor's file: it holds no file of its own
        return self._read(self._resolve(tenant, namespace, path), path)

    def update(self, tenant: str, namespace: str, path: str, change: Callable[[str | None], str]) -> str:
        validate_namespace_folder(namespace)
        self._refuse_ancestor_folder(tenant, namespace)
        target = self._resolve(tenant, namespace, path)
        self._make_dirs(target.parent, path)
        with self._locked(target):
            current = self._read(target, path)
            new_text = change(current)
            if not isinstance(new_text, str):
                raise TypeError(f"change() must return str, not {type(new_text).__name__}")
            if new_text != current:
                self._write_atomic(target, new_text)
            return new_text

    def append(self, tenant: str, namespace: str, path: str, text: str) -> None:
        # Rewritten atomically rather than O_APPEND: O_APPEND is not atomic across NFS clients and a crash
        # mid-write would leave half a line; the lock makes the read-modify-write safe.
        self.update(tenant, namespace, path, lambda current: (current or "") + text)

    def delete(self, tenant: str, namespace: str, path: str) -> bool:
        target = self._resolve(tenant, namespace, path)
        if not target.parent.is_dir():
            return False
        with self._locked(target):
            try:
                os.unlink(target)
            except FileNotFoundError:
                return False
            _fsync_directory(target.parent)
            return True

    def prune_purged(self, tenant: str, namespace: str, path: str) -> int:
        """After an erasure deleted `path`: remove its lock file and every directory above it (up to the
        namespace directory) that holds nothing but lock and temp files, so no directory named after purged
        content stays. Only a purge calls this (a writer waiting on a removed lock file would lock a new
        inode; the purge runs when writes to its scope are over). Returns the directories removed."""
        target = self._resolve(tenant, namespace, path)
        ns_dir = self._namespace_dir(tenant, namespace)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target.parent / f".{target.name}{LOCK_SUFFIX}")
        removed = 0
        directory = target.parent
        while directory != ns_dir and directory.is_relative_to(ns_dir) and directory.is_dir():
            entries = list(os.scandir(directory))
            if any(not e.name.startswith(".") or not e.is_file(follow_symlinks=False) for e in entries):
                break
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
            try:
                os.rmdir(directory)
            except OSError:
                break  # written meanwhile
            removed += 1
            directory = directory.parent
        return removed

    def list(self, tenant: str, namespace: str, prefix: str = "") -> list[str]:
        validate_path_prefix(prefix)
        if not _has_own_folder(namespace):
            return []
        ns_dir = self._namespace_dir(tenant, namespace)
        # Walk only the directory the prefix names (e.g. `skills/`), not the whole namespace.
        base_rel = prefix.rpartition("/")[0]
        start = ns_dir / base_rel if base_rel else ns_dir
        if not start.is_dir() or Path(os.path.realpath(start)) != start:
            return []  # absent, or reached through a symbolic link
        found: list[str] = []
        stack = [(start, base_rel)]
        while stack:
            directory, rel_dir = stack.pop()
            with os.scandir(directory) as entries:
                for entry in entries:
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    if entry.is_symlink() or entry.name.startswith("."):
                        continue  # links are not listed; hidden names are lock/temp files
                    if entry.is_dir(follow_symlinks=False):
                        if not rel_dir and entry.name not in OWN_FOLDERS:
                            continue  # another namespace's directory (`/a/b/kid` under `/a/b`)
                        # Below its own folders, files that are not the namespace's own are skipped.
                        if rel.count("/") < MAX_PATH_SEGMENTS - 1:  # else a file below would be too deep
                            stack.append((Path(entry.path), rel))
                    elif (
                        entry.is_file(follow_symlinks=False)
                        and rel.startswith(prefix)
                        and _allowed(rel)
                        and is_own_path(rel)
                    ):
                        found.append(rel)
        return sorted(found)

    # ------------------------------------------------------------------ paths

    def _namespace_dir(self, tenant: str, namespace: str) -> Path:
        """The namespace directory, resolved; it (and its tenant directory) may not be a symbolic link."""
        if not is_valid_tenant(tenant):
            raise ValidationFailed(f"invalid tenant id {tenant!r}")
        if not is_valid_namespace(namespace):
            raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")
        root = Path(os.path.realpath(self._root))
        expected = root / tenant / namespace.lstrip("/")
        if Path(os.path.realpath(expected)) != expected:
            raise PathEscape(
                f"the directory of namespace {namespace} is a symbolic link; refusing to follow it",
                namespace=namespace,
            )
        return expected

    def _refuse_ancestor_folder(self, tenant: str, namespace: str) -> None:
        """A namespace whose directory is an ancestor's skill folder (`/a/b/skills/deploy` while `/a/b` has
        the skill `deploy`) or its daily-log folder (`/a/b/memory` while `/a/b` keeps a daily log) may not
        write there: a key for `/a/b/*` cannot put files into `/a/b`'s own folders."""
        segments = namespace.strip("/").split("/")
        base = Path(os.path.realpath(self._root)) / tenant
        for position in range(1, len(segments)):
            ancestor = base.joinpath(*segments[:position])
            folder, below = segments[position], segments[position + 1 : position + 2]
            taken = (
                folder == SKILLS_DIR and below and (ancestor / folder / below[0] / SKILL_FILE).is_file()
            ) or (
                folder == DAILY_DIR
                and any(is_own_path(f"{DAILY_DIR}/{p.name}") for p in _files_in(ancestor / folder))
            )
            if taken:
                owner = "/" + "/".join(segments[:position])
                raise ValidationFailed(
                    f"namespace {namespace} cannot hold memory files: its directory is a folder of namespace "
                    f"{owner} ({folder}/); use another name for it (records in it are unaffected)",
                    namespace=namespace,
                    owner=owner,
                )

    def _resolve(self, tenant: str, namespace: str, path: str) -> Path:
        validate_file_path(path)
        ns_dir = self._namespace_dir(tenant, namespace)
        real = Path(os.path.realpath(ns_dir / path))
        if not real.is_relative_to(ns_dir):
            raise PathEscape(f"file path {path!r} leads outside the namespace directory", path=path)
        # A link inside the namespace may point to another file of it, but only to one an agent could name.
        rel = real.relative_to(ns_dir).as_posix()
        if rel != path:
            try:
                validate_file_path(rel)
            except ValidationFailed:
                raise PathEscape(
                    f"file path {path!r} resolves to a file that may not be used", path=path
                ) from None
        return real

    def _make_dirs(self, directory: Path, path: str) -> None:
        missing: list[Path] = []
        while not directory.is_dir():
            missing.append(directory)
            directory = directory.parent
        for missing_dir in reversed(missing):
            try:
                os.mkdir(missing_dir, DIR_MODE)
            except FileExistsError:
                if not missing_dir.is_dir():
                    raise ValidationFailed(
                        f"cannot create {path!r}: {missing_dir.name!r} is a file, not a directory", path=path
                    ) from None

    # ------------------------------------------------------------------ I/O

    def _read(self, target: Path, path: str) -> str | None:
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # the final component became a link after resolution
                raise PathEscape(
                    f"file path {path!r} is a symbolic link; refusing to follow it", path=path
                ) from None
            raise
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ValidationFailed(f"{path!r} is not a regular file", path=path)
            data = handle.read(self._max_bytes + 1)
        if len(data) > self._max_bytes:
            raise TooLarge(
                f"{path!r} is larger than {self._max_bytes:,} bytes", path=path, limit=self._max_bytes
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationFailed(
                f"{path!r} is not valid UTF-8 (byte {exc.start}); re-save it as UTF-8", path=path
            ) from None

    def _write_atomic(self, target: Path, text: str) -> None:
        """Temp file in the same directory, fsync, rename over the target, fsync the directory."""
        directory = target.parent
        temp = directory / f".{target.name}.{secrets.token_hex(8)}{TEMP_SUFFIX}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
        _fsync_directory(directory)

    @contextlib.contextmanager
    def _locked(self, target: Path) -> Iterator[None]:
        lock_path = target.parent / f".{target.name}{LOCK_SUFFIX}"
        now = time.monotonic
        deadline = now() + self._lock_timeout
        thread_lock = _thread_lock(str(lock_path))
        if not thread_lock.acquire(timeout=self._lock_timeout):
            raise self._busy(target)
        try:
            fd = os.open(
                lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), FILE_MODE
            )
            try:
                # Poll a non-blocking flock (full-jitter pauses of 1 to 50 ms) until the lock timeout: a writer
                # that died holding the lock costs a timeout (409), not a hang.
                wait = RetryPolicy(
                    max_attempts=1_000_000,
                    base_delay=0.001,
                    max_delay=0.05,
                    deadline=max(deadline - now(), 1e-3),
                )
                Retry(wait).call(
                    lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB),
                    retry_on=(BlockingIOError,),
                    give_up=lambda _: self._busy(target),
                )
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        finally:
            thread_lock.release()

    def _busy(self, target: Path) -> Conflict:
        return Conflict(
            f"{target.name} is being written by another request for more than {self._lock_timeout:g}s; retry",
            path=target.name,
        )


def _files_in(directory: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(directory) if e.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _has_own_folder(namespace: str) -> bool:
    try:
        validate_namespace_folder(namespace)
    except ValidationFailed:
        return False
    return True


def _allowed(rel: str) -> bool:
    try:
        validate_file_path(rel)
    except ValidationFailed:
        return False
    return True


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable. Some file systems refuse fsync on a directory; the rename stays atomic."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EACCES):
            raise
    finally:
        os.close(fd)
