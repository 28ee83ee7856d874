"""What an import is made of: the items found in a source, the decision taken for each, and the validation
report (JSON and Markdown) that an import run leaves behind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from pydantic import Field

from ..model import Model
from ..records import MetadataValue

MAX_LISTED_ITEMS = 600
"""The report lists at most this many rejected and skipped items (together) one by one, each with its source
ref, place and reason; beyond that `unlisted` counts them and each item's outcome (kept per import) still names
its decision and reason. The counts are always exact. The cap keeps a report within one DynamoDB item (400 KB)."""


class ItemKind(StrEnum):
    ENTRY = "entry"
    """A curated Markdown entry (MEMORY.md, USER.md, CLAUDE.md): a record and a memory-file entry."""
    NOTE = "note"
    """A log line or topic-file note: a record only, through the write discipline (transient ones skipped)."""
    TURN = "turn"
    """A chat turn: a record only, through the write discipline (transient ones skipped)."""
    MEMORY = "memory"
    """A memory exported by another memory service (Mem0): a record."""
    SKILL = "skill"
    """A SKILL.md: a skill of the namespace (provenance `imported`)."""
    SKILL_FILE = "skill_file"
    """A file beside a SKILL.md (`references/…`, `scripts/…`, `assets/…`): kept in its skill's folder as it is
    (text), after the skills of the import are created; a binary or over-long one is listed as skipped."""
    TOPIC = "topic"
    """A Claude Code rule (`.claude/rules/*.md`) or auto-memory topic file: one record for the whole file (its
    rule with its **Why:** and **How to apply:**), its front matter kept as metadata."""


@dataclass(frozen=True)
class SourceItem:
    """One item found in a source. `ref` is stable across runs (path + content hash, or the message id), so a
    re-run recognises what it imported before."""

    ref: str
    kind: ItemKind
    content: str
    path: str
    line: int | None = None
    message_id: str | None = None
    timestamp: datetime | None = None
    file_kind: str | None = None
    """`memory` or `user`: the memory file an ENTRY also goes to."""
    namespace_suffix: str = ""
    """Appended to the import's namespace (Mem0's user/agent/run ids)."""
    role: str | None = None
    session_id: str | None = None
    section: str = ""
    expires_at: datetime | None = None
    skill_name: str | None = None
    skill_description: str = ""
    skill_file: str | None = None
    """A SKILL_FILE's path relative to its skill folder (`references/api.md`); `skill_name` names the skill."""
    hint: str | None = None
    """A memory type the source states (e.g. Claude Code's `type: user` front matter); the classifier decides
    otherwise."""
    attributes: Mapping[str, MetadataValue] = field(default_factory=dict)
    """What the source says about the item beyond its text, kept as the record's metadata (front matter `name`,
    `description`, `paths`; Mem0 `metadata`, `categories`, `app_id`)."""
    dated: bool = False
    """A line of a dated log (OpenClaw's `memory/YYYY-MM-DD.md`): an episode, valid from its date and time."""
    skip: str | None = None
    """Why the item holds no fact (an unfilled template field, a template instruction, a code block alone): it
    is listed as skipped with this reason, never written."""
    invalid: str | None = None
    """Why the item cannot be imported (e.g. a Mem0 memory without text, a chat line that is not JSON): the
    import reports it as rejected, with this reason, and goes on with the rest of the file."""


@dataclass
class Inventory:
    format: str
    files: list[str] = field(default_factory=list)
    """Every file the layout reads."""
    items: list[SourceItem] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    """(path, reason) for files the layout recognises and leaves out, and files it does not know."""

    def count(self, kind: ItemKind) -> int:
        return sum(1 for item in self.items if item.kind is kind)


class ImportState(StrEnum):
    DRY_RUN = "dry_run"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"


class SkippedFile(Model):
    path: str
    reason: str


class InventoryView(Model):
    format: str
    files: list[str]
    entries: int
    notes: int
    turns: int
    memories: int
    skills: int
    skill_files: int = 0
    topics: int = 0
    items: int
    skipped_files: list[SkippedFile]


