"""Embedding-migration archives (domain/migration: the old index's vectors exported to JSON-lines parts and a
manifest when a migration is archived) as the purge sees them. A line is one vector: its key (the record id),
its data and its metadata (in AWS the metadata holds the record's text for the keyword search). A memory,
namespace, subject or tenant purge rewrites every part of the tenant's archives that holds a purged line
without it, then the archive's manifest with the new line counts and SHA-256 of the parts (so the archive still
reads back whole); the manifest lists the plans that rewrote it.

A part the runtime cannot read (in AWS: an object an older deployment's lifecycle rule moved to S3 Glacier
Flexible Retrieval, which answers GetObject with `InvalidObjectState` until it is restored; the rule now uses
Instant Retrieval, which reads) cannot be checked or rewritten: it is reported as
unreachable (`StoreFinding.unreachable`), which keeps the plan `incomplete` until the part is restored and the
plan executed again (docs/security.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .model import EraseScope, StoreFinding


@dataclass(frozen=True)
class ArchivePart:
    archive: str
    """The archive (one migration's export: `<migration id>`)."""
    name: str
    """The part (its file name or object key)."""
    lines: Sequence[str] | None
    """None: the part cannot be read (`unreachable` says why)."""
    unreachable: str = ""


class VectorArchives(Protocol):
    def parts(self, tenant: str) -> Iterator[ArchivePart]:
        """Every part of every archive of the tenant, read."""
        ...

    def rewrite(self, tenant: str, archive: str, parts: dict[str, list[str]], plan_id: str) -> None:
        """Replace these parts of the archive with these lines, then its manifest (counts, SHA-256, and the
        plan in its `purges`)."""
        ...


def _id_and_namespace(vector: dict[str, Any]) -> tuple[str, str]:
    metadata = vector.get("metadata") if isinstance(vector.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    record_id = vector.get("key") or vector.get("id") or ""
    namespace = vector.get("namespace") or metadata.get("namespace") or ""
    return str(record_id), str(namespace)


def names_vector(scope: EraseScope, line: str) -> bool:
    """An archived vector (one JSON line) is purged: its key is a purged record, its namespace is purged
    whole, or its text (metadata) names the purge."""
    if not line.strip():
        return False
    if scope.whole_tenant:
        return True
    try:
        vector = json.loads(line)
    except ValueError:
        return scope.names(line)
    if not isinstance(vector, dict):
        return scope.names(line)
    record_id, namespace = _id_and_namespace(vector)
    if record_id in scope.record_ids or scope.in_scope_namespace(namespace):
        return True
    text = {k: v for k, v in vector.items() if k not in ("data", "vector")}
    return scope.names_json(json.dumps(text))


class ArchivedVectors:
    name = "archives"

    def __init__(self, archives: VectorArchives) -> None:
        self._archives = archives

    def _walk(
        self, scope: EraseScope
    ) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], int], list[str]]:
        """(kept lines of every part that holds purged lines, purged count per part, unreachable parts)."""
        kept: dict[tuple[str, str], list[str]] = {}
        purged: dict[tuple[str, str], int] = {}
        unreachable: list[str] = []
        for part in self._archives.parts(scope.tenant):
            if part.lines is None:
                unreachable.append(f"{part.name} ({part.unreachable})" if part.unreachable else part.name)
                continue
            marks = [names_vector(scope, line) for line in part.lines]
            if any(marks):
                kept[(part.archive, part.name)] = [
                    line for line, hit in zip(part.lines, marks, strict=True) if line.strip() and not hit
                ]
                purged[(part.archive, part.name)] = sum(marks)
        return kept, purged, unreachable

    def find(self, scope: EraseScope) -> StoreFinding:
        _kept, purged, unreachable = self._walk(scope)
        return StoreFinding(
            store=self.name,
            items=sum(purged.values()),
            refs=[f"{name}:{count}" for (_archive, name), count in sorted(purged.items())],
            unreachable=unreachable,
        )

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        kept, purged, _unreachable = self._walk(scope)
        by_archive: dict[str, dict[str, list[str]]] = {}
        for (archive, name), lines in kept.items():
            by_archive.setdefault(archive, {})[name] = lines
        for archive, parts in sorted(by_archive.items()):
            self._archives.rewrite(scope.tenant, archive, parts, plan_id)
        return sum(purged.values())
