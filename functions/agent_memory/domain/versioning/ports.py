"""Where snapshots and reference counts live: ports (SQLite locally, DynamoDB in AWS)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Protocol

from pydantic import ConfigDict, Field

from ..model import Model
from ..records import NamespacePath, UtcDatetime

SNAPSHOT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class SnapshotMeta(Model):
    """A named snapshot of one namespace (records + memory files), as listed. The payload is the namespace's
    export bundle (`domain/interop/bundle.py`) packed as `.tar.gz`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(pattern=SNAPSHOT_NAME_PATTERN)]
    namespace: NamespacePath
    created_at: UtcDatetime
    actor: Annotated[str, Field(max_length=128)] = ""
    note: Annotated[str, Field(max_length=500)] = ""
    counts: dict[str, int] = Field(default_factory=dict)
    sha256: str = ""
    """SHA-256 of the payload."""
    bytes: int = 0


class SnapshotStore(Protocol):
    def put(self, tenant: str, meta: SnapshotMeta, payload: bytes) -> None:
        """Store a new snapshot. Raises `Conflict` when the namespace already has one of this name (a name is
        never reused: a snapshot is immutable)."""
        ...

    def get(self, tenant: str, namespace: str, name: str) -> tuple[SnapshotMeta, bytes] | None: ...

    def list(self, tenant: str, namespace: str) -> list[SnapshotMeta]:
        """The namespace's snapshots, oldest first."""
        ...


class ReferenceStore(Protocol):
    """How often each memory reached a session's snapshot, and when a person last reviewed it. (Recalls are
    counted from the recall log the record store already keeps.)"""

    def add_session_uses(self, tenant: str, namespace: str, content_hashes: Sequence[str]) -> None:
        """One more session for each of these content hashes (entries of the session's frozen snapshot)."""
        ...

    def session_uses(self, tenant: str, namespace: str) -> dict[str, int]:
        """Sessions per content hash in the namespace."""
        ...

    def mark_reviewed(self, tenant: str, record_id: str, at: datetime) -> None: ...

    def reviewed(self, tenant: str, record_ids: Sequence[str]) -> dict[str, datetime]:
        """When each of these records was last marked reviewed (absent: never)."""
        ...
