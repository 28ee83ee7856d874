"""The curator: the scheduled governor of agent-written skills (DESIGN §2 "Curator").

Writing and judging are separate: agents write skills at once (`service.py`), the curator judges them later,
per tenant and namespace (weekly by default). Rules, for skills whose provenance is `agent` and that are not
pinned (every number in `CuratorConfig`):

- the *judgement window* of a skill starts at its `status_since` (creation, last content change or status
  change): outcomes reported before it were about another version or another verdict and are not counted;
- bad outcomes **dominate** when at least `min_outcomes` (3) outcomes were reported in the window and
  (failed + misled) / all ≥ `bad_share` (0.5);
- `active → stale` when bad outcomes dominate, or after `stale_after_days` (30) without a view or use;
- `stale → active` when the skill was viewed or used since it went stale and bad outcomes do not dominate;
- `stale → archived` after `archive_after_days` (90) more days as stale;
- archived skills stay archived until a person restores them; nothing is ever deleted.

Human and imported skills (and pinned ones) are reported with what the rules would say, never changed.

Every real run writes `.curator/<day>/run.json` (every decision with its reason and inputs, every proposal)
and `.curator/<day>/REPORT.md`; a dry run computes the same report and writes nothing. A run is idempotent
per day (a second run of the day returns the recorded one unless forced) and holds a lease in
`.curator/lock.json` (taken with the file store's locked read-modify-write; it expires after
`lock_ttl_seconds` if a run dies). A status change is applied only if the skill is still at the version the
curator judged, so a concurrent edit is never overwritten (the decision is reported as skipped).

Optional LLM review (a `ReviewModel`, isolated from the chat model so it never touches a session's cache):
near-duplicate skills get a *merge* proposal, unclear ones an *improve* proposal, written into the report for
a person to accept (`accept_proposal`); nothing is applied silently.

The rules are in `curator_rules.py`, the run report in `curator_report.py`, the review in `curator_review.py`.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime, timedelta
from typing import Any

from ..errors import Conflict, DomainError, NotFound, ValidationFailed
from ..files.memory_files import CURATOR_DIR
from ..ports import Clock, FileStore
from ..records import is_valid_namespace, is_valid_tenant
from .config import CuratorConfig
from .curator_report import CuratorReport, day_path, render_report
from .curator_review import REVIEW_SYSTEM, ReviewModel, parse_proposals
from .curator_rules import TARGET, Action, Decision, decide
from .document import Provenance, SkillStatus
from .service import Skill, SkillsService

__all__ = [
    # re-exported: the rules, the report and the review were split out of this module (issue 31)
    "Action",
    "CuratorInProgress",
    "CuratorReport",
    "CuratorService",
    "Decision",
    "ReviewModel",
    "decide",
    "parse_proposals",
    "render_report",
]

ACTOR = "curator"
LOCK_PATH = f"{CURATOR_DIR}/lock.json"


class CuratorInProgress(Conflict):
    """Another curator run holds this namespace's lease (409)."""

    code = "curator_in_progress"


# --------------------------------------------------------------------------- service


