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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from ..errors import Conflict, DomainError, NotFound, ValidationFailed
from ..files.memory_files import CURATOR_DIR
from ..ports import Clock, FileStore
from ..records import is_valid_namespace, is_valid_tenant
from .config import CuratorConfig
from .document import Provenance, SkillMeta, SkillStatus, validate_name
from .service import BAD_OUTCOMES, Outcome, Signals, Skill, SkillsService

ACTOR = "curator"
LOCK_PATH = f"{CURATOR_DIR}/lock.json"
_DAY_SECONDS = 86_400.0


class CuratorInProgress(Conflict):
    """Another curator run holds this namespace's lease (409)."""

    code = "curator_in_progress"


class ReviewModel(Protocol):
    """A text model that answers one prompt (Bedrock Converse in AWS), never the sessions' chat model."""

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2000) -> str: ...


class Action(StrEnum):
    KEEP = "keep"
    STALE = "stale"
    ARCHIVE = "archive"
    REACTIVATE = "reactivate"
    REPORT = "report_only"
    """Human, imported or pinned: the rules' verdict is reported, nothing is changed."""


_TARGET: dict[Action, SkillStatus] = {
    Action.STALE: SkillStatus.STALE,
    Action.ARCHIVE: SkillStatus.ARCHIVED,
    Action.REACTIVATE: SkillStatus.ACTIVE,
}


@dataclass(frozen=True)
class Decision:
    name: str
    provenance: str
    status: str
    action: Action
    reason: str
    inputs: dict[str, Any]
    verdict: Action = Action.KEEP
    """What the rules say regardless of provenance and pinning (equal to `action` for governed skills)."""
    applied: bool = False
    error: str = ""

    @property
    def new_status(self) -> str | None:
        target = _TARGET.get(self.action)
        return target.value if target else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "provenance": self.provenance,
            "status": self.status,
            "action": self.action.value,
            "verdict": self.verdict.value,
            "new_status": self.new_status,
            "reason": self.reason,
            "inputs": self.inputs,
            "applied": self.applied,
            "error": self.error,
        }


def decide(meta: SkillMeta, signals: Signals, now: datetime, config: CuratorConfig) -> Decision:
    """The rule path's decision for one skill (pure)."""
    since = meta.status_since
    window = [r for r in signals.recent if r.at >= since]
    counts = {o.value: sum(1 for r in window if r.outcome is o) for o in Outcome}
    total = len(window)
    bad = sum(1 for r in window if r.outcome in BAD_OUTCOMES)
    share = bad / total if total else 0.0
    dominated = total >= config.min_outcomes and share >= config.bad_share
    last_used = signals.last_used_at
    activity = max(since, last_used) if last_used else since
    idle_days = max(0.0, (now - activity).total_seconds() / _DAY_SECONDS)
    days_in_status = max(0.0, (now - since).total_seconds() / _DAY_SECONDS)
    used_since = last_used is not None and last_used > since
    inputs: dict[str, Any] = {
        "version": meta.version,
        "pinned": meta.pinned,
        "status_since": since.isoformat(),
        "last_used_at": last_used.isoformat() if last_used else None,
        "idle_days": round(idle_days, 2),
        "days_in_status": round(days_in_status, 2),
        "outcomes_in_window": counts,
        "bad_share": round(share, 3),
        "bad_outcomes_dominate": dominated,
    }
    verdict, reason = _rules(
        meta.status, dominated, idle_days, days_in_status, used_since, bad, total, share, config
    )
    action = verdict
    if meta.provenance is not Provenance.AGENT:
        action = Action.REPORT
        reason = f"{meta.provenance.value} skill: reported, never changed by the curator (rules: {reason})"
    elif meta.pinned:
        action = Action.REPORT
        reason = f"pinned: never changed by the curator (rules: {reason})"
    return Decision(meta.name, meta.provenance.value, meta.status.value, action, reason, inputs, verdict)