class Decisions(Model):
    """One count per decision the import took; they add up to the inventory's items. Counts are of the records'
    state when the import ends: a record added, then superseded or held pending by a later item of the same import,
    counts as replaced or pending."""

    added: int = 0
    merged: int = 0
    reactivated: int = 0
    """Archived records (e.g. by a rollback of an earlier import) that this import brought back."""
    superseded: int = 0
    """Items whose record superseded an older one (kept as history, linked)."""
    replaced: int = 0
    """Items added, then superseded by a later item of the same import (their record is history now)."""
    linked: int = 0
    """Items added beside an older memory they possibly update (both current, the newer ranked first)."""
    outdated: int = 0
    """Items older than a memory that already holds a newer value of the same fact: kept as history."""
    pending: int = 0
    quarantined: int = 0
    rejected: int = 0
    skipped_transient: int = 0
    skipped_expired: int = 0
    skipped_not_fact: int = 0
    """Template placeholders and instructions, code blocks alone (listed with the reason)."""
    skipped_seen: int = 0
    """Imported by an earlier run (source refs): a re-run adds nothing twice."""
    skills_added: int = 0
    skills_existing: int = 0
    skills_restored: int = 0
    """Archived skills (e.g. by a rollback) that this import made active again."""
    skill_files_added: int = 0
    """Files kept beside a SKILL.md (`references/`, `scripts/`, `assets/`)."""
    skill_files_existing: int = 0
    """Skill files already there with the same text."""
    skipped_skill_file: int = 0
    """Skill files not kept: binary or over the size cap (listed with the reason)."""

    def total(self) -> int:
        return sum(getattr(self, name) for name in type(self).model_fields)


class FileOutcomes(Model):
    entries_added: int = 0
    duplicates: int = 0
    over_cap: int = 0
    refused: int = 0


class RejectedItem(Model):
    ref: str
    path: str
    line: int | None
    reason: str
    rule: str | None = None


class SkippedItem(Model):
    """An item the import did not write, and why (transient, expired, imported before)."""

    ref: str
    path: str
    line: int | None
    decision: str
    reason: str


class RecallProbe(Model):
    ref: str
    query: str
    hit: bool


class RecallCheck(Model):
    """A sample of the imported preferences, each recalled by a paraphrased query."""

    sampled: int = 0
    hits: int = 0
    hit_rate: float | None = None
    probes: list[RecallProbe] = Field(default_factory=list)


class DecayCheck(Model):
    """An item of the source past its own expiry date (Mem0's `expiration_date`): it was not imported, and
    recalling its text does not bring it back."""

    ref: str | None = None
    query: str | None = None
    excluded: bool | None = None
    note: str = ""


class RollbackSummary(Model):
    at: datetime
    actor: str
    archived: int
    files_removed: int
    skills_archived: int
    left_in_place: int
    """Records the import only merged into (they existed before it): left as they are."""
    reinstated: int = 0
    """Records that existed before the import and that it superseded: written again as new versions."""


class ImportReport(Model):
    id: str
    tenant: str
    namespace: str
    format: str
    source: str
    dry_run: bool
    state: ImportState
    actor: str
    started_at: datetime
    finished_at: datetime | None = None
    inventory: InventoryView
    decisions: Decisions = Field(default_factory=Decisions)
    files: FileOutcomes = Field(default_factory=FileOutcomes)
    rejected: list[RejectedItem] = Field(default_factory=list)
    skipped: list[SkippedItem] = Field(default_factory=list)
    unlisted: int = 0
    """Rejected or skipped items beyond `MAX_LISTED_ITEMS` (counted in `decisions`, not listed here)."""
    preference_recall: RecallCheck = Field(default_factory=RecallCheck)
    decay: DecayCheck = Field(default_factory=DecayCheck)
    items_per_second: float | None = None
    error: str | None = None
    rollback: RollbackSummary | None = None
    purges: list[str] = Field(default_factory=list)
    """Purge plans (domain/erasure) that redacted source content from this report or its outcomes (the fields
    then read `[purged]`, or an outcome's `file_entry` is empty); counts, decisions and ids are kept."""


class ItemOutcome(Model):
    """What one source item became, kept per import so a rollback can undo exactly that."""

    ref: str
    namespace: str
    decision: str
    record_id: str | None = None
    created: bool = False
    """The import created `record_id` (added, superseded or pending): a rollback archives it."""
    file_kind: str | None = None
    file_entry: str | None = None
    """The memory-file entry the import added (removed again by a rollback)."""
    skill: str | None = None
    superseded: str | None = None
    """The record this item's record superseded (a rollback reinstates it when the import did not create it)."""
    reason: str | None = None
    """Why the item was skipped or rejected (the report lists it; kept here beyond the report's cap)."""
