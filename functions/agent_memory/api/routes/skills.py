"""/v1/skills: `skill_manage` and `skill_view` over HTTP, and the curator's admin routes.

Scopes: read lists and views (a view is recorded as a use signal), write creates and changes skills and
reports uses and outcomes; a skill whose provenance is not `agent`, or that is pinned, is set only with the
admin scope (the curator leaves those alone, so an agent key may not opt its own skills out of governance);
the curator routes need admin.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from pydantic import Field

from ...domain.errors import Forbidden, NotConfigured, NotFound
from ...domain.identity import Scope
from ...domain.model import Model
from ..context import RequestContext, current
from ..models import Namespace, Strict

if TYPE_CHECKING:
    from ...domain.skills.curator import CuratorReport, CuratorService
    from ...domain.skills.service import Signals, Skill, SkillsService

router = Router()

SkillName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$",
        description="Lower-case letters, digits and inner hyphens",
        examples=["deploy-checklist"],
    ),
]
Description = Annotated[str, Field(min_length=1, max_length=1024, description="One line: when to use it")]
Body = Annotated[str, Field(min_length=1, max_length=200_000, description="Markdown procedure")]
Note = Annotated[str, Field(max_length=2000, description="Why (kept in the change log)")]
StatusName = Literal["active", "stale", "archived"]


class SkillCreate(Strict):
    namespace: Namespace
    name: SkillName
    description: Description
    body: Body
    provenance: Literal["agent", "human", "imported"] = Field(
        "agent", description="Who wrote it; anything but `agent` needs the admin scope"
    )
    pinned: bool = Field(False, description="Never changed by the curator (admin scope)")
    note: Note = ""


class SkillEdit(Strict):
    namespace: Namespace
    body: Body
    description: Description | None = None
    expected_version: Annotated[int, Field(ge=1, le=10**9)] | None = None
    note: Note = ""


class SkillPatch(Strict):
    namespace: Namespace
    heading: Annotated[
        str, Field(min_length=1, max_length=300, description="The section's heading, e.g. '## Steps'")
    ]
    content: Annotated[str, Field(max_length=200_000, description="The new lines under that heading")]
    expected_version: Annotated[int, Field(ge=1, le=10**9)] | None = None
    note: Note = ""


class SkillAction(Strict):
    namespace: Namespace
    note: Note = ""


class SkillPin(Strict):
    namespace: Namespace
    pinned: bool
    note: Note = ""


class SkillUse(Strict):
    namespace: Namespace


class SkillOutcomeIn(Strict):
    namespace: Namespace
    outcome: Literal["helped", "failed", "misled"]
    note: Note = ""


class SignalsOut(Model):
    views: int
    uses: int
    last_used_at: datetime | None
    outcomes: dict[str, int]
    recent: list[dict[str, Any]] = Field(description="The last outcomes with their notes (bounded)")


class SkillOut(Model):
    namespace: str
    name: str
    description: str
    provenance: str
    author: str
    created: datetime
    updated: datetime
    version: int
    status: StatusName
    status_since: datetime
    pinned: bool
    body: str | None = Field(None, description="Only when one skill is viewed")
    signals: SignalsOut
    files: list[str] | None = Field(
        None,
        description="Only when one skill is viewed: the files kept beside its SKILL.md (`references/api.md`, "
        "`scripts/check.sh`), relative to the skill folder; read one with GET /v1/skills/{name}/file",
    )


class SkillFileOut(Model):
    namespace: str
    name: str
    path: str
    text: str


class SkillListOut(Model):
    namespace: str
    skills: list[SkillOut]
    unreadable: list[dict[str, str]] = Field(description="SKILL.md files that do not parse, with the error")


class SkillHistoryOut(Model):
    namespace: str
    name: str
    changes: list[dict[str, Any]]


class SkillVersionOut(Model):
    namespace: str
    name: str
    version: int
    text: str


class CurateRequest(Strict):
    namespace: Namespace | None = Field(
        None, description="One namespace; omitted: every namespace with skills"
    )
    dry_run: bool = Field(False, description="Compute the same report without changing or writing anything")
    force: bool = Field(False, description="Run again although today's run completed")


class CuratorRunOut(Model):
    namespace: str
    day: str
    run_id: str
    dry_run: bool
    status: str = Field(description="completed | already_done")
    summary: dict[str, int]
    decisions: list[dict[str, Any]]
    proposals: list[dict[str, Any]]
    unreadable: list[dict[str, str]]
    review: dict[str, Any]
    report: str = Field(description="REPORT.md")


class CurateResponse(Model):
    runs: list[CuratorRunOut]


class AcceptRequest(Strict):
    namespace: Namespace
    day: date
    proposal_id: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^p-[0-9a-z-]+$")]


class AcceptResponse(Model):
    proposal_id: str
    skills: list[SkillOut]


# --------------------------------------------------------------------------- skills


@router.get("/skills", summary="List the skills of a namespace (no bodies)", tags=["skills"])
def list_skills(
    namespace: Annotated[str, Query(max_length=520)],
    status: Annotated[StatusName | None, Query()] = None,
) -> SkillListOut:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    from ...domain.skills.document import SkillStatus

    listing = _skills(ctx).list_skills(
        ctx.principal.tenant, namespace, [SkillStatus(status)] if status else ()
    )
    return SkillListOut(
        namespace=namespace,
        skills=[_out(namespace, skill, body=False) for skill in listing.skills],
        unreadable=listing.unreadable,
    )


@router.post("/skills", summary="Create a skill (skill_manage create)", tags=["skills"], status_code=201)
def create_skill(body: SkillCreate) -> SkillOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    if body.provenance != "agent" or body.pinned:
        ctx.allow(Scope.ADMIN, body.namespace)
    from ...domain.skills.document import Provenance

    skill = _skills(ctx).create(
        ctx.principal.tenant,
        body.namespace,
        body.name,
        description=body.description,
        body=body.body,
        actor=ctx.principal.actor,
        provenance=Provenance(body.provenance),
        pinned=body.pinned,
        note=body.note,
    )
    return _out(body.namespace, skill, body=True)


@router.get(
    "/skills/<name>", summary="View one skill with its body (skill_view; recorded as a use)", tags=["skills"]
)
def view_skill(
    name: str,
    namespace: Annotated[str, Query(max_length=520)],
    record: Annotated[bool, Query(description="Record the view as a use signal")] = True,
) -> SkillOut:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    service = _skills(ctx)
    if record:
        skill = service.view(ctx.principal.tenant, namespace, name, actor=ctx.principal.actor)
    else:
        skill = service.get(ctx.principal.tenant, namespace, name)
    files = service.files.list(ctx.principal.tenant, namespace, name)
    return _out(namespace, skill, body=True, files=files)


@router.get(
    "/skills/<name>/file",
    summary="Read one file kept beside a skill's SKILL.md (references/, scripts/, assets/)",
    tags=["skills"],
)
def skill_file(
    name: str,
    namespace: Annotated[str, Query(max_length=520)],
    path: Annotated[
        str,
        Query(min_length=1, max_length=1000, description="Relative to the skill folder: references/api.md"),
    ],
) -> SkillFileOut:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    service = _skills(ctx)
    service.get(ctx.principal.tenant, namespace, name, signals=False)  # 404 for a skill that is not there
    text = service.files.read(ctx.principal.tenant, namespace, name, path)
    if text is None:
        raise NotFound(f"skill {name!r} keeps no file {path!r}", name=name, path=path)
    return SkillFileOut(namespace=namespace, name=name, path=path, text=text)


@router.post("/skills/<name>/edit", summary="Replace a skill's body (and description)", tags=["skills"])
def edit_skill(name: str, body: SkillEdit) -> SkillOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    skill = _skills(ctx).edit(
        ctx.principal.tenant,
        body.namespace,
        name,
        body=body.body,
        description=body.description,
        actor=ctx.principal.actor,
        expected_version=body.expected_version,
        note=body.note,
    )
    return _out(body.namespace, skill, body=True)


@router.post("/skills/<name>/patch", summary="Replace one section of a skill, by heading", tags=["skills"])
def patch_skill(name: str, body: SkillPatch) -> SkillOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    skill = _skills(ctx).patch(
        ctx.principal.tenant,
        body.namespace,
        name,
        heading=body.heading,
        content=body.content,
        actor=ctx.principal.actor,
        expected_version=body.expected_version,
        note=body.note,
    )
    return _out(body.namespace, skill, body=True)


@router.post("/skills/<name>/archive", summary="Archive a skill (kept, never deleted)", tags=["skills"])
def archive_skill(name: str, body: SkillAction) -> SkillOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    skill = _skills(ctx).archive(
        ctx.principal.tenant, body.namespace, name, actor=ctx.principal.actor, note=body.note
    )
    return _out(body.namespace, skill, body=False)


@router.post("/skills/<name>/restore", summary="Make a stale or archived skill active again", tags=["skills"])
def restore_skill(name: str, body: SkillAction) -> SkillOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    skill = _skills(ctx).restore(
        ctx.principal.tenant, body.namespace, name, actor=ctx.principal.actor, note=body.note
    )
    return _out(body.namespace, skill, body=False)


@router.post("/skills/<name>/pin", summary="Pin or unpin a skill (admin scope)", tags=["skills"])
def pin_skill(name: str, body: SkillPin) -> SkillOut:
    ctx = current()
    ctx.allow(Scope.ADMIN, body.namespace)
    skill = _skills(ctx).set_pinned(
        ctx.principal.tenant, body.namespace, name, body.pinned, actor=ctx.principal.actor, note=body.note
    )
    return _out(body.namespace, skill, body=False)


@router.post("/skills/<name>/use", summary="Record a use of a skill", tags=["skills"])
def use_skill(name: str, body: SkillUse) -> SignalsOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    return _signals(
        _skills(ctx).record_use(ctx.principal.tenant, body.namespace, name, actor=ctx.principal.actor)
    )


@router.post(
    "/skills/<name>/outcomes",
    summary="Report the outcome of a use: helped, failed or misled",
    tags=["skills"],
)
def report_outcome(name: str, body: SkillOutcomeIn) -> SignalsOut:
    ctx = current()
    ctx.allow(Scope.WRITE, body.namespace)
    signals = _skills(ctx).report_outcome(
        ctx.principal.tenant, body.namespace, name, body.outcome, actor=ctx.principal.actor, note=body.note
    )
    return _signals(signals)


@router.get(
    "/skills/<name>/history", summary="A skill's change log (every version, actor, note)", tags=["skills"]
)
def skill_history(name: str, namespace: Annotated[str, Query(max_length=520)]) -> SkillHistoryOut:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    changes = _skills(ctx).history(ctx.principal.tenant, namespace, name)
    return SkillHistoryOut(namespace=namespace, name=name, changes=changes)


@router.get("/skills/<name>/versions/<version>", summary="The SKILL.md text of one version", tags=["skills"])
def skill_version(
    name: str,
    version: Annotated[int, Path(ge=1, le=10**9)],
    namespace: Annotated[str, Query(max_length=520)],
) -> SkillVersionOut:
    ctx = current()
    ctx.allow(Scope.READ, namespace)
    text = _skills(ctx).version_text(ctx.principal.tenant, namespace, name, version)
    return SkillVersionOut(namespace=namespace, name=name, version=version, text=text)


# --------------------------------------------------------------------------- curator (admin)


@router.post("/admin/curate", summary="Run or explain the skills curator (admin scope)", tags=["admin"])
def curate(body: CurateRequest) -> CurateResponse:
    ctx = current()
    ctx.allow(Scope.ADMIN, *([body.namespace] if body.namespace else []))
    if body.namespace is None and not ctx.principal.allows_all:
        raise Forbidden("this API key is limited to some namespaces: name one in `namespace`")
    curator = _curator(ctx)
    tenant = ctx.principal.tenant
    namespaces = [body.namespace] if body.namespace else curator.namespaces(tenant)
    reports = [curator.run(tenant, ns, dry_run=body.dry_run, force=body.force) for ns in namespaces]
    return CurateResponse(runs=[_run_out(report) for report in reports])


@router.get("/admin/curator/runs", summary="A recorded curator run (run.json)", tags=["admin"])
def curator_run(
    namespace: Annotated[str, Query(max_length=520)],
    day: Annotated[str, Query(pattern=r"^\d{4}-\d{2}-\d{2}$")],
) -> CuratorRunOut:
    ctx = current()
    ctx.allow(Scope.ADMIN, namespace)
    from ...domain.errors import NotFound
    from ...domain.skills.curator import CuratorReport

    stored = _curator(ctx).stored_run(ctx.principal.tenant, namespace, day)
    if stored is None:
        raise NotFound(f"no curator run on {day} in {namespace}", day=day)
    return _run_out(CuratorReport.from_dict(stored, status="completed"))


@router.post("/admin/curator/accept", summary="Accept a curator proposal (admin scope)", tags=["admin"])
def accept_proposal(body: AcceptRequest) -> AcceptResponse:
    ctx = current()
    ctx.allow(Scope.ADMIN, body.namespace)
    changed = _curator(ctx).accept_proposal(
        ctx.principal.tenant,
        body.namespace,
        body.day.isoformat(),
        body.proposal_id,
        actor=ctx.principal.actor,
    )
    return AcceptResponse(
        proposal_id=body.proposal_id, skills=[_out(body.namespace, skill, body=False) for skill in changed]
    )


# --------------------------------------------------------------------------- helpers


def _skills(ctx: RequestContext) -> SkillsService:
    service = ctx.services.skills
    if service is None:
        raise NotConfigured("skills are not configured on this deployment")
    return service


def _curator(ctx: RequestContext) -> CuratorService:
    service = ctx.services.curator
    if service is None:
        raise NotConfigured("the skills curator is not configured on this deployment")
    return service


def _signals(signals: Signals) -> SignalsOut:
    data = signals.as_dict()
    return SignalsOut(
        views=data["views"],
        uses=data["uses"],
        last_used_at=signals.last_used_at,
        outcomes=data["outcomes"],
        recent=data["recent"],
    )


def _out(namespace: str, skill: Skill, *, body: bool, files: list[str] | None = None) -> SkillOut:
    meta = skill.meta
    return SkillOut(
        namespace=namespace,
        name=meta.name,
        description=meta.description,
        provenance=meta.provenance.value,
        author=meta.author,
        created=meta.created,
        updated=meta.updated,
        version=meta.version,
        status=meta.status.value,
        status_since=meta.status_since,
        pinned=meta.pinned,
        body=skill.body if body else None,
        signals=_signals(skill.signals),
        files=files,
    )


def _run_out(report: CuratorReport) -> CuratorRunOut:
    from ...domain.skills.curator import render_report

    data = report.to_dict()
    return CuratorRunOut(
        namespace=report.namespace,
        day=report.day,
        run_id=report.run_id,
        dry_run=report.dry_run,
        status=report.status,
        summary=data["summary"],
        decisions=data["decisions"],
        proposals=data["proposals"],
        unreadable=data["unreadable"],
        review=data["review"],
        report=render_report(report),
    )
