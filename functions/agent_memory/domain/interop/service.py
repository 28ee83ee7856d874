"""The import pipeline (DESIGN "migration path"): inventory → translate → merge → validate, plus rollback.

- **Inventory** (`formats.inventory`): every file, entry, note, turn, memory and skill the layout finds. A dry
  run stops here and writes nothing (not even the report).
- **Translate**: items go through the memory service's public write path in batches (`remember_batch`), so the
  write discipline decides: classification, the safety scan (credentials refused, injections refused or
  quarantined), exact and near-duplicate merge, supersession, conflict groups. Chat turns and log lines that
  the classifier finds transient (a temporary note, or small talk with no durable cue) are skipped, not stored
  as long-term memory. Items that had already decayed below the forgetting threshold at their own time (or
  are past their Mem0 `expiration_date`) are skipped as expired. Curated entries (MEMORY.md, USER.md,
  CLAUDE.md) also become memory-file entries through `MemoryFilesService.add` (its cap and duplicate rules
  apply); SKILL.md files become skills with provenance `imported`.
- **Merge** is the service's own: items are written oldest first (by their source time), so a newer statement
  supersedes an older one (archived and linked), and an uncertain contradiction opens a conflict group.
  Provenance: the record's `source` (`kind=import`, `ref=<format>:<path>:<line or message id>`) and metadata
  (`import_id`, `import_path`, `import_line` or `import_message_id`, `import_session`).
- **Validate**: the report counts each decision (they add up to the items found), lists rejections with their
  reasons, recalls a sample of the imported preferences by a paraphrased query (hit rate), and recalls an
  expired source item to confirm it stayed out.

Idempotent: each item's ref (path + content hash, or message id) is stored with what it became; a re-run
skips refs already imported into the namespace. Rollback archives every record the import created (change
log: `archive`, reason naming the import), removes the memory-file entries it added, archives the skills it
created, releases its refs, and writes again (as new versions) the records that existed before the import and
that it superseded. Records the import only merged into existed before it and stay as they are.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..errors import CapExceeded, Conflict, DuplicateEntry, NotFound, UnsafeContent, ValidationFailed
from ..files.memory_files import MemoryFilesService
from ..memory import classify, limits
from ..memory.service import Decision, MemoryService, RecallInput, RememberInput, RememberResult
from ..memory.strength import decay
from ..ports import Clock
from ..records import (
    MemoryRecord,
    MemoryType,
    Metadata,
    Source,
    SourceKind,
    Status,
    content_hash,
    is_valid_namespace,
)
from ..skills.document import Provenance
from ..skills.service import SkillExists, SkillsService
from ..text import query_terms
from .formats import detect, inventory
from .model import (
    MAX_REPORTED_REJECTIONS,
    DecayCheck,
    Decisions,
    ImportReport,
    ImportState,
    Inventory,
    InventoryView,
    ItemKind,
    ItemOutcome,
    RecallCheck,
    RecallProbe,
    RejectedItem,
    RollbackSummary,
    SkippedFile,
    SourceItem,
)
from .ports import ImportStore, SourceTree

BATCH = 50
PREFERENCE_SAMPLE = 20
RECALL_K = 5
SMALL_TALK_WORDS = 4
MAX_LISTED_SKIPPED = 200
_CONVERSATIONAL = (ItemKind.TURN, ItemKind.NOTE)
_PARAPHRASE_DROP = frozenset(
    [
        "i",
        "me",
        "my",
        "mine",
        "we",
        "our",
        "you",
        "your",
        "the",
        "a",
        "an",
        "is",
        "are",
        "am",
        "be",
        "to",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "for",
        "with",
        "it",
        "this",
        "that",
        "always",
        "never",
        "please",
        "prefer",
        "prefers",
        "preferred",
        "like",
        "likes",
        "want",
        "wants",
        "use",
        "uses",
    ]
)

Progress = Callable[[int, int], None]


@dataclass
class _Pending:
    item: SourceItem
    namespace: str
    remember: RememberInput


class ImportService:
    def __init__(
        self,
        memory: MemoryService,
        files: MemoryFilesService,
        skills: SkillsService | None,
        store: ImportStore,
        clock: Clock,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self._memory = memory
        self._files = files
        self._skills = skills
        self._store = store
        self._clock = clock
        self._new_id = new_id or (lambda: "imp_" + uuid.uuid4().hex[:20])

    # ------------------------------------------------------------------ inventory

    def inventory(self, tree: SourceTree, fmt: str = "auto") -> Inventory:
        return inventory(tree, detect(tree) if fmt == "auto" else fmt)

    # ------------------------------------------------------------------ run

    def run(
        self,
        tenant: str,
        tree: SourceTree,
        namespace: str,
        *,
        fmt: str = "auto",
        actor: str,
        dry_run: bool = False,
        progress: Progress | None = None,
        allowed: Callable[[str], bool] | None = None,
    ) -> ImportReport:
        """Import `tree` into `namespace` (Mem0 items into sub-namespaces of it). `allowed` is the caller's
        namespace check: an item bound for a namespace outside it is rejected, never written."""
        limits.check_namespace(namespace)
        found = self.inventory(tree, fmt)
        now = self._clock.now()
        report = ImportReport(
            id=self._new_id(),
            tenant=tenant,
            namespace=namespace,
            format=found.format,
            source=tree.label,
            dry_run=dry_run,
            state=ImportState.DRY_RUN if dry_run else ImportState.RUNNING,
            actor=actor,
            started_at=now,
            inventory=_view(found),
        )
        items = sorted(found.items, key=_chronological)
        seen = self._seen(tenant, namespace, [item.ref for item in items])
        if dry_run:
            report.decisions.skipped_seen = len(seen)
            report.finished_at = now
            return report
        self._store.save(report)
        run = _Run(self, tenant, namespace, report, actor, allowed or (lambda _namespace: True))
        try:
            for start in range(0, len(items), BATCH):
                run.batch(items[start : start + BATCH], seen)
                if progress is not None:
                    progress(min(start + BATCH, len(items)), len(items))
            run.checks()
        except Exception as error:
            report.state = ImportState.FAILED
            report.error = f"{type(error).__name__}: {error}"[:500]
            report.finished_at = self._clock.now()
            self._store.save(report)
            raise
        report.state = ImportState.COMPLETED
        report.finished_at = self._clock.now()
        elapsed = (report.finished_at - report.started_at).total_seconds()
        report.items_per_second = round(len(items) / elapsed, 1) if elapsed > 0 and items else None
        self._store.save(report)
        return report

    def _memory_records(self, tenant: str, record_ids: Sequence[str]) -> list[MemoryRecord]:
        """The active records among `record_ids`."""
        found = []
        for record_id in record_ids:
            try:
                record = self._memory.get(tenant, record_id)
            except NotFound:
                continue
            if record.status is Status.ACTIVE:
                found.append(record)
        return found

    def _seen(self, tenant: str, namespace: str, refs: Sequence[str]) -> set[str]:
        seen: set[str] = set()
        for start in range(0, len(refs), 100):
            seen |= self._store.seen(tenant, namespace, refs[start : start + 100])
        return seen

    # ------------------------------------------------------------------ report and rollback

    def report(self, tenant: str, import_id: str) -> ImportReport:
        report = self._store.get(tenant, import_id)
        if report is None:
            raise NotFound(f"no import with id {import_id!r}")
        return report

    def rollback(self, tenant: str, import_id: str, *, actor: str, force: bool = False) -> ImportReport:
        """Undo an import as a unit: archive what it created, remove the file entries and skills it added,
        release its refs, and write again the pre-existing records it superseded. Refused (409) when the import is
        already rolled back, or still running unless `force` (an import whose process died stays `running`)."""
        report = self.report(tenant, import_id)
        if report.state is ImportState.ROLLED_BACK:
            raise Conflict(f"import {import_id} is already rolled back", import_id=import_id)
        if report.state is ImportState.RUNNING and not force:
            raise Conflict(
                f"import {import_id} is still running; roll it back once it ended (or force it if its process "
                "died)",
                import_id=import_id,
            )
        reason = f"rollback of import {import_id}"
        archived = files_removed = skills_archived = left = 0
        outcomes = self._store.outcomes(tenant, import_id)
        for outcome in outcomes:
            if outcome.record_id and outcome.created:
                archived += self._retire(tenant, outcome.record_id, actor, reason)
            elif outcome.record_id:
                left += 1
            if outcome.file_entry and outcome.file_kind:
                try:
                    self._files.remove(
                        tenant, outcome.namespace, outcome.file_kind, outcome.file_entry, exact=True
                    )
                    files_removed += 1
                except NotFound:
                    pass  # edited or removed meanwhile: nothing of the import's left to remove
            if outcome.skill and self._skills is not None:
                try:
                    self._skills.archive(tenant, outcome.namespace, outcome.skill, actor=actor, note=reason)
                    skills_archived += 1
                except (NotFound, Conflict):
                    pass
        created = {o.record_id for o in outcomes if o.created and o.record_id}
        reinstated = 0
        for outcome in outcomes:
            if outcome.superseded and outcome.superseded not in created:
                reinstated += self._reinstate(tenant, outcome, import_id, actor)
        self._store.release(tenant, report.namespace, [o.ref for o in outcomes])
        report.state = ImportState.ROLLED_BACK
        report.rollback = RollbackSummary(
            at=self._clock.now(),
            actor=actor,
            archived=archived,
            files_removed=files_removed,
            skills_archived=skills_archived,
            left_in_place=left,
            reinstated=reinstated,
        )
        self._store.save(report)
        return report

    def _reinstate(self, tenant: str, outcome: ItemOutcome, import_id: str, actor: str) -> int:
        """A record that existed before the import and that the import superseded is written again (a new
        version through the write discipline: superseded versions are never brought back in place)."""
        assert outcome.superseded is not None
        try:
            old = self._memory.get(tenant, outcome.superseded)
        except NotFound:
            return 0
        if old.status is not Status.SUPERSEDED or old.superseded_by != outcome.record_id:
            return 0  # moved on since the import: leave it
        metadata = {**old.metadata, "reinstated_from": old.id, "rollback_of": import_id}
        if len(metadata) > self._memory.policy.max_metadata_keys:
            metadata = {"reinstated_from": old.id, "rollback_of": import_id}
        result = self._memory.remember(
            tenant,
            RememberInput(
                content=old.content,
                namespace=old.namespace,
                type=old.type,
                metadata=metadata,
                source=old.source,
            ),
            actor=actor,
        )
        return 1 if result.decision in (Decision.ADDED, Decision.MERGED, Decision.REACTIVATED) else 0

    def _retire(self, tenant: str, record_id: str, actor: str, reason: str) -> int:
        try:
            record = self._memory.get(tenant, record_id)
        except NotFound:
            return 0
        if record.status is Status.ACTIVE:
            self._memory.archive(tenant, record_id, actor=actor, reason=reason)
            return 1
        if record.status is Status.PENDING and record.conflict_group:
            group = self._memory.conflicts(tenant, record.namespace)
            members = next((g.records for g in group if g.group == record.conflict_group), [])
            keep = [m.id for m in members if m.id != record_id]
            if keep:
                self._memory.resolve_conflict(
                    tenant, record.conflict_group, keep=keep, actor=actor, reason=reason
                )
                return 1
        return 0  # superseded, archived or quarantined already: out of recall


class _Run:
    """One import's translation and checks (state shared by its batches)."""

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
        self.now = service._clock.now()
        self.preferences: list[tuple[str, str, str, str]] = []
        """(ref, namespace, record id, content) of the preferences this import added."""
        self.expired: SourceItem | None = None
        self.expired_namespace = namespace

    @property
    def decisions(self) -> Decisions:
        return self.report.decisions

    def batch(self, items: Sequence[SourceItem], seen: set[str]) -> None:
        outcomes: list[ItemOutcome] = []
        pending: list[_Pending] = []
        for item in items:
            if item.ref in seen:
                self.decisions.skipped_seen += 1
                continue
            namespace = self.namespace + item.namespace_suffix
            if not is_valid_namespace(namespace):
                outcomes.append(
                    self._reject(item, namespace, f"namespace {namespace!r} is not valid (too deep?)")
                )
                continue
            if not self.allowed(namespace):
                outcomes.append(
                    self._reject(item, namespace, f"this key may not write namespace {namespace!r}")
                )
                continue
            if item.kind is ItemKind.SKILL:
                outcomes.append(self._skill(item, namespace))
                continue
            memory_type = _type_of(item)
            if item.kind in _CONVERSATIONAL and memory_type is None:
                self.decisions.skipped_transient += 1
                outcomes.append(ItemOutcome(ref=item.ref, namespace=namespace, decision="skipped_transient"))
                continue
            if self._expired(item, memory_type):
                self.decisions.skipped_expired += 1
                if self.expired is None:
                    self.expired, self.expired_namespace = item, namespace
                outcomes.append(ItemOutcome(ref=item.ref, namespace=namespace, decision="skipped_expired"))
                continue
            pending.append(_Pending(item, namespace, self._remember_input(item, namespace, memory_type)))
        if pending:
            results = self.s._memory.remember_batch(
                self.tenant, [p.remember for p in pending], actor=self.actor
            )
            for entry, result in zip(pending, results, strict=True):
                outcomes.append(self._decided(entry, result))
        self.s._store.add_outcomes(self.tenant, self.report.id, self.namespace, outcomes)

    def _remember_input(
        self, item: SourceItem, namespace: str, memory_type: MemoryType | None
    ) -> RememberInput:
        metadata: Metadata = {
            "import_id": self.report.id,
            "import_format": self.report.format,
            "import_path": item.path[:256],
        }
        if item.line is not None:
            metadata["import_line"] = item.line
        if item.message_id:
            metadata["import_message_id"] = item.message_id[:128]
        if item.session_id:
            metadata["import_session"] = item.session_id[:128]
        if item.role:
            metadata["import_role"] = item.role
        where = item.message_id or (f"L{item.line}" if item.line is not None else "")
        return RememberInput(
            content=item.content,
            namespace=namespace,
            type=memory_type if item.kind in _CONVERSATIONAL or item.hint else None,
            metadata=metadata,
            source=Source(
                kind=SourceKind.IMPORT,
                ref=f"{self.report.format}:{item.path}:{where}"[:512],
                actor=self.actor[:128],
            ),
            valid_from=item.timestamp if item.timestamp and item.timestamp <= self.now else None,
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
            Decision.REACTIVATED: "merged",
            Decision.SUPERSEDED: "superseded",
            Decision.PENDING: "pending",
            Decision.QUARANTINED: "quarantined",
        }[decision]
        setattr(self.decisions, counted, getattr(self.decisions, counted) + 1)
        created = decision in (Decision.ADDED, Decision.SUPERSEDED, Decision.PENDING, Decision.QUARANTINED)
        outcome = ItemOutcome(
            ref=item.ref, namespace=namespace, decision=counted, record_id=record.id, created=created
        )
        if decision is Decision.SUPERSEDED and result.related:
            outcome.superseded = result.related[0].id
        if created and record.type is MemoryType.USER_PREFERENCE and decision is not Decision.QUARANTINED:
            self.preferences.append((item.ref, namespace, record.id, record.content))
        if item.kind is ItemKind.ENTRY and item.file_kind and decision is not Decision.QUARANTINED:
            outcome.file_kind = item.file_kind
            outcome.file_entry = self._file_entry(item, namespace)
        return outcome

    def _file_entry(self, item: SourceItem, namespace: str) -> str | None:
        files = self.report.files
        assert item.file_kind is not None
        try:
            self.s._files.add(self.tenant, namespace, item.file_kind, item.content)
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
        if self.s._skills is None:
            return self._reject(item, namespace, "skills are not available on this runtime")
        assert item.skill_name is not None
        try:
            self.s._skills.create(
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
            self.decisions.skills_existing += 1
            return ItemOutcome(ref=item.ref, namespace=namespace, decision="skill_existing")
        except (ValidationFailed, CapExceeded, UnsafeContent) as error:
            # a skill the safety scan refuses is one rejected item, not a failed import
            return self._reject(item, namespace, error.message, error.details.get("rule") or error.code)
        self.decisions.skills_added += 1
        return ItemOutcome(ref=item.ref, namespace=namespace, decision="skill_added", skill=item.skill_name)

    def _reject(self, item: SourceItem, namespace: str, reason: str, rule: str | None = None) -> ItemOutcome:
        self.decisions.rejected += 1
        if len(self.report.rejected) < MAX_REPORTED_REJECTIONS:
            self.report.rejected.append(
                RejectedItem(ref=item.ref, path=item.path, line=item.line, reason=reason[:500], rule=rule)
            )
        return ItemOutcome(ref=item.ref, namespace=namespace, decision="rejected")

    def _expired(self, item: SourceItem, memory_type: MemoryType | None) -> bool:
        """Past its expiry date, or (a chat turn or log line) so old that the forgetting job would archive it
        at once: its strength at its own time below `archive_below_strength`, unused for
        `archive_unused_days`."""
        if item.expires_at is not None and item.expires_at <= self.now:
            return True
        if item.timestamp is None or item.kind not in _CONVERSATIONAL:
            return False  # curated stores keep what they hold on purpose: only an expiry date ends it
        policy = self.s._memory.policy
        age = self.now - item.timestamp
        if age < timedelta(days=policy.archive_unused_days):
            return False
        kind = memory_type or classify.classify(item.content).type
        if kind is MemoryType.TEMPORARY:
            score, half_life = policy.temporary_score, policy.temporary_half_life_hours
        elif kind in (MemoryType.USER_PREFERENCE, MemoryType.CORRECTION):
            score, half_life = policy.preference_score, policy.preference_half_life_hours
        else:
            score, half_life = policy.default_score, policy.default_half_life_hours
        return score * decay(age.total_seconds() / 3600.0, half_life) < policy.archive_below_strength

    # ------------------------------------------------------------------ validation checks

    def checks(self) -> None:
        # Still active at the end: a preference a later item of the same source superseded is not expected back.
        current = {r.id for r in self.s._memory_records(self.tenant, [p[2] for p in self.preferences])}
        sample = sorted(p for p in self.preferences if p[2] in current)[:PREFERENCE_SAMPLE]
        check = RecallCheck()
        for ref, namespace, record_id, content in sample:
            query = paraphrase(content)
            results = self.s._memory.recall(
                self.tenant, RecallInput(query=query, namespaces=(namespace,), k=RECALL_K)
            )
            hit = any(r.record.id == record_id for r in results.results)
            check.probes.append(RecallProbe(ref=ref, query=query, hit=hit))
        check.sampled = len(check.probes)
        check.hits = sum(1 for p in check.probes if p.hit)
        check.hit_rate = round(check.hits / check.sampled, 4) if check.sampled else None
        self.report.preference_recall = check
        self.report.decay = self._decay_check()

    def _decay_check(self) -> DecayCheck:
        item = self.expired
        if item is None:
            return DecayCheck(note="no item of the source had expired")
        query = item.content[:500]
        results = self.s._memory.recall(
            self.tenant, RecallInput(query=query, namespaces=(self.expired_namespace,), k=RECALL_K)
        )
        wanted = content_hash(item.content)
        back = any(r.record.content_hash == wanted for r in results.results)
        return DecayCheck(
            ref=item.ref,
            query=query,
            excluded=not back,
            note="skipped as expired at import; recalled by its own text" + ("" if not back else ": FOUND"),
        )


def paraphrase(text: str) -> str:
    """A reworded query for a preference: its content words in reverse order after a question frame, without
    the first-person and preference verbs (so the query does not repeat the memory's wording)."""
    words = [w for w in query_terms(text) if w not in _PARAPHRASE_DROP and len(w) > 2]
    kept = list(reversed(words[:8])) or query_terms(text)[:8]
    return "what does the user want regarding " + " ".join(kept)


def _type_of(item: SourceItem) -> MemoryType | None:
    """The classifier's type; None for a transient turn or log line (a temporary note, or small talk)."""
    if item.hint:
        return MemoryType(item.hint)
    result = classify.classify(item.content)
    if item.kind in _CONVERSATIONAL and (
        result.type is MemoryType.TEMPORARY or _small_talk(item.content, result)
    ):
        return None
    return result.type


def _small_talk(text: str, result: classify.Classification) -> bool:
    """No cue of any type (the classifier's fallback) and fewer than `SMALL_TALK_WORDS` words of three letters
    or more: a greeting or an acknowledgement ("ok thanks"), not a fact."""
    if result.signals != [f"{MemoryType.DOMAIN_KNOWLEDGE.value}:default"]:
        return False
    return sum(1 for word in re.findall(r"\w+", text) if len(word) >= 3) < SMALL_TALK_WORDS


def _chronological(item: SourceItem) -> tuple[int, datetime]:
    return (0, datetime.min) if item.timestamp is None else (1, item.timestamp.replace(tzinfo=None))


def _skipped(files: list[tuple[str, str]]) -> list[SkippedFile]:
    """At most `MAX_LISTED_SKIPPED` skipped files by name (a home directory holds thousands), then a count."""
    listed = [SkippedFile(path=p, reason=r) for p, r in files[:MAX_LISTED_SKIPPED]]
    if len(files) > MAX_LISTED_SKIPPED:
        listed.append(SkippedFile(path="…", reason=f"{len(files) - MAX_LISTED_SKIPPED} more files skipped"))
    return listed


def _view(found: Inventory) -> InventoryView:
    return InventoryView(
        format=found.format,
        files=found.files,
        entries=found.count(ItemKind.ENTRY),
        notes=found.count(ItemKind.NOTE),
        turns=found.count(ItemKind.TURN),
        memories=found.count(ItemKind.MEMORY),
        skills=found.count(ItemKind.SKILL),
        items=len(found.items),
        skipped_files=_skipped(found.skipped_files),
    )


def render_markdown(report: ImportReport) -> str:
    """The report for a person: what was found, what each item became, the checks."""
    d, f, inv = report.decisions, report.files, report.inventory
    lines = [
        f"# Import {report.id}",
        "",
        f"- source: `{report.source}` ({report.format}) → `{report.namespace}` (tenant `{report.tenant}`)",
        f"- state: **{report.state.value}**{' (dry run: nothing written)' if report.dry_run else ''}",
        f"- started {report.started_at.isoformat()}"
        + (f", finished {report.finished_at.isoformat()}" if report.finished_at else ""),
        "",
        "## Inventory",
        "",
        f"{len(inv.files)} files: {inv.entries} entries, {inv.notes} notes, {inv.turns} turns, "
        f"{inv.memories} memories, {inv.skills} skills ({inv.items} items)",
    ]
    for skipped in inv.skipped_files:
        lines.append(f"- skipped `{skipped.path}`: {skipped.reason}")
    lines += ["", "## Decisions", "", "| decision | count |", "|---|---|"]
    lines += [f"| {name} | {getattr(d, name)} |" for name in Decisions.model_fields]
    lines += [
        "",
        f"Memory files: {f.entries_added} entries added, {f.duplicates} already present, {f.over_cap} over the cap, "
        f"{f.refused} refused by the safety scan.",
    ]
    if report.rejected:
        lines += ["", "## Rejected", ""]
        lines += [f"- `{r.path}`{f':{r.line}' if r.line else ''}: {r.reason}" for r in report.rejected]
    recall, decay_check = report.preference_recall, report.decay
    lines += ["", "## Checks", ""]
    if recall.sampled:
        lines.append(
            f"- preference recall by paraphrase: {recall.hits}/{recall.sampled} (hit rate {recall.hit_rate:.2f})"
        )
    else:
        lines.append("- preference recall by paraphrase: no preference imported in this run")
    if decay_check.ref:
        lines.append(f"- expired item `{decay_check.ref}` excluded: {decay_check.excluded}")
    else:
        lines.append(f"- decay: {decay_check.note or 'not run'}")
    if report.rollback:
        r = report.rollback
        lines += [
            "",
            "## Rollback",
            "",
            f"{r.archived} records archived, {r.files_removed} file entries removed, "
            f"{r.skills_archived} skills archived, {r.reinstated} superseded records reinstated, "
            f"{r.left_in_place} merged records left in place ({r.actor}, {r.at.isoformat()})",
        ]
    return "\n".join(lines) + "\n"
