"""The standard memory record and the small value objects around it (DESIGN §2)."""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
import unicodedata
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, ValidationError

from .errors import ValidationFailed
from .model import Model

TENANT_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{1,38}[a-z0-9])$"
"""Tenant ids (3-40 chars) are part of S3 Vectors index names (`mem-<tenant>`, at most 63 chars) and the
leading part of every DynamoDB partition key: lowercase letters, digits, hyphens."""

NAMESPACE_PATTERN = r"^(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,63}){1,8}$"
"""`/projects/billing`, `/users/u-42`: up to 8 segments, no `..`, no empty segment, no trailing slash."""

_TENANT_RE = re.compile(TENANT_PATTERN)
_NAMESPACE_RE = re.compile(NAMESPACE_PATTERN)

MetadataValue = str | int | Annotated[float, Field(allow_inf_nan=True)] | bool
"""Non-finite floats pass the value's own check so that `_finite_metadata` can name the key that holds one."""


def non_finite_keys(metadata: dict[str, MetadataValue]) -> list[str]:
    """Keys whose value is NaN or ±Infinity (Python's json reads `NaN`, `Infinity` and `1e400` as such)."""
    return [key for key, value in metadata.items() if isinstance(value, float) and not math.isfinite(value)]


def _finite_metadata(metadata: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
    bad = non_finite_keys(metadata)
    if bad:
        raise ValueError(_finite_message(bad))
    return metadata


def _finite_message(keys: list[str]) -> str:
    return (
        f"metadata {', '.join(repr(key) for key in keys)}: numbers must be finite "
        "(NaN, Infinity and values beyond ±1.8e308 cannot be stored)"
    )


Metadata = Annotated[dict[str, MetadataValue], AfterValidator(_finite_metadata)]
"""Flat: string keys, scalar values (no nesting), finite numbers. Size limits are MemoryPolicy's."""


def _assume_utc(value: datetime) -> datetime:
    """A naive date-time is taken as UTC. The API refuses naive input; this guard keeps one from ever being
    stored by other callers, and lets data written before that rule load."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_assume_utc)]


class MemoryType(StrEnum):
    USER_PREFERENCE = "user_preference"
    PROJECT_STATE = "project_state"
    DOMAIN_KNOWLEDGE = "domain_knowledge"
    TASK_ACTION = "task_action"
    EPISODE = "episode"
    TEMPORARY = "temporary"
    CORRECTION = "correction"


class Status(StrEnum):
    ACTIVE = "active"
    PENDING = "pending"
    ARCHIVED = "archived"
    SUPERSEDED = "superseded"
    QUARANTINED = "quarantined"


class Tier(StrEnum):
    SHORT_TERM = "short_term"
    LONG_TERM = "long_term"


class SourceKind(StrEnum):
    API = "api"
    CONVERSATION = "conversation"
    TOOL = "tool"
    FILE = "file"
    DREAMING = "dreaming"
    IMPORT = "import"


class Source(Model):
    """Provenance: where a memory came from (a tool call, a conversation turn, a file line range)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SourceKind = SourceKind.API
    ref: Annotated[str, Field(max_length=512)] = ""
    actor: Annotated[str, Field(max_length=128)] = ""


def is_valid_tenant(tenant: str) -> bool:
    # fullmatch, not match: Python's `$` also matches before a final newline, so "acme\n" would pass.
    return isinstance(tenant, str) and bool(_TENANT_RE.fullmatch(tenant))


def is_valid_namespace(namespace: str) -> bool:
    """Segments of letters, digits, `.`, `_`, `-` only: no control character (a trailing newline included),
    no `..`, no empty segment."""
    return (
        isinstance(namespace, str)
        and bool(_NAMESPACE_RE.fullmatch(namespace))
        and ".." not in namespace.split("/")
    )


def _checked_tenant(value: str) -> str:
    if not is_valid_tenant(value):
        raise ValueError(f"invalid tenant id {value!r}")
    return value


def _checked_namespace(value: str) -> str:
    if not is_valid_namespace(value):
        raise ValueError(f"invalid namespace {value!r}: use a path like /projects/billing")
    return value


TenantId = Annotated[str, AfterValidator(_checked_tenant)]
NamespacePath = Annotated[str, AfterValidator(_checked_namespace)]


def normalize_content(content: str) -> str:
    """Canonical form used for hashing: NFKC, trimmed, inner whitespace collapsed, case folded."""
    text = unicodedata.normalize("NFKC", content)
    return " ".join(text.split()).casefold()


def content_hash(content: str) -> str:
    return hashlib.sha256(normalize_content(content).encode("utf-8")).hexdigest()


def metadata_size(metadata: Metadata) -> int:
    """Bytes of the metadata's compact JSON form: the unit the metadata size limit is expressed in. Refuses
    non-finite numbers (`ValidationFailed`), which JSON cannot carry: every metadata write is measured."""
    bad = non_finite_keys(metadata)
    if bad:
        raise ValidationFailed(_finite_message(bad), keys=bad)
    return len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode())


