"""What a purge removes, how far it got, and what the verification found. No model here is stored with
content once the purge has completed: `PurgePlan.needles` (the texts to look for) is emptied then, and only
their sha256 hashes stay (`content_hashes`)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from ..model import Model
from ..records import normalize_content


class PurgeKind(StrEnum):
    MEMORY = "memory"
    """One memory and its lineage (superseded / corrected-from versions, duplicates with its content hash)."""
    NAMESPACE = "namespace"
    SUBJECT = "subject"
    """Every memory whose content, context or metadata names the subject (an id or a text)."""
    TENANT = "tenant"
    """Offboarding: everything the tenant has, in every store."""


class PurgeState(StrEnum):
    PLANNED = "planned"
    EXECUTING = "executing"
    """Started; `done` lists the finished steps. Executing it again resumes (every step is idempotent)."""
    COMPLETED = "completed"
    """Every step ran and the verification found zero remaining copies."""
    INCOMPLETE = "incomplete"
    """Every step ran but the verification still found copies (listed per store), or parts it could not read
    (`unreachable`: restore them first): execute again."""


class PurgeTarget(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: PurgeKind
    record_id: Annotated[str, Field(max_length=128)] | None = None
    namespace: Annotated[str, Field(max_length=520)] | None = None
    subject: Annotated[str, Field(max_length=500)] | None = None
    """Dropped once the purge completes (its hash stays in `content_hashes`)."""


class StoreFinding(Model):
    """What one store holds of the purge: how many items and which (record ids, `path:line`, session ids,
    hashed keys). Never the content itself."""

    model_config = ConfigDict(extra="forbid")

    store: str
    items: int = 0
    refs: list[str] = Field(default_factory=list)
    unreachable: list[str] = Field(default_factory=list)
    """Parts of the store the purge cannot read, so cannot check or erase (an archive part in S3 Glacier): the
    plan stays `incomplete` while any is listed."""


class Retention(Model):
    """A copy the purge cannot erase at once: where, and when it expires on its own."""

    model_config = ConfigDict(extra="forbid")

    store: str
    days: int | None
    """Days until the copy expires (None: it never expires by itself; the note says what to do)."""
    note: str


class Verification(Model):
    model_config = ConfigDict(extra="forbid")

    at: datetime
    remaining: int
    """Copies still found, over every store: 0 proves the purge (with `unreachable` 0)."""
    unreachable: int = 0
    """Parts no store could read (listed in each store's `unreachable`): 0 for a completed purge."""
    stores: list[StoreFinding]


class PurgePlan(Model):
    """A purge, stored from plan to completion: the exact set to remove (record ids, file lines, sessions,
    ...), the content hashes, the steps done, the tombstone (who/when/why) and the verification report."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant: str
    target: PurgeTarget
    planned_by: str
    planned_at: datetime
    state: PurgeState = PurgeState.PLANNED
    record_ids: list[str] = Field(default_factory=list)
    record_namespaces: dict[str, str] = Field(default_factory=dict)
    record_hashes: dict[str, str] = Field(default_factory=dict)
    """Content hash of each purged record (its tombstone carries it)."""
    namespaces: list[str] = Field(default_factory=list)
    """Namespaces whose files and sessions are searched (erased whole for namespace and tenant purges)."""
    content_hashes: list[str] = Field(default_factory=list)
    """sha256 of the normalized text of each purged memory and of the subject: the tombstone's fingerprint."""
    needles: list[str] = Field(default_factory=list)
    """The texts searched for in every store. Kept only while the purge is not completed (a resumed execute
    needs them); emptied on completion."""
    candidates: list[str] = Field(default_factory=list)
    """Subject purges: records that hybrid (keyword + vector) search ranks near the subject but whose text
    does not name it. Listed for confirmation, NOT removed: purge them by id if they are about the subject."""
    plan: list[StoreFinding] = Field(default_factory=list)
    """What each store holds of the purge when it was planned."""
    done: list[str] = Field(default_factory=list)
    reason: str = ""
    executed_by: str = ""
    executed_at: datetime | None = None
    completed_at: datetime | None = None
    verification: Verification | None = None
    execution: str | None = None
    """The workflow execution running the purge (a plan above the inline limit, in AWS)."""
    regrown: int = 0
    """How many times execute found records of the target that the plan did not hold (written, corrected or
    superseded since it was planned) and added them, with their texts, before verifying again."""
    retained: list[Retention] = Field(default_factory=list)
    """What the runtime keeps beyond the purge's reach for a while (backups, object versions, logs), and how
    long: erased by expiry, not by this purge (docs/security.md)."""
    version: int = 0

    def scope(self) -> EraseScope:
        return EraseScope(
            tenant=self.tenant,
            kind=self.target.kind,
            record_ids=tuple(self.record_ids),
            needles=tuple(self.needles),
            namespaces=tuple(self.namespaces),
            subject=self.target.subject,
        )


def is_tombstone(change_json: str) -> bool:
    """Whether a stored change-log entry (its JSON) is a purge's tombstone: the one entry a purged record
    keeps, with who, when, why and the content hash, and no content."""
    try:
        entry = json.loads(change_json)
    except ValueError:
        return False
    return isinstance(entry, dict) and entry.get("operation") == "purge"


def new_plan_id() -> str:
    return f"purge_{uuid.uuid4().hex}"


MIN_NEEDLE_CHARS = 3
"""Shorter texts are not searched for as substrings (they would match almost every line)."""


@dataclass(frozen=True)
class EraseScope:
    """What every store erases: the records by id, the texts wherever they appear, and for namespace and
    tenant purges everything of those namespaces / the tenant."""

    tenant: str
    kind: PurgeKind
    record_ids: tuple[str, ...]
    needles: tuple[str, ...]
    namespaces: tuple[str, ...]
    subject: str | None = None

    @property
    def record_texts(self) -> tuple[str, ...]:
        """The purged records' own texts (the needles without the subject): what the tenant itself stored."""
        return tuple(n for n in self.needles if n != self.subject)

    @property
    def whole_tenant(self) -> bool:
        return self.kind is PurgeKind.TENANT

    @property
    def whole_namespaces(self) -> tuple[str, ...]:
        """Namespaces erased entirely (every file, session and record in them)."""
        return self.namespaces if self.kind in (PurgeKind.NAMESPACE, PurgeKind.TENANT) else ()

    def names(self, text: str) -> bool:
        """True when `text` contains a purged record id or one of the texts (compared normalized: case,
        width and whitespace folded, as content hashes are)."""
        if not text:
            return False
        if any(record_id in text for record_id in self.record_ids):
            return True
        folded = normalize_content(text)
        return any(
            len(needle) >= MIN_NEEDLE_CHARS and normalize_content(needle) in folded for needle in self.needles
        )

    def names_json(self, document: str) -> bool:
        """`names` over the text strings of a stored JSON document (a turn, a stored response): escaped
        quotes, newlines and non-ASCII characters are compared as the text they encode; keys and structural
        values (roles, statuses, types, times, tenant, namespace) are not, so a short subject such as "user"
        cannot match every document. Text that is not JSON is compared as it is."""
        try:
            parsed = json.loads(document)
        except ValueError:
            return self.names(document)
        return any(self.names(leaf) for leaf in _strings(parsed))

    def names_record(self, record: Any) -> bool:
        """A record's JSON (dict) names the purge in its id or in any text it holds: content, context,
        metadata keys and values, source refs, status reason, links (every string but the service's own
        vocabulary, `STRUCTURAL_KEYS`)."""
        if not isinstance(record, dict):
            return False
        if record.get("id") in self.record_ids:
            return True
        return any(self.names(text) for text in texts_of(record))

    def names_change(self, document: str) -> bool:
        """A change entry names the purge: its record, the before/after record, or its reason."""
        try:
            change = json.loads(document)
        except ValueError:
            return self.names(document)
        return (
            change.get("record_id") in self.record_ids
            or self.names_record(change.get("before"))
            or self.names_record(change.get("after"))
            or self.names(str(change.get("reason") or ""))
        )

    def names_recall(self, document: str) -> bool:
        """A recall entry names the purge: a purged record among its results, or the purged text in its
        query terms."""
        try:
            recall = json.loads(document)
        except ValueError:
            return self.names(document)
        if set(recall.get("result_ids") or ()) & set(self.record_ids):
            return True
        return self.names(" ".join(str(term) for term in recall.get("query_terms") or ()))

    def names_response(self, data: str) -> bool:
        """A stored API response (an idempotency record) of this tenant names the purge: its ids or texts, or
        (tenant and namespace purges) belongs to the tenant or a purged namespace."""
        compact = data.replace(" ", "")
        # The idempotency table is keyed by a hash, not by tenant: only a response that names this tenant
        # (a record's `tenant` field, written by the service: a quote inside content is escaped) is the
        # tenant's, so one tenant's purge never reads as a hit, nor deletes, another tenant's response.
        if f'"tenant":"{self.tenant}"' not in compact:
            return False
        if self.whole_tenant or self.names_json(data):
            return True
        return any(f'"namespace":"{ns}"' in compact for ns in self.whole_namespaces)

    def in_scope_namespace(self, namespace: str) -> bool:
        return self.whole_tenant or namespace in self.whole_namespaces


STRUCTURAL_KEYS = frozenset(
    {
        "role",
        "toolUseId",
        "status",
        "type",
        "tier",
        "operation",
        "decision",
        "kind",
        "tenant",
        "namespace",
        "actor",
        "at",
        "created_at",
        "updated_at",
        "last_access_at",
        "valid_from",
        "valid_to",
        "recorded_at",
        "expired_at",
        "expires_at",
        "content_hash",
        "embedding_model",
        "model_id",
        "stop_reason",
        "stopReason",
        "session_id",
        "snapshot_sha256",
        "cache_ttl",
        "version",
    }
)
"""Keys whose values are the service's own vocabulary, never content a purge looks for."""


def texts_of(value: Any) -> Iterator[str]:
    """Every text of a parsed JSON value a user could have put there: string values (not the structural
    ones) and the keys of mappings below the top level (metadata keys are user text)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in STRUCTURAL_KEYS:
                continue
            yield from texts_of(item)
            if isinstance(item, dict):
                yield from (str(k) for k in item)
    else:
        yield from _strings(value)


REDACTED = "[purged]"


def redact_texts(value: Any, scope: EraseScope) -> tuple[Any, int]:
    """`value` (parsed JSON) with every string that names the purge replaced by `[purged]` (and mapping keys
    that name it dropped); the number of replacements. Structure, numbers and other strings are kept."""
    if isinstance(value, str):
        return (REDACTED, 1) if value != REDACTED and scope.names(value) else (value, 0)
    if isinstance(value, list):
        items = [redact_texts(item, scope) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        count = 0
        for key, item in value.items():
            if key not in STRUCTURAL_KEYS and scope.names(str(key)):
                count += 1
                continue
            if key in STRUCTURAL_KEYS:
                out[key] = item
                continue
            out[key], n = redact_texts(item, scope)
            count += n
        return out, count
    return value, 0


def safe_ref(scope: EraseScope, ref: str) -> str:
    """A finding's reference as a plan may keep it: one that names the purge (a skill directory or a file
    named after the subject) is replaced by its hash, so the plan never holds the text."""
    folded = normalize_content(ref)
    if not any(len(n) >= MIN_NEEDLE_CHARS and normalize_content(n) in folded for n in scope.needles):
        return ref  # record ids, namespaces and line numbers are kept
    return hashed_ref(ref)


def hashed_ref(ref: str) -> str:
    if ref.startswith("sha256:"):
        return ref
    return "sha256:" + hashlib.sha256(ref.encode("utf-8")).hexdigest()[:32]


def _strings(value: Any) -> Iterator[str]:
    """The string values of a parsed JSON value, depth first, without keys and structural values."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in STRUCTURAL_KEYS:
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