class CuratorService:
    def __init__(
        self,
        skills: SkillsService,
        files: FileStore,
        clock: Clock,
        config: CuratorConfig | None = None,
        *,
        review_model: ReviewModel | None = None,
        namespace_lister: Callable[[str], Iterable[str]] | None = None,
    ) -> None:
        self._skills = skills
        self._files = files
        self._clock = clock
        self.config = config or CuratorConfig()
        self._review = review_model
        self._namespace_lister = namespace_lister

    def with_review(self, review_model: ReviewModel | None) -> CuratorService:
        """The same curator with another review model (or none)."""
        return CuratorService(
            self._skills,
            self._files,
            self._clock,
            self.config,
            review_model=review_model,
            namespace_lister=self._namespace_lister,
        )

    def namespaces(self, tenant: str) -> list[str]:
        """The tenant's namespaces that hold at least one skill."""
        if not is_valid_tenant(tenant):
            raise ValidationFailed(f"invalid tenant id {tenant!r}")
        if self._namespace_lister is None:
            return []
        found = [ns for ns in self._namespace_lister(tenant) if is_valid_namespace(ns)]
        return sorted(ns for ns in found if self._skills.names(tenant, ns))

    def run(
        self, tenant: str, namespace: str, *, dry_run: bool = False, force: bool = False, review: bool = True
    ) -> CuratorReport:
        _check(tenant, namespace)
        now = self._clock.now()
        day = now.date().isoformat()
        report = CuratorReport(
            tenant=tenant,
            namespace=namespace,
            day=day,
            run_id=f"cur_{uuid.uuid4().hex[:16]}",
            dry_run=dry_run,
            status="completed",
            started_at=now.isoformat(),
            config=self.config.model_dump(mode="json"),
        )
        if not dry_run:
            stored = self.stored_run(tenant, namespace, day)
            if stored is not None and not force:
                return CuratorReport.from_dict(stored, status="already_done")
            self._acquire(tenant, namespace, report.run_id, now)
        try:
            started = time.perf_counter()
            skills = self._load(tenant, namespace, report)
            decisions = [decide(skill.meta, skill.signals, now, self.config) for skill in skills]
            if not dry_run:
                # Each change is a few small file writes (new version, kept version, change log): on a network
                # file system they are latency-bound, so they run side by side (writers of one file serialise).
                changes = [i for i, d in enumerate(decisions) if d.new_status]
                with ThreadPoolExecutor(max_workers=self.config.io_concurrency) as pool:
                    applied = pool.map(
                        lambda i: self._apply(tenant, namespace, skills[i], decisions[i]), changes
                    )
                    for index, decision in zip(changes, applied, strict=True):
                        decisions[index] = decision
            report.decisions = decisions
            if review:
                self._propose(report, skills)
            report.seconds = time.perf_counter() - started
            if not dry_run:
                self._write(tenant, namespace, day_path(day, "run.json"), _dumps(report.to_dict()))
                self._write(tenant, namespace, day_path(day, "REPORT.md"), render_report(report))
            return report
        finally:
            if not dry_run:
                self._release(tenant, namespace, report.run_id)

    def stored_run(self, tenant: str, namespace: str, day: str) -> dict[str, Any] | None:
        _check(tenant, namespace)
        try:
            date.fromisoformat(day)
        except ValueError:
            raise ValidationFailed(f"invalid day {day!r}: use YYYY-MM-DD", day=day) from None
        return _loads(self._files.read(tenant, namespace, day_path(day, "run.json")))

    def accept_proposal(
        self, tenant: str, namespace: str, day: str, proposal_id: str, *, actor: str
    ) -> list[Skill]:
        """Apply one proposal of a run, as `actor`: improve rewrites the skill; merge rewrites the first skill and
        archives the others. Refused when any of its skills changed since the run judged it."""
        proposal = self._proposal(tenant, namespace, day, proposal_id)
        accepted_path = day_path(day, "accepted.json")
        versions: dict[str, int] = proposal["versions"]
        note = f"curator proposal {proposal_id} of {day} accepted"
        proposed = proposal["proposed"]
        target = proposal["skills"][0]
        changed = [
            self._skills.edit(
                tenant,
                namespace,
                target,
                body=proposed["body"],
                description=proposed.get("description"),
                actor=actor,
                expected_version=versions[target],
                note=note,
            )
        ]
        for name in proposal["skills"][1:]:
            changed.append(
                self._skills.set_status(
                    tenant,
                    namespace,
                    name,
                    SkillStatus.ARCHIVED,
                    actor=actor,
                    note=f"{note}: merged into {target}",
                    action="archive",
                    expected_version=versions[name],
                )
            )

        def mark(current: str | None) -> str:
            accepted = _loads(current) or {}
            if proposal_id in accepted:
                raise Conflict(f"proposal {proposal_id} was already accepted", proposal_id=proposal_id)
            accepted[proposal_id] = {"actor": actor, "at": self._clock.now().isoformat()}
            return _dumps(accepted)

        self._files.update(tenant, namespace, accepted_path, mark)
        return changed

    # ------------------------------------------------------------------ internals

    def _proposal(self, tenant: str, namespace: str, day: str, proposal_id: str) -> dict[str, Any]:
        """A stored run's proposal that is not accepted yet and whose skills are still at the judged versions."""
        stored = self.stored_run(tenant, namespace, day)
        if stored is None:
            raise NotFound(f"no curator run on {day} in {namespace}", day=day)
        proposal = next((p for p in stored.get("proposals", []) if p.get("id") == proposal_id), None)
        if proposal is None:
            raise NotFound(f"run {day} has no proposal {proposal_id!r}", proposal_id=proposal_id)
        if proposal_id in (_loads(self._files.read(tenant, namespace, day_path(day, "accepted.json"))) or {}):
            raise Conflict(f"proposal {proposal_id} was already accepted", proposal_id=proposal_id)
        versions: dict[str, int] = proposal["versions"]
        for name in proposal["skills"]:
            current = self._skills.get(tenant, namespace, name, signals=False)
            if current.meta.version != versions[name]:
                raise Conflict(
                    f"skill {name!r} changed since the proposal (version {current.meta.version}, proposal "
                    f"judged {versions[name]}); run the curator again",
                    name=name,
                )
        return proposal

    def _load(self, tenant: str, namespace: str, report: CuratorReport) -> list[Skill]:
        """Every skill of the namespace with its signals, read side by side; unreadable ones are reported."""

        def load(name: str) -> Skill | dict[str, str] | None:
            try:
                return self._skills.get(tenant, namespace, name)
            except NotFound:  # removed since the listing
                return None
            except ValidationFailed as error:  # MalformedSkill included: reported, never guessed at
                return {"name": name, "error": error.message}

        skills: list[Skill] = []
        with ThreadPoolExecutor(max_workers=self.config.io_concurrency) as pool:
            for loaded in pool.map(load, self._skills.names(tenant, namespace)):
                if isinstance(loaded, Skill):
                    skills.append(loaded)
                elif loaded is not None:
                    report.unreadable.append(loaded)
        return skills

    def _apply(self, tenant: str, namespace: str, skill: Skill, decision: Decision) -> Decision:
        target = TARGET[decision.action]
        try:
            self._skills.set_status(
                tenant,
                namespace,
                skill.name,
                target,
                actor=ACTOR,
                note=decision.reason,
                action=f"curator:{decision.action.value}",
                expected_version=skill.meta.version,
                expected_status=skill.meta.status,
            )
        except DomainError as error:
            return _with(decision, applied=False, error=f"skipped: {error.message}")
        return _with(decision, applied=True)

    def _propose(self, report: CuratorReport, skills: list[Skill]) -> None:
        if self._review is None or self.config.review_max_skills == 0:
            report.review = {"used": False, "note": "No review model configured: rule path only."}
            return
        governed = [
            s
            for s in skills
            if s.meta.provenance is Provenance.AGENT
            and s.meta.status is not SkillStatus.ARCHIVED
            and not s.meta.pinned
        ][: self.config.review_max_skills]
        if not governed:
            report.review = {"used": False, "note": "No agent-written skill to review."}
            return
        prompt = json.dumps(
            [
                {
                    "name": s.name,
                    "description": s.meta.description,
                    "body": s.body[: self.config.review_body_chars],
                }
                for s in governed
            ],
            ensure_ascii=False,
        )
        try:
            answer = self._review.complete(system=REVIEW_SYSTEM, prompt=prompt, max_tokens=4000)
        except DomainError as error:
            report.review = {"used": True, "note": f"Review failed ({error.message}); no proposals this run."}
            return
        proposals, dropped = parse_proposals(answer, {s.name: s for s in governed}, report.day)
        report.proposals = proposals
        report.review = {"used": True, "dropped": dropped, "note": f"{len(proposals)} proposals for review."}

    def _acquire(self, tenant: str, namespace: str, run_id: str, now: datetime) -> None:
        ttl = timedelta(seconds=self.config.lock_ttl_seconds)

        def change(current: str | None) -> str:
            lease = _loads(current) or {}
            owner, expires = lease.get("owner"), lease.get("expires_at")
            if owner and owner != run_id and expires and datetime.fromisoformat(expires) > now:
                raise CuratorInProgress(
                    f"another curator run of {namespace} is running (run {owner}, lease until {expires}); retry later",
                    owner=owner,
                    expires_at=expires,
                )
            return _dumps(
                {"owner": run_id, "acquired_at": now.isoformat(), "expires_at": (now + ttl).isoformat()}
            )

        self._files.update(tenant, namespace, LOCK_PATH, change)

    def _release(self, tenant: str, namespace: str, run_id: str) -> None:
        def change(current: str | None) -> str:
            lease = _loads(current) or {}
            if lease.get("owner") != run_id:
                return current or _dumps({})
            return _dumps({"owner": None, "released_at": self._clock.now().isoformat(), "last_run": run_id})

        with contextlib.suppress(DomainError):  # the lease expires on its own; never mask the run's outcome
            self._files.update(tenant, namespace, LOCK_PATH, change)

    def _write(self, tenant: str, namespace: str, path: str, text: str) -> None:
        self._files.update(tenant, namespace, path, lambda _current: text)


def _with(decision: Decision, **changes: Any) -> Decision:
    from dataclasses import replace

    return replace(decision, **changes)


def _check(tenant: str, namespace: str) -> None:
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")
    if not is_valid_namespace(namespace):
        raise ValidationFailed(f"invalid namespace {namespace!r}: use a path like /projects/billing")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def _loads(text: str | None) -> dict[str, Any] | None:
    if not text or not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationFailed(
            f"a curator state file is not valid JSON ({error}); fix or remove it"
        ) from None
    return value if isinstance(value, dict) else None