def _rules(
    status: SkillStatus,
    dominated: bool,
    idle_days: float,
    days_in_status: float,
    used_since: bool,
    bad: int,
    total: int,
    share: float,
    config: CuratorConfig,
) -> tuple[Action, str]:
    outcomes = f"{bad} of {total} outcomes failed or misled ({share:.0%} ≥ {config.bad_share:.0%})"
    if status is SkillStatus.ARCHIVED:
        return Action.KEEP, "archived: stays archived until a person restores it"
    if status is SkillStatus.ACTIVE:
        if dominated:
            return Action.STALE, f"bad outcomes dominate: {outcomes}"
        if idle_days >= config.stale_after_days:
            return (
                Action.STALE,
                f"not viewed or used for {idle_days:.0f} days (≥ {config.stale_after_days:g})",
            )
        return Action.KEEP, f"in use: last activity {idle_days:.0f} days ago, outcomes do not dominate bad"
    if used_since and not dominated:
        return Action.REACTIVATE, "used again since it went stale, and bad outcomes do not dominate"
    if days_in_status >= config.archive_after_days:
        return Action.ARCHIVE, f"stale for {days_in_status:.0f} days (≥ {config.archive_after_days:g})"
    left = config.archive_after_days - days_in_status
    return Action.KEEP, f"stale for {days_in_status:.0f} days; archived in {left:.0f} more unless used"


# --------------------------------------------------------------------------- report


@dataclass
class CuratorReport:
    tenant: str
    namespace: str
    day: str
    run_id: str
    dry_run: bool
    status: str
    """completed | already_done"""
    started_at: str
    config: dict[str, Any]
    decisions: list[Decision] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    review: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {"skills": len(self.decisions), "unreadable": len(self.unreadable)}
        for decision in self.decisions:
            counts[decision.action.value] = counts.get(decision.action.value, 0) + 1
        counts["applied"] = sum(1 for d in self.decisions if d.applied)
        counts["proposals"] = len(self.proposals)
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "namespace": self.namespace,
            "day": self.day,
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "status": self.status,
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "config": self.config,
            "summary": self.summary,
            "decisions": [d.as_dict() for d in self.decisions],
            "proposals": self.proposals,
            "unreadable": self.unreadable,
            "review": self.review,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, status: str) -> CuratorReport:
        decisions = [
            Decision(
                name=str(d["name"]),
                provenance=str(d["provenance"]),
                status=str(d["status"]),
                action=Action(d["action"]),
                reason=str(d["reason"]),
                inputs=dict(d.get("inputs") or {}),
                verdict=Action(d.get("verdict", d["action"])),
                applied=bool(d.get("applied")),
                error=str(d.get("error", "")),
            )
            for d in data.get("decisions", [])
        ]
        return cls(
            tenant=str(data["tenant"]),
            namespace=str(data["namespace"]),
            day=str(data["day"]),
            run_id=str(data["run_id"]),
            dry_run=bool(data.get("dry_run")),
            status=status,
            started_at=str(data.get("started_at", "")),
            config=dict(data.get("config") or {}),
            decisions=decisions,
            proposals=list(data.get("proposals") or []),
            unreadable=list(data.get("unreadable") or []),
            review=dict(data.get("review") or {}),
            seconds=float(data.get("seconds") or 0.0),
        )


def render_report(report: CuratorReport) -> str:
    """REPORT.md: what changed and why, what was only reported, and the proposals waiting for a person."""
    mode = "dry run: nothing was changed" if report.dry_run else "changes applied"
    lines = [
        f"# Curator report {report.namespace} {report.day}",
        "",
        f"Run `{report.run_id}` ({mode}); {len(report.decisions)} skills judged in {report.seconds:.2f} s.",
        "",
        "| decision | count |",
        "| --- | --- |",
    ]
    lines += [f"| {key} | {value} |" for key, value in sorted(report.summary.items())]
    sections = (
        ("Changed", [d for d in report.decisions if d.new_status]),
        (
            "Reported only (human, imported or pinned)",
            [d for d in report.decisions if d.action is Action.REPORT],
        ),
        ("Kept", [d for d in report.decisions if d.action is Action.KEEP]),
    )
    for title, decisions in sections:
        lines += ["", f"## {title} [{len(decisions)}]"]
        for d in decisions:
            move = f"{d.status} → {d.new_status}" if d.new_status else d.status
            state = "" if not d.new_status else (" (applied)" if d.applied else " (not applied)")
            error = f" — {d.error}" if d.error else ""
            lines.append(f"- `{d.name}` [{d.provenance}] {move}{state}: {d.reason}{error}")
    lines += ["", f"## Proposals [{len(report.proposals)}]"]
    if report.review.get("note"):
        lines.append(str(report.review["note"]))
    for proposal in report.proposals:
        skills = ", ".join(f"`{s}`" for s in proposal["skills"])
        lines.append(f"- `{proposal['id']}` {proposal['kind']} {skills}: {proposal['reason']}")
    if report.proposals:
        lines += [
            "",
            "Accept one with `agent-memory skills accept <id> --day DAY` or POST /v1/admin/curator/accept.",
        ]
    if report.unreadable:
        lines += ["", f"## Unreadable [{len(report.unreadable)}]"]
        lines += [f"- `{u['name']}`: {u['error']}" for u in report.unreadable]
    return "\n".join(lines) + "\n"


