"""/v1/jobs: the state of long work accepted with 202 (imports and large memory batches): run by the local
server's job worker process, or in AWS by the job function (handlers/job_worker.py).

A job is visible only to the API key that submitted it, in its tenant: any other key, of this tenant or
another, gets 404 as for a job that does not exist."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler.api_gateway import Response, Router

from ...domain.errors import NotFound
from ...domain.jobs.model import Job, JobError, JobKind, JobProgress, JobStatus
from ...domain.model import Model
from ..context import RequestContext, current

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

    from ...domain.jobs.service import JobService

router = Router()
_ID = re.compile(r"job_[a-f0-9]{1,40}")
POLL_AFTER_SECONDS = 1
"""The `Retry-After` of a 202 and of an unfinished job: when to look again."""


class JobResponse(Model):
    id: str
    kind: JobKind
    """`import` (POST /v1/imports) or `memory_batch` (POST /v1/memories/batch above the synchronous size).
    (`dream` and `purge` jobs are the local server's own, run for POST /v1/admin/dream/start and a purge's execute:
    no API key sees them here; their progress shows in the dream runs and the purge's status.)"""
    status: JobStatus
    """`queued`, `running`, then `succeeded` (see `result`) or `failed` (see `error`)."""
    namespaces: list[str]
    progress: JobProgress
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    result: dict[str, Any] | None = None
    """When `succeeded`: the body the route answers synchronously (a batch's `results` and `counts`; an
    import's `report` and `markdown`)."""
    error: JobError | None = None
    """When `failed`: `{error, message, details}` as a synchronous refusal would have had them. What the job
    wrote before it failed stays written (a batch's items are independent; an import can be rolled back)."""
    location: str
    """Where to poll: GET this path until `status` is `succeeded` or `failed`."""


def job_response(job: Job) -> JobResponse:
    return JobResponse(
        **job.model_dump(include=set(JobResponse.model_fields) - {"location"}),
        location=f"/v1/jobs/{job.id}",
    )


def accepted(job: Job) -> Response[Any]:
    """The 202 answer of a route that ran its work as a job."""
    return Response(
        status_code=202,
        content_type="application/json",
        body=job_response(job),
        headers={"Location": f"/v1/jobs/{job.id}", "Retry-After": str(POLL_AFTER_SECONDS)},
    )


def jobs_of(ctx: RequestContext) -> JobService | None:
    return ctx.services.jobs


def accepted_response(what: str) -> dict[int, OpenAPIResponse]:
    return {
        202: {
            "description": f"{what} runs as a job (the local job worker; in AWS the job function). "
            "`Location` (and the body's `location`) is "
            "`/v1/jobs/{id}`: poll it (after `Retry-After` seconds) until `status` is `succeeded` (its `result` "
            "is the 200 body) or `failed` (its `error`)",
            "content": {"application/json": {"model": JobResponse}},
        }
    }


@router.get(
    "/jobs/<job_id>",
    summary="A job's status, progress and outcome (the key that submitted it)",
    tags=["jobs"],
)
def get_job(job_id: str) -> Response[JobResponse]:
    ctx = current()
    service = jobs_of(ctx)
    if service is None or not _ID.fullmatch(job_id):
        raise NotFound(f"no job with id {job_id[:60]!r}")
    job = service.get(ctx.principal.tenant, ctx.principal.key_id, job_id)
    headers = (
        {}
        if job.status in (JobStatus.SUCCEEDED, JobStatus.FAILED)
        else {"Retry-After": str(POLL_AFTER_SECONDS)}
    )
    return Response(status_code=200, content_type="application/json", body=job_response(job), headers=headers)