def describe_invalid(error: Exception) -> str:
    """Why stored data failed to load, without its content: field paths and messages (for logs and repair)."""
    if isinstance(error, ValidationError):
        by_field: dict[str, list[str]] = {}
        for problem in error.errors(include_input=False, include_url=False):
            loc = [str(part) for part in problem["loc"]]
            if problem["type"].endswith("_type") and len(loc) > 1:  # one failed branch of a union
                by_field.setdefault(".".join(loc[:-1]), []).append(loc[-1])
            else:
                by_field.setdefault(".".join(loc) or "body", []).append(problem["msg"])
        parts = [
            f"{name}: {messages[0] if len(messages) == 1 else 'none of ' + ', '.join(messages)}"
            for name, messages in by_field.items()
        ]
        return "; ".join(parts[:5]) + (f" (+{len(parts) - 5} more)" if len(parts) > 5 else "")
    return f"{type(error).__name__}: {error}"[:300]


def new_record_id() -> str:
    return f"mem_{uuid.uuid4().hex}"


def sortable_id(prefix: str) -> str:
    """An id that sorts by creation time (nanoseconds, then randomness): change-log entries written within the
    same clock tick still list in the order they were made."""
    return f"{prefix}_{time.time_ns():020d}{uuid.uuid4().hex[:12]}"


MAX_CONTEXT_CHARS = 2000
"""Longest `MemoryRecord.context` kept (longer context is cut at a word)."""


class MemoryRecord(Model):
    """One memory. Bi-temporal: valid_* is when it was true in the world, recorded_at/expired_at is when the
    service held it as current. Nothing is deleted: superseded and archived records keep their history."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    id: str = Field(default_factory=new_record_id)
    tenant: TenantId
    namespace: NamespacePath
    type: MemoryType
    content: str
    context: Annotated[str, Field(max_length=MAX_CONTEXT_CHARS)] = ""
    """Text the caller sent with the memory (e.g. the neighbouring turns of a conversation), indexed with it
    for keyword search only: never part of the content, its hash, its embedding or the write discipline."""
    score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    half_life_hours: Annotated[float, Field(gt=0)] = 168.0
    created_at: UtcDatetime
    updated_at: UtcDatetime
    last_access_at: UtcDatetime
    access_count: Annotated[int, Field(ge=0)] = 0
    source: Source = Field(default_factory=Source)
    sources: list[Source] = Field(default_factory=list)
    status: Status = Status.ACTIVE
    tier: Tier = Tier.LONG_TERM
    valid_from: UtcDatetime
    valid_to: UtcDatetime | None = None
    recorded_at: UtcDatetime
    expired_at: UtcDatetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    corrected_from: str | None = None
    possibly_supersedes: str | None = None
    """A weaker update (issue 27): this record may replace that one. Both stay current; recall ranks this first."""
    possibly_superseded_by: str | None = None
    """The newer record that may replace this one (see `possibly_supersedes`); recall marks this one."""
    conflict_group: str | None = None
    merged_count: Annotated[int, Field(ge=0)] = 0
    content_hash: str = ""
    embedding_model: str = ""
    metadata: Metadata = Field(default_factory=dict)
    status_reason: str = ""
    version: Annotated[int, Field(ge=0)] = 0

    def is_valid_at(self, moment: datetime) -> bool:
        """True when the fact held in the world at `moment` (valid_from ≤ moment < valid_to); naive = UTC."""
        moment = _assume_utc(moment)
        if self.valid_from > moment:
            return False
        return self.valid_to is None or moment < self.valid_to

    def public_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class EmbedderIdentity(Model):
    """Which model produced a vector. Vectors of different identities are never mixed in one index."""

    model_config = ConfigDict(frozen=True)

    name: str
    dimensions: Annotated[int, Field(ge=1, le=4096)]
    normalized: bool = True
    version: str = ""
    """The model's version when its id does not carry it (part of the fingerprint when set)."""

    @property
    def key(self) -> str:
        """The embedder's fingerprint: model id + dimensions + normalization (+ version when set). Every index
        records it, and vectors of two fingerprints are never compared (domain/migration, the drift guard)."""
        base = f"{self.name}:{self.dimensions}:{'norm' if self.normalized else 'raw'}"
        return f"{base}:{self.version}" if self.version else base


class ChangeOperation(StrEnum):
    CREATE = "create"
    MERGE = "merge"
    SUPERSEDE = "supersede"
    UPDATE = "update"
    CORRECT = "correct"
    ARCHIVE = "archive"
    RESTORE = "restore"
    REACTIVATE = "reactivate"
    CONFLICT = "conflict"
    RESOLVE = "resolve"
    DECAY = "decay"
    REPAIR = "repair"
    PURGE = "purge"
    """A tombstone (domain/erasure): the record was purged; who, when, why and its content hash, no content."""


class ChangeEntry(Model):
    """One mutation of one record: who, when, what, and the record before/after (None when absent)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: sortable_id("chg"))
    tenant: str
    namespace: str
    record_id: str
    operation: ChangeOperation
    actor: str
    at: UtcDatetime
    reason: str = ""
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


class RecallLogEntry(Model):
    """One recall: kept for consolidation (dreaming) — which query (hashed), what came back, how it scored and
    how strongly each result matched."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: sortable_id("rcl"))
    tenant: str
    namespace: str
    query_hash: str
    query_terms: list[str] = Field(default_factory=list)
    result_ids: list[str]
    scores: list[Annotated[float, Field(allow_inf_nan=False)]]
    """Each result's recall score as ranked (fusion weights, priors, focus): what the caller saw."""
    match_scores: list[Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]] | None = None
    """Each result's match strength (`recall.ScoredRecord.match`, free of the fusion's weights), which dreaming's relevance signal
    averages. None: an entry logged before it was recorded; dreaming then reads `scores`."""
    at: UtcDatetime
