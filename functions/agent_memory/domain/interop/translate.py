"""The translate stage of an import: each item goes through the memory service's public write path
(`remember_batch`), so the write discipline decides. Every item the import does not write — rejected,
transient, expired, imported before — is counted and listed in the report with its place and reason."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import (
    CapExceeded,
    Conflict,
    DuplicateEntry,
    NotFound,
    TooLarge,
    UnsafeContent,
    ValidationFailed,
)
from ..memory import classify
from ..memory.service import Decision, RememberInput, RememberResult
from ..records import MemoryRecord, MemoryType, Metadata, Source, SourceKind, is_valid_namespace
from ..skills.document import Provenance, SkillStatus
from ..skills.files import SkillFileOutcome
from ..skills.service import SkillExists
from .model import (
    MAX_LISTED_ITEMS,
    Decisions,
    ImportReport,
    ItemKind,
    ItemOutcome,
    RejectedItem,
    SkippedItem,
    SourceItem,
)

if TYPE_CHECKING:
    from .service import ImportService

SMALL_TALK_WORDS = 4
_CHAT = (
    "ok okay k kk thanks thank thx ty tysm you u a lot much so very really great cool nice good fine sure yes "
    "yeah yep yup no nope nah hi hello hey hiya heya again bye goodbye cya see later soon got it will do done "
    "perfect awesome alright right understood noted np welcome lol haha hah morning afternoon evening night "
    "all set that this that's it's is was makes make sense plan like sounds sound oh ah hmm well wow cheers "
    "appreciate appreciated too me i i'll we'll let's go on sorry my bad problem of course absolutely exactly "
    "indeed agreed true same here gotcha for the help there yours brb afk gtg ttyl lgtm ack kthx ta bb "
)
CHAT_WORDS = frozenset(_CHAT.split())
"""The words of greetings, thanks and acknowledgements: a short turn made only of them is small talk."""
INVALID_RULE = "invalid_item"
_CONVERSATIONAL = (ItemKind.TURN, ItemKind.NOTE)
_RESERVED_METADATA = ("import_", "reinstated_from", "rollback_of")


@dataclass
class _Pending:
    item: SourceItem
    namespace: str
    remember: RememberInput


class Translation:
    """One import's translation (state shared by its batches)."""

    def __init__(
        self,
        service: ImportService,
        tenant: str,
        namespace: str,
        report: ImportReport,
        actor: str,
        allowed: Callable[[str], bool],
    ) -> None:
        self.allowed = allowed
        self.s = service
        self.tenant = tenant
        self.namespace = namespace
        self.report = report
        self.actor = actor
        self.now = service.now()
        self.preferences: list[tuple[str, str, str, str]] = []
        """(ref, namespace, record id, content) of the preferences this import added."""
        self.expired: SourceItem | None = None
        self.expired_namespace = namespace
        self.added: set[str] = set()
        """Ids of the records counted as added: one a later item supersedes or holds pending is counted again."""

    @property
    def decisions(self) -> Decisions:
        return self.report.decisions

    def batch(self, items: Sequence[SourceItem], seen: set[str]) -> None:
        outcomes: list[ItemOutcome] = []
        pending: list[_Pending] = []
        for item in items:
            namespace = self.namespace + item.namespace_suffix
            outcome = self._screen(item, namespace, seen)
            if isinstance(outcome, ItemOutcome):
                outcomes.append(outcome)
            elif outcome is not None:
                pending.append(outcome)
        if pending:
            results = self.s.memory.remember_batch(
                self.tenant, [p.remember for p in pending], actor=self.actor
            )
            for entry, result in zip(pending, results, strict=True):
                outcomes.append(self._decided(entry, result))
        self.s.store.add_outcomes(self.tenant, self.report.id, self.namespace, outcomes)

    def _screen(self, item: SourceItem, namespace: str, seen: set[str]) -> ItemOutcome | _Pending | None:
        """What happens to `item` before the write path: skipped or rejected (an outcome), or a write."""
        if item.ref in seen:
            reason = (
                f"already imported into {namespace} by an earlier run (same source ref); roll that import back "
                "to import it again"
            )
            return self._skip(item, namespace, "skipped_seen", reason)
        if item.invalid:
            return self._reject(item, namespace, item.invalid, INVALID_RULE)
        if item.skip:
            skipped = "skipped_skill_file" if item.kind is ItemKind.SKILL_FILE else "skipped_not_fact"
            return self._skip(item, namespace, skipped, item.skip)
        if not is_valid_namespace(namespace):
            return self._reject(item, namespace, f"namespace {namespace!r} is not valid (too deep?)")
        if not self.allowed(namespace):
            return self._reject(item, namespace, f"this key may not write namespace {namespace!r}")
        if item.kind is ItemKind.SKILL:
            return self._skill(item, namespace)
        if item.kind is ItemKind.SKILL_FILE:
            return self._skill_file(item, namespace)
        memory_type, transient = type_of(item)
        if transient:
            return self._skip(item, namespace, "skipped_transient", transient)
        if item.expires_at is not None and item.expires_at <= self.now:
            if self.expired is None:
                self.expired, self.expired_namespace = item, namespace
            reason = f"expired: its expiration_date {item.expires_at.date().isoformat()} had passed before the import"
            return self._skip(item, namespace, "skipped_expired", reason)
        return _Pending(item, namespace, self._remember_input(item, namespace, memory_type))

    def _remember_input(
        self, item: SourceItem, namespace: str, memory_type: MemoryType | None
    ) -> RememberInput:
        metadata: Metadata = {
            key: value for key, value in item.attributes.items() if not key.startswith(_RESERVED_METADATA)
        }
        metadata.update(
            {"import_id": self.report.id, "import_format": self.report.format, "import_path": item.path[:256]}
        )
        if item.line is not None:
            metadata["import_line"] = item.line
        if item.message_id:
            metadata["import_message_id"] = item.message_id[:128]
        if item.session_id:
            metadata["import_session"] = item.session_id[:128]
            metadata["session_id"] = item.session_id[:128]  # a turn's batch context stays in its session
        if item.role:
            metadata["import_role"] = item.role
        if item.section:
            metadata["import_section"] = item.section[:200]
        where = item.message_id or (f"L{item.line}" if item.line is not None else "")
        stated = item.kind in _CONVERSATIONAL or item.hint is not None or item.dated
        return RememberInput(
            content=item.content,
            namespace=namespace,
            type=memory_type if stated else None,
            metadata=metadata,
            source=Source(
                kind=SourceKind.IMPORT,
                ref=f"{self.report.format}:{item.path}:{where}"[:512],
                actor=self.actor[:128],
            ),
            valid_from=item.timestamp if item.timestamp and item.timestamp <= self.now else None,
            # The heading an entry sits under is the context a person reads it in (indexed for keyword search);
            # a turn gets the turns around it in its session (the service's batch context).
            context=(item.section or None) if item.kind is not ItemKind.TURN else None,
        )

    def _decided(self, entry: _Pending, result: RememberResult) -> ItemOutcome:
        item, namespace = entry.item, entry.namespace
        record = result.record
        decision = result.decision
        if decision is Decision.REJECTED or record is None:
            return self._reject(item, namespace, result.reason, result.rule)
        counted = {
            Decision.ADDED: "added",
            Decision.MERGED: "merged",
            Decision.REACTIVATED: "reactivated",
            Decision.SUPERSEDED: "superseded",
            Decision.LINKED: "linked",
            Decision.OUTDATED: "outdated",
            Decision.PENDING: "pending",
            Decision.QUARANTINED: "quarantined",
        }[decision]
        setattr(self.decisions, counted, getattr(self.decisions, counted) + 1)
        created = decision in (
            Decision.ADDED,
            Decision.REACTIVATED,
            Decision.SUPERSEDED,
            Decision.LINKED,
            Decision.OUTDATED,
            Decision.PENDING,
            Decision.QUARANTINED,
        )
        outcome = ItemOutcome(
            ref=item.ref, namespace=namespace, decision=counted, record_id=record.id, created=created
        )
        if decision is Decision.SUPERSEDED and result.related:
            outcome.superseded = result.related[0].id
        self._recount(decision, result.related)
        if counted == "added":
            self.added.add(record.id)
        if created and record.type is MemoryType.USER_PREFERENCE and decision is not Decision.QUARANTINED:
            self.preferences.append((item.ref, namespace, record.id, record.content))
        if item.kind is ItemKind.ENTRY and item.file_kind and decision is not Decision.QUARANTINED:
            outcome.file_kind = item.file_kind
            outcome.file_entry = self._file_entry(item, namespace)
        return outcome

    def _recount(self, decision: Decision, related: Sequence[MemoryRecord]) -> None:
        """Counts are of the records' state at the end: a record this import added that a later item of it
        supersedes counts as `replaced`; one it holds pending counts as `pending`."""
        if decision not in (Decision.SUPERSEDED, Decision.PENDING):
            return
        for record in related:
            if record.id in self.added:
                self.added.discard(record.id)
                self.decisions.added -= 1
                if decision is Decision.SUPERSEDED:
                    self.decisions.replaced += 1
                else:
                    self.decisions.pending += 1

    def _file_entry(self, item: SourceItem, namespace: str) -> str | None:
        files = self.report.files
        assert item.file_kind is not None
        try:
            self.s.files.add(self.tenant, namespace, item.file_kind, item.content)
        except DuplicateEntry:
            files.duplicates += 1
            return None
        except CapExceeded:
            files.over_cap += 1
            return None
        except (UnsafeContent, ValidationFailed):
            files.refused += 1
            return None
        files.entries_added += 1
        return item.content

    def _skill(self, item: SourceItem, namespace: str) -> ItemOutcome:
        if self.s.skills is None:
            return self._reject(item, namespace, "skills are not available on this runtime")
        assert item.skill_name is not None
        try:
            self.s.skills.create(
                self.tenant,
                namespace,
                item.skill_name,
                description=item.skill_description[:1000],
                body=item.content,
                actor=self.actor,
                provenance=Provenance.IMPORTED,
                note=f"import {self.report.id} from {item.path}",
            )
        except SkillExists:
            return self._existing_skill(item, namespace)
        except (ValidationFailed, CapExceeded, UnsafeContent) as error:
            # a skill the safety scan refuses is one rejected item, not a failed import
            return self._reject(item, namespace, error.message, error.details.get("rule") or error.code)
        self.decisions.skills_added += 1
        return ItemOutcome(ref=item.ref, namespace=namespace, decision="skill_added", skill=item.skill_name)

    def _existing_skill(self, item: SourceItem, namespace: str) -> ItemOutcome:
        """An archived skill of that name (a rollback archived it) is made active again; an active one stays."""
        assert self.s.skills is not None and item.skill_name is not None
        skill = self.s.skills.get(self.tenant, namespace, item.skill_name, signals=False)
        if skill.meta.status is SkillStatus.ARCHIVED:
            note = f"import {self.report.id} from {item.path}"
            self.s.skills.restore(self.tenant, namespace, item.skill_name, actor=self.actor, note=note)
            self.decisions.skills_restored += 1
            return ItemOutcome(
                ref=item.ref, namespace=namespace, decision="skill_restored", skill=item.skill_name
            )
        self.decisions.skills_existing += 1
        return ItemOutcome(ref=item.ref, namespace=namespace, decision="skill_existing")

    def _skill_file(self, item: SourceItem, namespace: str) -> ItemOutcome:
        """A file beside a SKILL.md, kept in the skill's folder (the skills of the import are created first:
        skill files sort last). Never overwrites a different file already there."""
        if self.s.skills is None:
            return self._reject(item, namespace, "skills are not available on this runtime")
        assert item.skill_name is not None and item.skill_file is not None
        try:
            kept = self.s.skills.files.add(
                self.tenant, namespace, item.skill_name, item.skill_file, item.content
            )
        except NotFound:
            reason = (
                f"its skill {item.skill_name!r} is not in {namespace} (its SKILL.md was not imported: see this "
                f"report); {item.skill_file} is kept only with its skill"
            )
            return self._reject(item, namespace, reason)
        except (ValidationFailed, TooLarge, Conflict, UnsafeContent) as error:
            return self._reject(item, namespace, error.message, error.details.get("rule") or error.code)
        if kept is SkillFileOutcome.ADDED:
            self.decisions.skill_files_added += 1
            return ItemOutcome(ref=item.ref, namespace=namespace, decision="skill_file_added")
        self.decisions.skill_files_existing += 1
        return ItemOutcome(ref=item.ref, namespace=namespace, decision="skill_file_existing")

    def _reject(self, item: SourceItem, namespace: str, reason: str, rule: str | None = None) -> ItemOutcome:
        self.decisions.rejected += 1
        if self._listed() < MAX_LISTED_ITEMS:
            self.report.rejected.append(
                RejectedItem(ref=item.ref, path=item.path, line=item.line, reason=reason[:500], rule=rule)
            )
        else:
            self.report.unlisted += 1
        return ItemOutcome(ref=item.ref, namespace=namespace, decision="rejected", reason=reason[:500])

    def _listed(self) -> int:
        return len(self.report.rejected) + len(self.report.skipped)

    def _skip(self, item: SourceItem, namespace: str, decision: str, reason: str) -> ItemOutcome:
        setattr(self.decisions, decision, getattr(self.decisions, decision) + 1)
        if self._listed() < MAX_LISTED_ITEMS:
            self.report.skipped.append(
                SkippedItem(
                    ref=item.ref, path=item.path, line=item.line, decision=decision, reason=reason[:300]
                )
            )
        else:
            self.report.unlisted += 1
        return ItemOutcome(ref=item.ref, namespace=namespace, decision=decision, reason=reason)