def day_path(day: str, name: str) -> str:
    return f"{CURATOR_DIR}/{day}/{name}"


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
        stored = self.stored_run(tenant, namespace, day)
        if stored is None:
            raise NotFound(f"no curator run on {day} in {namespace}", day=day)
        proposal = next((p for p in stored.get("proposals", []) if p.get("id") == proposal_id), None)
        if proposal is None:
            raise NotFound(f"run {day} has no proposal {proposal_id!r}", proposal_id=proposal_id)
        accepted_path = day_path(day, "accepted.json")
        if proposal_id in (_loads(self._files.read(tenant, namespace, accepted_path)) or {}):
            raise Conflict(f"proposal {proposal_id} was already accepted", proposal_id=proposal_id)
        versions: dict[str, int] = proposal["versions"]
        note = f"curator proposal {proposal_id} of {day} accepted"
        proposed = proposal["proposed"]
        target = proposal["skills"][0]
        for name in proposal["skills"]:
            current = self._skills.get(tenant, namespace, name, signals=False)
            if current.meta.version != versions[name]:
                raise Conflict(
                    f"skill {name!r} changed since the proposal (version {current.meta.version}, proposal "
                    f"judged {versions[name]}); run the curator again",
                    name=name,
                )
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
        target = _TARGET[decision.action]
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


REVIEW_SYSTEM = (
    "You review procedures ('skills') that AI agents wrote for themselves. Find (1) near-duplicates: skills "
    "that describe the same procedure and should be one; (2) unclear skills: vague, contradictory or missing "
    "steps. Answer with JSON only: "
    '{"proposals": [{"kind": "merge", "skills": ["<keep>", "<other>", ...], "reason": "...", '
    '"description": "<one line>", "body": "<merged Markdown body>"}, {"kind": "improve", "skills": ["<name>"], '
    '"reason": "...", "description": "<one line>", "body": "<improved Markdown body>"}]}. '
    'Use only the given names. Return {"proposals": []} when all skills are distinct and clear.'
)


def parse_proposals(answer: str, skills: dict[str, Skill], day: str) -> tuple[list[dict[str, Any]], int]:
    """The model's proposals that name known skills and carry a body; the rest is dropped (and counted)."""
    text = answer.strip()
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if start >= 0 else {}
    except json.JSONDecodeError:
        return [], 1
    raw = data.get("proposals") if isinstance(data, dict) else None
    proposals: list[dict[str, Any]] = []
    dropped = 0
    for item in raw if isinstance(raw, list) else []:
        try:
            kind = str(item["kind"])
            names = [validate_name(n) for n in item["skills"]]
            body, description = str(item["body"]), str(item.get("description") or "")
            if kind not in ("merge", "improve") or not body.strip() or any(n not in skills for n in names):
                raise ValueError("unknown kind, skill or empty body")
            if (kind == "merge") != (len(names) >= 2) or len(set(names)) != len(names):
                raise ValueError("a merge names two or more skills, an improvement one")
        except (KeyError, TypeError, ValueError, DomainError):
            dropped += 1
            continue
        digest = hashlib.sha256(json.dumps([kind, names, body], ensure_ascii=False).encode()).hexdigest()[:10]
        proposals.append(
            {
                "id": f"p-{day}-{digest}",
                "kind": kind,
                "skills": names,
                "reason": " ".join(str(item.get("reason", "")).split())[:500],
                "versions": {n: skills[n].meta.version for n in names},
                "proposed": {"description": description or skills[names[0]].meta.description, "body": body},
            }
        )
    return proposals, dropped


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
