"""`skill_manage` and `skill_view`: skills of a namespace on the memory-file store (DESIGN §2 "Skills").

Layout under the namespace directory (S3 Files in AWS, the data directory locally):

- `skills/<name>/SKILL.md` — front matter + body (`document.py`);
- `skills/<name>/versions/<n>.md` — the text of version n, kept when version n+1 is written (never deleted);
- `skills/<name>/changes.json` — the change log: every change with its version, action, actor, time and note;
- `skills/<name>/signals.json` — usage and outcome signals: view/use counters, the last use, outcome counters
  and the last `recent_outcomes_kept` outcomes with their notes. Kept in the file store rather than the record
  store because both runtimes have it with the same semantics (a locked read-modify-write per file), it lives
  and is archived with the skill, and it needs no new table access; it is bounded by construction.

Every change is a locked read-modify-write of SKILL.md (the file store serialises writers of one file): the
previous text is written to `versions/<n>.md` and the change-log entry appended before the new SKILL.md is
written, so no version is ever lost; if any step fails, SKILL.md is unchanged. Writes run the same safety scan
as memory files. Names, sizes and formats are validated before anything is written (`text_rules.py`); the
signals are read and written through `signals.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ConcurrentModification, Conflict, NotFound, ValidationFailed
from ..ports import Clock, FileStore
from ..records import is_valid_namespace, is_valid_tenant
from .config import SkillsConfig
from .document import (
    MalformedSkill,
    Provenance,
    SkillMeta,
    SkillStatus,
    parse,
    patch_section,
    render,
    validate_name,
)
from .files import SkillFiles
from .signals import BAD_OUTCOMES, Outcome, OutcomeReport, Signals
from .text_rules import SkillText

__all__ = [
    # re-exported: the signals were split out of this module (issue 31)
    "BAD_OUTCOMES",
    "Outcome",
    "OutcomeReport",
    "Signals",
    "Skill",
    "SkillExists",
    "SkillListing",
    "SkillsService",
]

SKILLS_DIR = "skills"
SKILL_FILE = "SKILL.md"
CHANGES_FILE = "changes.json"
SIGNALS_FILE = "signals.json"


class SkillExists(Conflict):
    """A skill with this name already exists in the namespace (409): edit it instead."""

    code = "skill_exists"


def skill_path(name: str, file: str = SKILL_FILE) -> str:
    return f"{SKILLS_DIR}/{validate_name(name)}/{file}"


def version_path(name: str, version: int) -> str:
    return f"{SKILLS_DIR}/{validate_name(name)}/versions/{version}.md"


@dataclass(frozen=True)
class Skill:
    meta: SkillMeta
    body: str
    signals: Signals

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True)
class SkillListing:
    skills: list[Skill]
    unreadable: list[dict[str, str]]
    """Skills whose SKILL.md does not parse: name and the error (fix them by hand; never guessed at)."""


class SkillsService:
    """Skills of every tenant and namespace, on one file store."""

    def __init__(
        self,
        files: FileStore,
        scanner: Callable[[str], str | None],
        clock: Clock,
        config: SkillsConfig | None = None,
    ) -> None:
        self._files = files
        self._clock = clock
        self.config = config or SkillsConfig()
        self._text = SkillText(self.config, scanner)
        self.files = SkillFiles(files, scanner, self.config)
        """The files beside each SKILL.md (`references/`, `scripts/`, `assets/`): `files.py`."""

    # ------------------------------------------------------------------ reading

    def names(self, tenant: str, namespace: str) -> list[str]:
        """Names of the directories under `skills/` that hold a SKILL.md, sorted."""
        _check_scope(tenant, namespace)
        found = set()
        for path in self._files.list(tenant, namespace, f"{SKILLS_DIR}/"):
            parts = path.split("/")
            if len(parts) == 3 and parts[2] == SKILL_FILE:
                found.add(parts[1])
        return sorted(found)

    def list_skills(
        self, tenant: str, namespace: str, statuses: Iterable[SkillStatus] = (), *, signals: bool = True
    ) -> SkillListing:
        wanted = set(statuses)
        skills, unreadable = [], []
        for name in self.names(tenant, namespace):
            try:
                skill = self.get(tenant, namespace, name, signals=signals)
            except (MalformedSkill, ValidationFailed) as error:
                unreadable.append({"name": name, "error": error.message})
                continue
            except NotFound:
                continue
            if not wanted or skill.meta.status in wanted:
                skills.append(skill)
        return SkillListing(skills, unreadable)

    def get(self, tenant: str, namespace: str, name: str, *, signals: bool = True) -> Skill:
        """The skill as stored, without recording a view."""
        _check_scope(tenant, namespace)
        path = skill_path(name)
        text = self._files.read(tenant, namespace, path)
        if text is None:
            raise NotFound(f"no skill {name!r} in {namespace}", name=name)
        meta, body = parse(text, path=path)
        if meta.name != name:
            raise MalformedSkill(f"{path} names itself {meta.name!r}; the directory says {name!r}", path=path)
        return Skill(meta, body, self.signals(tenant, namespace, name) if signals else Signals())

    def signals(self, tenant: str, namespace: str, name: str) -> Signals:
        path = skill_path(name, SIGNALS_FILE)
        return Signals.from_text(self._files.read(tenant, namespace, path), path)

    def view(self, tenant: str, namespace: str, name: str, *, actor: str) -> Skill:
        """`skill_view`: the body on demand; the view is recorded as a use signal."""
        skill = self.get(tenant, namespace, name, signals=False)
        signals = self._signal(
            tenant, namespace, name, lambda s, now: _replace(s, views=s.views + 1, last_used_at=now)
        )
        return Skill(skill.meta, skill.body, signals)

    def history(self, tenant: str, namespace: str, name: str) -> list[dict[str, Any]]:
        """The change log, oldest first."""
        self.get(tenant, namespace, name, signals=False)
        return _load_changes(self._files.read(tenant, namespace, skill_path(name, CHANGES_FILE)))

    def version_text(self, tenant: str, namespace: str, name: str, version: int) -> str:
        """The SKILL.md text of one version (the current one or a kept previous one)."""
        current = self.get(tenant, namespace, name, signals=False)
        if version == current.meta.version:
            return render(current.meta, current.body)
        text = self._files.read(tenant, namespace, version_path(name, version)) if version >= 1 else None
        if text is None:
            raise NotFound(f"skill {name!r} has no version {version}", name=name, version=version)
        return text

    # ------------------------------------------------------------------ skill_manage

    def create(
        self,
        tenant: str,
        namespace: str,
        name: str,
        *,
        description: str,
        body: str,
        actor: str,
        provenance: Provenance = Provenance.AGENT,
        pinned: bool = False,
        note: str = "",
    ) -> Skill:
        _check_scope(tenant, namespace)
        validate_name(name)
        description = self._text.description(description)
        body = self._text.body(body)
        self._text.check_note(note)
        now = self._clock.now()
        meta = SkillMeta(
            name=name,
            description=description,
            provenance=provenance,
            author=_actor(actor),
            created=now,
            updated=now,
            version=1,
            status=SkillStatus.ACTIVE,
            status_since=now,
            pinned=pinned,
        )
        text = render(meta, body)
        path = skill_path(name)

        def change(current: str | None) -> str:
            if current is not None:
                raise SkillExists(
                    f"skill {name!r} already exists in {namespace}: edit or patch it", name=name
                )
            self._log(tenant, namespace, name, meta, "create", actor, note, now)
            return text

        self._files.update(tenant, namespace, path, change)
        return Skill(meta, body, self.signals(tenant, namespace, name))

    def edit(
        self,
        tenant: str,
        namespace: str,
        name: str,
        *,
        body: str,
        actor: str,
        description: str | None = None,
        expected_version: int | None = None,
        note: str = "",
    ) -> Skill:
        """Replace the whole body (and the description when given). A stale skill becomes active again."""
        new_body = self._text.body(body)
        new_description = self._text.description(description) if description is not None else None

        def content(meta: SkillMeta, _body: str) -> tuple[dict[str, Any], str]:
            _writable(meta, name)
            return _content_update(new_description, self._clock.now()), new_body

        return self._mutate(tenant, namespace, name, "edit", actor, content, expected_version, note)

    def patch(
        self,
        tenant: str,
        namespace: str,
        name: str,
        *,
        heading: str,
        content: str,
        actor: str,
        expected_version: int | None = None,
        note: str = "",
    ) -> Skill:
        """Replace one section (the lines under `heading` up to the next heading of its level or higher)."""
        if not isinstance(content, str) or not isinstance(heading, str):
            raise ValidationFailed("heading and content must be text")

        def change(meta: SkillMeta, body: str) -> tuple[dict[str, Any], str]:
            _writable(meta, name)
            return _content_update(None, self._clock.now()), self._text.body(
                patch_section(body, heading, content)
            )

        return self._mutate(tenant, namespace, name, "patch", actor, change, expected_version, note)

    def archive(self, tenant: str, namespace: str, name: str, *, actor: str, note: str = "") -> Skill:
        return self.set_status(
            tenant, namespace, name, SkillStatus.ARCHIVED, actor=actor, note=note, action="archive"
        )

    def restore(self, tenant: str, namespace: str, name: str, *, actor: str, note: str = "") -> Skill:
        return self.set_status(
            tenant, namespace, name, SkillStatus.ACTIVE, actor=actor, note=note, action="restore"
        )

    def set_status(
        self,
        tenant: str,
        namespace: str,
        name: str,
        status: SkillStatus,
        *,
        actor: str,
        note: str = "",
        action: str | None = None,
        expected_version: int | None = None,
        expected_status: SkillStatus | None = None,
    ) -> Skill:
        """Move a skill to `status` (a new version; the previous one is kept). Refused when it is there
        already, or (for the curator) when its version or status is no longer the one it judged."""

        def change(meta: SkillMeta, body: str) -> tuple[dict[str, Any], str]:
            if expected_status is not None and meta.status is not expected_status:
                raise ConcurrentModification(
                    f"skill {name!r} is {meta.status.value} now, not {expected_status.value}", name=name
                )
            if meta.status is status:
                raise Conflict(f"skill {name!r} is already {status.value}", name=name, status=status.value)
            return {"status": status, "status_since": self._clock.now()}, body

        return self._mutate(
            tenant, namespace, name, action or status.value, actor, change, expected_version, note
        )

    def set_pinned(
        self, tenant: str, namespace: str, name: str, pinned: bool, *, actor: str, note: str = ""
    ) -> Skill:
        def change(meta: SkillMeta, body: str) -> tuple[dict[str, Any], str]:
            if meta.pinned is pinned:
                raise Conflict(f"skill {name!r} is already {'pinned' if pinned else 'unpinned'}", name=name)
            return {"pinned": pinned}, body

        return self._mutate(tenant, namespace, name, "pin" if pinned else "unpin", actor, change, None, note)

    # ------------------------------------------------------------------ signals

    def record_use(self, tenant: str, namespace: str, name: str, *, actor: str) -> Signals:
        self.get(tenant, namespace, name, signals=False)
        return self._signal(
            tenant, namespace, name, lambda s, now: _replace(s, uses=s.uses + 1, last_used_at=now)
        )

    def report_outcome(
        self, tenant: str, namespace: str, name: str, outcome: str, *, actor: str, note: str = ""
    ) -> Signals:
        """An outcome of a use (`helped` / `failed` / `misled`, with a note); it also counts as a use."""
        try:
            kind = Outcome(outcome)
        except ValueError:
            raise ValidationFailed(
                f"unknown outcome {outcome!r}: use one of {', '.join(o.value for o in Outcome)}",
                outcome=str(outcome),
            ) from None
        note = self._text.outcome_note(note)
        skill = self.get(tenant, namespace, name, signals=False)
        keep = self.config.recent_outcomes_kept

        def change(s: Signals, now: datetime) -> Signals:
            report = OutcomeReport(now, kind, _actor(actor), note, skill.meta.version)
            counts = dict(s.outcomes)
            counts[kind.value] = counts.get(kind.value, 0) + 1
            return _replace(s, outcomes=counts, recent=(*s.recent, report)[-keep:], last_used_at=now)

        return self._signal(tenant, namespace, name, change)

    # ------------------------------------------------------------------ internals

    def _signal(
        self, tenant: str, namespace: str, name: str, change: Callable[[Signals, datetime], Signals]
    ) -> Signals:
        path = skill_path(name, SIGNALS_FILE)
        now = self._clock.now()
        result: list[Signals] = []

        def on_file(current: str | None) -> str:
            updated = change(Signals.from_text(current, path), now)
            result.append(updated)
            return json.dumps(updated.as_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"

        self._files.update(tenant, namespace, path, on_file)
        return result[-1]

    def _mutate(
        self,
        tenant: str,
        namespace: str,
        name: str,
        action: str,
        actor: str,
        change: Callable[[SkillMeta, str], tuple[dict[str, Any], str]],
        expected_version: int | None,
        note: str,
    ) -> Skill:
        _check_scope(tenant, namespace)
        self._text.check_note(note)
        path = skill_path(name)
        # Checked before the locked write, so a missing skill leaves no directories behind.
        if self._files.read(tenant, namespace, path) is None:
            raise NotFound(f"no skill {name!r} in {namespace}", name=name)
        now = self._clock.now()
        result: list[tuple[SkillMeta, str]] = []

        def on_file(current: str | None) -> str:
            # Runs under SKILL.md's lock: version check, previous version kept, change logged, then written.
            if current is None:
                raise NotFound(f"no skill {name!r} in {namespace}", name=name)
            meta, body = parse(current, path=path)
            if expected_version is not None and meta.version != expected_version:
                raise ConcurrentModification(
                    f"skill {name!r} is at version {meta.version}, not {expected_version}: read it again",
                    name=name,
                    version=meta.version,
                )
            update, new_body = change(meta, body)
            new_meta = SkillMeta.model_validate(
                {**meta.model_dump(), **update, "version": meta.version + 1, "updated": now}
            )
            keep = version_path(name, meta.version)
            self._files.update(tenant, namespace, keep, lambda old: old if old is not None else current)
            self._log(tenant, namespace, name, new_meta, action, actor, note, now)
            result.append((new_meta, new_body))
            return render(new_meta, new_body)

        self._files.update(tenant, namespace, path, on_file)
        meta, body = result[-1]
        return Skill(meta, body, self.signals(tenant, namespace, name))

    def _log(
        self,
        tenant: str,
        namespace: str,
        name: str,
        meta: SkillMeta,
        action: str,
        actor: str,
        note: str,
        now: datetime,
    ) -> None:
        entry = {
            "version": meta.version,
            "action": action,
            "actor": _actor(actor),
            "at": now.isoformat(),
            "status": meta.status.value,
            "note": " ".join(str(note).split())[:500],
        }

        def append(current: str | None) -> str:
            changes = _load_changes(current)
            changes.append(entry)
            return json.dumps({"changes": changes}, ensure_ascii=False, indent=1) + "\n"

        self._files.update(tenant, namespace, skill_path(name, CHANGES_FILE), append)


def _writable(meta: SkillMeta, name: str) -> None:
    if meta.status is SkillStatus.ARCHIVED:
        raise Conflict(
            f"skill {name!r} is archived: restore it before changing it", name=name, status="archived"
        )


def _content_update(description: str | None, now: datetime) -> dict[str, Any]:
    """A content change is judged afresh: a stale skill is active again and its clock restarts."""
    update: dict[str, Any] = {"status": SkillStatus.ACTIVE, "status_since": now}
    if description is not None:
        update["description"] = description
    return update


def _replace(signals: Signals, **changes: Any) -> Signals:
    from dataclasses import replace

    return replace(signals, **changes)


def _load_changes(text: str | None) -> list[dict[str, Any]]:
    if not text or not text.strip():
        return []
    try:
        data = json.loads(text)
        changes = data["changes"]
        if not isinstance(changes, list):
            raise TypeError("changes is not a list")
        return changes
    except (ValueError, TypeError, KeyError) as error:
        raise MalformedSkill(f"a skill change log is not valid ({error}); fix it by hand") from None


def _actor(actor: str) -> str:
    text = " ".join(str(actor).split())[:128]
    return text or "unknown"


def _check_scope(tenant: str, namespace: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")
