"""The AWS job path (issue 29): long work accepted with 202 by the API function and run by the job function.

| function (handler module) | builder | builds |
|---|---|---|
| job (`handlers/job_worker.py`) | `aws.build_job_worker` (slot `process.JOB_WORKER`) | the API's graph (the routes' synchronous paths that the jobs run) with the job service |

The API function queues a job (`JobService.submit`: the job item and its payload in the MemoryTable, a large
payload staged in S3, both with the tenant's credentials) and hands it to the job function by an asynchronous
invoke with its own role (`LambdaJobRunner`). The job function runs it (`JobService.run`) over the same
services the API would have used, so its `result` is what the synchronous route answers. Without
AGENT_MEMORY_JOB_FUNCTION the API wires no job service and those routes stay synchronous.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from . import parts

if TYPE_CHECKING:
    from ..adapters.aws.job_store import DynamoJobStore
    from ..api.context import Services
    from ..domain.erasure.ports import ContentStore
    from ..domain.jobs.service import JobService
    from .aws_parts import AwsBase


def job_service(base: AwsBase) -> JobService | None:
    """The job service of the API and job functions, or None when the stack set no job function."""
    settings = base.config.service
    if not settings.job_function:
        return None
    from ..adapters.aws.job_runner import LambdaJobRunner
    from ..adapters.aws.remote_file_store import LAMBDA_CLIENT_CONFIG
    from ..domain.jobs.service import JobService

    lost_after = settings.jobs.lost_after_seconds
    store = job_store(base)
    invoker = parts.client(base.config, base.clients.lambda_, "lambda", LAMBDA_CLIENT_CONFIG)
    return JobService(
        store,
        LambdaJobRunner(invoker, settings.job_function),
        base.clock,
        batch_threshold=settings.jobs.batch_threshold,
        max_queued_per_tenant=settings.jobs.max_queued_per_tenant,
        kinds=frozenset({"import", "memory_batch"}),  # dreams and purges: their Step Functions workflows
        lost_after=timedelta(seconds=lost_after) if lost_after else None,
    )


def job_store(base: AwsBase) -> DynamoJobStore:
    """The jobs in the MemoryTable (and their large requests in the staging bucket, when this function knows
    it), on the tenant's credentials."""
    from ..adapters.aws.job_store import DynamoJobStore

    bucket = base.config.service.job_staging_bucket
    return DynamoJobStore(
        base.config.service.table,
        base.tenant_client("dynamodb"),
        bucket,
        base.tenant_client("s3") if bucket else None,
    )


def job_eraser(base: AwsBase) -> ContentStore:
    """The purge's view of the jobs (every function that purges: the API and the purge workflow's steps)."""
    from ..adapters.aws.job_store import DynamoJobEraser

    return DynamoJobEraser(job_store(base))


def with_jobs(base: AwsBase, services: Services) -> Services:
    """`services` with the job service, its executor bound to them (api/jobs.py `run_job`)."""
    jobs = job_service(base)
    if jobs is None:
        return services
    from ..api.jobs import run_job

    services = replace(services, jobs=jobs)
    jobs.bind(lambda job, payload: run_job(services, job, payload))
    return services
