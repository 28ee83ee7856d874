"""The work of the routes that answer 202 (routes/jobs.py): a large memory batch and an archive import; and,
on the local server, the dreaming sweeps of POST /v1/admin/dream/start and the steps of an executed purge.

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
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..domain import retry
from ..domain.erasure.model import PurgeKind, PurgePlan, PurgeState
from ..domain.erasure.service import PurgeInProgress
from ..domain.errors import ConcurrentModification, DomainError, Misconfigured, NotFound, ValidationFailed
from ..domain.identity import Principal, Scope
from ..domain.jobs.model import JobStatus
from ..domain.model import Model
from ..settings.workflows import Workflow

if TYPE_CHECKING:
    from ..domain.erasure.service import ErasureService
    from ..domain.jobs.model import Job
    from ..domain.jobs.service import JobService, Progress, Work
    from .context import Services

logger = logging.getLogger(__name__)

S = TypeVar("S")


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
    builders = {
        "memory_batch": batch_work,
        "import": import_work,
        "dream": dream_work,
        "purge": purge_work,
    }
    if job.kind not in builders:
        raise ValidationFailed(f"no worker for jobs of kind {job.kind!r}")
    return builders[job.kind](services, order.principal(), json.dumps(order.request), fence)


# ------------------------------------------------------------------ dreaming sweeps and purges as jobs

KEPT_EXECUTIONS = 100
"""Dream runs a launcher remembers (execution id -> handle) for tests and tools that wait on them."""


def _system_key(kind: str) -> str:
    """The `key_id` of jobs the server starts for itself: no API key has it (key ids are 12 hex digits), so no
    GET /v1/jobs/{id} shows them; their progress shows where it always did (dream runs, purge status)."""
    return f"system-{kind}"


def _system_order(tenant: str, kind: str, request: dict[str, Any]) -> str:
    principal = Principal(
        tenant=tenant,
        namespaces=("*",),
        scopes=frozenset({Scope.ADMIN, Scope.PURGE}),
        key_id=_system_key(kind),
    )
    return JobOrder.of(principal, None, json.dumps(request))


class JobHandle:
    """A started job, awaited like a future (`result`): polls the job store."""

    def __init__(self, jobs: JobService, tenant: str, key_id: str, job_id: str) -> None:
        self._jobs, self._tenant, self._key_id, self.job_id = jobs, tenant, key_id, job_id

    def result(self, timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self._jobs.get(self._tenant, self._key_id, self.job_id)
            if job.status is JobStatus.SUCCEEDED:
                return (job.result or {}).get("swept")
            if job.status is JobStatus.FAILED:
                raise RuntimeError(f"job {job.id} failed: {job.error}")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {job.id} is still {job.status.value}")
            time.sleep(0.05)


class JobLauncher(Generic[S]):
    """A workflow's launcher on the local server (`agent_memory.workflows`: its `job_kind` and start input):
    a start queues a job of that kind, run by the job worker process, tenants in turn with the imports and
    batches (`run_job` picks the work of the kind: a dreaming sweep writes each namespace's `run.json` and
    `REPORT.md` as the nightly sweep does, one namespace's failure not stopping the others, as the Map in AWS;
    a purge runs its steps, GET /v1/admin/purges/{id} showing its progress as in AWS). The execution id is the
    job's id; `started` keeps the last `KEPT_EXECUTIONS` for tests and tools that wait on them."""

    def __init__(self, jobs: JobService, workflow: Workflow[S]) -> None:
        if workflow.job_kind is None:
            raise ValueError(f"workflow {workflow.name} does not run as a job of the job worker")
        self._jobs, self._workflow, self._kind = jobs, workflow, workflow.job_kind
        self.started: OrderedDict[str, JobHandle] = OrderedDict()

    def start(self, tenant: str, subject: S) -> str:
        request = self._workflow.start_input(tenant, subject)
        namespaces = [str(namespace) for namespace in request.get("namespaces", [])]
        key_id = _system_key(self._kind)
        job = self._jobs.submit(
            tenant, key_id, self._kind, namespaces, _system_order(tenant, self._kind, request)
        )
        self.started[job.id] = JobHandle(self._jobs, tenant, key_id, job.id)
        while len(self.started) > KEPT_EXECUTIONS:  # a long-running server does not keep every run
            self.started.popitem(last=False)
        return job.id


def job_failure(jobs: JobService, tenant: str, kind: str, job_id: str) -> None:
    """Raise what a failed server job (`dream`, `purge`) failed with: the domain error of its code, or a
    RuntimeError (500) for an unexpected one. Nothing when it has not failed (or is gone: a tenant purge
    erases its own job)."""
    try:
        job = jobs.get(tenant, _system_key(kind), job_id)
    except NotFound:
        return
    if job.status is not JobStatus.FAILED or job.error is None:
        return
    error = job.error
    for cls in _domain_errors(DomainError):
        if cls.code == error.error:
            raise cls(error.message, **error.details)
    raise RuntimeError(f"the {kind} job {job_id} failed: {error.message}")


def _domain_errors(base: type[DomainError]) -> list[type[DomainError]]:
    found = []
    for sub in base.__subclasses__():
        found.extend([sub, *_domain_errors(sub)])
    return found


def dream_work(services: Services, principal: Principal, request: str, fence: JobFence) -> Work:
    dreaming, erasure, tenant = services.dreaming, services.erasure, principal.tenant
    if dreaming is None:
        raise Misconfigured("dreaming is not configured on this runtime")
    named = [str(ns) for ns in json.loads(request).get("namespaces", [])]

    def work(progress: Progress) -> dict[str, Any]:
        namespaces = named or list(dreaming.namespaces(tenant))
        swept: list[str] = []
        for done, namespace in enumerate(namespaces):
            try:
                if erasure is not None:
                    erasure.fence(tenant, namespaces=[namespace])  # a purge is erasing it: not now
                dreaming.run(tenant, namespace)
                swept.append(namespace)
            except Exception:  # one namespace's failure must not stop the others
                logger.exception("dreaming failed for %s %s", tenant, namespace)
            progress(done + 1, len(namespaces))
        return {"swept": swept}

    return work


def purge_work(services: Services, principal: Principal, request: str, fence: JobFence) -> Work:
    """The steps of an executing purge, then its verification (`ErasureService.run_step` until the plan is no
    longer `executing`). Not fenced: it is the purge."""
    erasure, tenant = services.erasure, principal.tenant
    if erasure is None:
        raise Misconfigured("erasure is not configured on this runtime")
    plan_id = str(json.loads(request)["plan_id"])

    def work(progress: Progress) -> dict[str, Any]:
        plan = erasure.status(tenant, plan_id)
        steps = 0
        while plan.state is PurgeState.EXECUTING:
            plan = _purge_step(erasure, tenant, plan_id)
            steps += 1
            progress(steps, None)
        return {"plan_id": plan.id, "state": plan.state.value}

    return work


def _purge_step(erasure: ErasureService, tenant: str, plan_id: str) -> PurgePlan:
    """One `run_step`, again when the plan changed under it: the request that started the job notes the job's
    id on the plan meanwhile (one more write). Each step is idempotent, so a repeated one erases nothing twice."""
    run = retry.Retry(retry.CONCURRENT_WRITE).attempts()
    for _ in run:
        try:
            return erasure.run_step(tenant, plan_id)
        except ConcurrentModification:
            continue
    raise ConcurrentModification(
        f"purge plan {plan_id} kept changing while its steps ran; execute it again to resume", plan_id=plan_id
    )
