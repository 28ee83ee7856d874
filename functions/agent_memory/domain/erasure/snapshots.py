"""Named snapshots (domain/versioning, issue 14 part B) as the purge sees them: a snapshot is an immutable
export bundle of one namespace (`.tar.gz`), so one that names the purge is deleted whole (rewriting it would
break its recorded SHA-256); a namespace or tenant purge deletes every snapshot of the namespace."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .model import EraseScope, StoreFinding

MAX_MEMBER_BYTES = 64 * 1024 * 1024


class SnapshotReader(Protocol):
    """The `SnapshotStore` port of domain/versioning, as far as the purge reads it."""

    def list(self, tenant: str, namespace: str) -> Sequence[Any]: ...

    def get(self, tenant: str, namespace: str, name: str) -> tuple[Any, bytes] | None: ...


class SnapshotDeleter(Protocol):
    def delete_snapshot(self, tenant: str, namespace: str, name: str) -> bool: ...


def payload_texts(payload: bytes) -> list[str]:
    """The text of every member of a `.tar.gz` bundle (in memory)."""
    texts: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as archive:
        for member in archive.getmembers():
            if not member.isfile() or member.size > MAX_MEMBER_BYTES:
                continue
            handle = archive.extractfile(member)
            if handle is not None:
                texts.append(handle.read().decode("utf-8", "replace"))
    return texts


class SnapshotBundles:
    name = "snapshots"

    def __init__(
        self, reader: SnapshotReader, deleter: SnapshotDeleter, namespaces: Callable[[str], list[str]]
    ) -> None:
        self._reader = reader
        self._deleter = deleter
        self._namespaces = namespaces

    def _matching(self, scope: EraseScope) -> list[tuple[str, str]]:
        found = []
        namespaces = sorted(set(scope.namespaces) | set(self._namespaces(scope.tenant)))
        for namespace in namespaces:
            for meta in self._reader.list(scope.tenant, namespace):
                if scope.in_scope_namespace(namespace):
                    found.append((namespace, meta.name))
                    continue
                stored = self._reader.get(scope.tenant, namespace, meta.name)
                if stored is not None and any(scope.names(text) for text in payload_texts(stored[1])):
                    found.append((namespace, meta.name))
        return found

    def find(self, scope: EraseScope) -> StoreFinding:
        found = self._matching(scope)
        return StoreFinding(store=self.name, items=len(found), refs=[f"{ns}@{name}" for ns, name in found])

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        found = self._matching(scope)
        return sum(int(self._deleter.delete_snapshot(scope.tenant, ns, name)) for ns, name in found)
