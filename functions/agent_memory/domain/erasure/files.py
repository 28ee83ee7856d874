"""Memory files as the purge sees them: Markdown memory files and daily logs lose the lines that name the
purge (a line is the unit of a memory-file entry); audit files of the dreaming sweep (`.dreams/`) and the
skills curator (`.curator/`) that name it are deleted whole (they are JSON reports: a line cut out of one would
leave it unreadable); namespace and tenant purges delete every file of the namespace (its own files only:
a child namespace's directory is not listed as the parent's).

Skills keep their format: a skill whose directory (its name) names the purge goes whole, every file of it;
a `SKILL.md` (or a stored version of it) keeps its front matter, with a field that names the purge set to
`[purged]` and the body lines that name it removed (a file whose front matter cannot be read loses the lines);
other JSON files (a skill's `changes.json`) keep their structure with the naming strings set to `[purged]`.
A file whose path names the purge is deleted whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

from ..files.memory_files import CURATOR_DIR, DREAMS_DIR, SKILLS_DIR
from ..ports import FileStore
from ..skills.document import MalformedSkill, SkillMeta, parse, render
from .model import REDACTED, EraseScope, StoreFinding, redact_texts

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
        deleted = self._files.delete(tenant, namespace, path)
        prune = getattr(self._files, "prune_purged", None)  # lock files and emptied directories too
        if prune is not None:
            prune(tenant, namespace, path)
        return deleted


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
                if path.startswith(AUDIT_PREFIXES) or scope.names(path):
                    found.append((namespace, path, None))
                    continue
                lines = [n for n, line in enumerate(text.split("\n"), start=1) if scope.names(line)]
                # Content that spans lines (a multi-line memory) names the file but no single line: whole file.
                found.append((namespace, path, lines or None))
            found.extend(self._skill_dirs(scope, namespace, {p for ns, p, _ in found if ns == namespace}))
        return found

    def _skill_dirs(self, scope: EraseScope, namespace: str, seen: set[str]) -> list[tuple[str, str, None]]:
        """Every file of a skill whose directory names the purge (whatever its files hold)."""
        if scope.in_scope_namespace(namespace):
            return []
        return [
            (namespace, path, None)
            for path in self._files.list(scope.tenant, namespace, f"{SKILLS_DIR}/")
            if path not in seen and scope.names(path.split("/")[1])
        ]

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

            def purged(current: str | None, path: str = path) -> str:
                # Re-evaluated under the file's lock: lines written since the walk are judged too.
                return purge_text(scope, path, current or "")

            self._files.update(scope.tenant, namespace, path, purged)
            erased += len(lines)
        return erased


def purge_text(scope: EraseScope, path: str, text: str) -> str:
    """`text` of the file at `path` without what names the purge, in the file's own format."""
    if path.endswith(".json"):
        try:
            document = json.loads(text)
        except ValueError:
            return _without_lines(scope, text)
        return json.dumps(redact_texts(document, scope)[0], indent=2, ensure_ascii=False)
    if path.startswith(f"{SKILLS_DIR}/") and text.startswith("---"):
        try:
            meta, body = parse(text, path=path)
        except MalformedSkill:
            return _without_lines(scope, text)
        return render(_redacted_meta(scope, meta), _without_lines(scope, body))
    return _without_lines(scope, text)


def _without_lines(scope: EraseScope, text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not scope.names(line))


def _redacted_meta(scope: EraseScope, meta: SkillMeta) -> SkillMeta:
    """The front matter with every text field that names the purge set to `[purged]` (the name cannot: a
    skill whose name names the purge is deleted whole)."""
    update = {
        field: REDACTED for field in ("description", "author") if scope.names(str(getattr(meta, field)))
    }
    return meta.model_copy(update=update) if update else meta
