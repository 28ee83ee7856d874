"""Memory files as the purge sees them: Markdown memory files and daily logs lose the lines that name the
purge (a line is the unit of a memory-file entry); audit files of the dreaming sweep (`.dreams/`) and the
skills curator (`.curator/`) that name it are deleted whole (they are JSON reports: a line cut out of one would
leave it unreadable); namespace and tenant purges delete every file of the namespace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..files.memory_files import CURATOR_DIR, DREAMS_DIR
from ..ports import FileStore
from .model import EraseScope, StoreFinding

AUDIT_PREFIXES = (f"{DREAMS_DIR}/", f"{CURATOR_DIR}/")


class FileEraser(Protocol):
    """Deletes one file of a namespace for a purge (any path, unlike `FileStore.delete`, which only the
    `.dreams/` retention uses). In AWS (lean) it is the file function's `purge` operation, which names the
    plan and is refused without one."""

    def purge_file(self, tenant: str, namespace: str, path: str, plan_id: str) -> bool: ...


class PosixFileEraser:
    """A file store that can delete any of its files (the local directory, the S3 Files mount)."""

    def __init__(self, files: FileStore) -> None:
        self._files = files

    def purge_file(self, tenant: str, namespace: str, path: str, plan_id: str) -> bool:
        return self._files.delete(tenant, namespace, path)


class MemoryFileLines:
    """The `files` store of a purge."""

    name = "files"

    def __init__(
        self, files: FileStore, eraser: FileEraser, namespaces: Callable[[str], list[str]] | None = None
    ) -> None:
        self._files = files
        self._eraser = eraser
        self._namespaces = namespaces

    def namespaces(self, tenant: str) -> list[str]:
        return list(self._namespaces(tenant)) if self._namespaces else []

    def _paths(self, tenant: str, namespace: str) -> list[str]:
        paths = set(self._files.list(tenant, namespace))
        for prefix in AUDIT_PREFIXES:
            paths.update(self._files.list(tenant, namespace, prefix))
        return sorted(paths)

    def _walk(self, scope: EraseScope) -> list[tuple[str, str, list[int] | None]]:
        """(namespace, path, matching line numbers — None: the whole file goes) for every file concerned."""
        found: list[tuple[str, str, list[int] | None]] = []
        for namespace in scope.namespaces:
            for path in self._paths(scope.tenant, namespace):
                if scope.in_scope_namespace(namespace):
                    found.append((namespace, path, None))
                    continue
                text = self._files.read(scope.tenant, namespace, path)
                if not text or not scope.names(text):
                    continue
                if path.startswith(AUDIT_PREFIXES):
                    found.append((namespace, path, None))
                    continue
                lines = [n for n, line in enumerate(text.split("\n"), start=1) if scope.names(line)]
                # Content that spans lines (a multi-line memory) names the file but no single line: whole file.
                found.append((namespace, path, lines or None))
        return found

    def find(self, scope: EraseScope) -> StoreFinding:
        refs: list[str] = []
        for namespace, path, lines in self._walk(scope):
            if lines is None:
                refs.append(f"{namespace}/{path}")
            else:
                refs.extend(f"{namespace}/{path}:{line}" for line in lines)
        return StoreFinding(store=self.name, items=len(refs), refs=refs)

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        erased = 0
        for namespace, path, lines in self._walk(scope):
            if lines is None:
                erased += int(self._eraser.purge_file(scope.tenant, namespace, path, plan_id))
                continue

            def without_lines(current: str | None) -> str:
                # Re-evaluated under the file's lock: lines written since the walk are judged too.
                kept = [line for line in (current or "").split("\n") if not scope.names(line)]
                return "\n".join(kept)

            self._files.update(scope.tenant, namespace, path, without_lines)
            erased += len(lines)
        return erased