def type_of(item: SourceItem) -> tuple[MemoryType | None, str | None]:
    """(the type to write, None) or (None, why the item is transient). A stated type (front matter) stands; a
    line of a dated log is an episode; a chat turn or log line the classifier finds temporary, or small talk,
    is transient."""
    if item.hint:
        return MemoryType(item.hint), None
    result = classify.classify(item.content)
    if item.kind in _CONVERSATIONAL:
        if result.type is MemoryType.TEMPORARY:
            cues = ", ".join(s.split(":", 1)[-1] for s in result.signals if s.startswith("temporary:"))
            return None, f"transient: a temporary note ({cues or 'temporary cue'}), not a lasting fact"
        if _small_talk(item.content, result):
            return None, "transient: small talk (only greeting or acknowledgement words, no durable cue)"
    if item.dated:
        return MemoryType.EPISODE, None
    return result.type, None


def _small_talk(text: str, result: classify.Classification) -> bool:
    """No cue of any type (the classifier's fallback), fewer than `SMALL_TALK_WORDS` words of three letters
    or more, and every word one of chat's own (`CHAT_WORDS`; a bare number too): a greeting or an
    acknowledgement ("ok thanks",
    "sounds like a plan"), not a fact. A short statement with a word of its own ("The user is vegetarian",
    "Born in 1990", "Lives in Lisbon") is a fact, however short."""
    if result.signals != [f"{MemoryType.DOMAIN_KNOWLEDGE.value}:default"]:
        return False
    words = re.findall(r"[^\W_]+(?:'[^\W_]+)?", text.lower())
    if sum(1 for word in words if len(word) >= 3) >= SMALL_TALK_WORDS:
        return False
    return all(word in CHAT_WORDS or word.isdigit() for word in words)
