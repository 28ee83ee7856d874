"""The work of the routes that answer 202 (routes/jobs.py): a large memory batch and an archive import.

The route checks what it can within the request (scopes, namespaces, sizes, a readable archive), then queues
a `JobOrder`: the request as received, who sent it, and the purges executed by then. A job worker (on the
local server, a separate process: adapters/local/job_process.py) runs it through `run_job`, the route's
synchronous path over the worker's own services, with the purge fence (api/purge_fence.py) checked again when
the job starts and, for an import, between its batches. The request's fence only covered the moment the job
was accepted; here:

- a purge that is `executing` over the job's namespaces (or the tenant) stops the job: it fails with
  `purge_in_progress` and writes nothing more;
- a tenant or namespace purge over the job's namespaces that was executed after the job was accepted stops it
  too (`purged_since_accepted`): the job must not bring back what an administrator erased after the request.
  Submit the job again if its data should be stored after all.

What the job wrote before it stopped stays written (a batch's items are independent; an import's report names
them and can be rolled back)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..domain.erasure.model import PurgeKind
from ..domain.erasure.service import PurgeInProgress
from ..domain.errors import ValidationFailed
from ..domain.identity import Principal, Scope
from ..domain.model import Model

if TYPE_CHECKING:
    from ..domain.erasure.service import ErasureService
    from ..domain.jobs.model import Job
    from ..domain.jobs.service import Work
    from .context import Services


class PurgedSinceAccepted(PurgeInProgress):
    code = "purged_since_accepted"


class JobFence:
    """The purge fence of one job's namespaces, from the moment it was accepted (`known`: the purges
    executed by then, `executed_purges` at that moment)."""

    def __init__(
        self,
        erasure: ErasureService | None,
        tenant: str,
        namespaces: Sequence[str],
        known: set[str] | None = None,
    ) -> None:
        self._erasure = erasure
        self._tenant = tenant
        self._namespaces = sorted(set(namespaces))
        self._known = known if known is not None else executed_purges(erasure, tenant)

    def check(self) -> None:
        if self._erasure is None:
            return
        self._erasure.fence(self._tenant, namespaces=self._namespaces)
        for plan in self._erasure.list(self._tenant):
            if plan.executed_at is None or plan.id in self._known:
                continue
            kind = plan.target.kind
            if kind is PurgeKind.TENANT or (
                kind is PurgeKind.NAMESPACE and plan.target.namespace in self._namespaces
            ):
                raise PurgedSinceAccepted(
                    f"purge {plan.id} erased this job's namespace after the job was accepted; the job stopped "
                    "so as not to write back into it. Submit it again if the data should be stored",
                    plan_id=plan.id,
                )


def executed_purges(erasure: ErasureService | None, tenant: str) -> set[str]:
    if erasure is None:
        return set()
    return {plan.id for plan in erasure.list(tenant) if plan.executed_at is not None}


class JobOrder(Model):
    """What a queued job is to do (kept with it in the job store until it finishes)."""

    tenant: str
    key_id: str
    namespaces: list[str]
    """The submitting key's namespace patterns (what it may write)."""
    scopes: list[str]
    known_purges: list[str]
    """Purges of the tenant executed when the job was accepted (the fence stops at any later one)."""
    request: dict[str, Any]
    """The route's request body (an object, so that a purge's search of the job store reads its fields)."""

    @classmethod
    def of(cls, principal: Principal, erasure: ErasureService | None, request: str) -> str:
        return cls(
            tenant=principal.tenant,
            key_id=principal.key_id,
            namespaces=list(principal.namespaces),
            scopes=sorted(scope.value for scope in principal.scopes),
            known_purges=sorted(executed_purges(erasure, principal.tenant)),
            request=json.loads(request),
        ).model_dump_json()

    def principal(self) -> Principal:
        return Principal(
            tenant=self.tenant,
            namespaces=tuple(self.namespaces),
            scopes=frozenset(Scope(scope) for scope in self.scopes),
            key_id=self.key_id,
        )


def run_job(services: Services, job: Job, payload: str) -> Work:
    """The work of a queued job, over `services` (the worker's runtime)."""
    from .routes.imports import import_work
    from .routes.memories import batch_work

    order = JobOrder.model_validate_json(payload)
    if order.tenant != job.tenant or order.key_id != job.key_id:
        raise ValidationFailed("the job's order does not belong to it")
    fence = JobFence(services.erasure, job.tenant, job.namespaces, known=set(order.known_purges))
    builders = {"memory_batch": batch_work, "import": import_work}
    if job.kind not in builders:
        raise ValidationFailed(f"no worker for jobs of kind {job.kind!r}")
    return builders[job.kind](services, order.principal(), json.dumps(order.request), fence)
