"""The job function (AWS): runs one job per asynchronous invocation, `{"tenant", "job_id"}`, queued by the API
function (`adapters/aws/job_runner.py`) for an import or a large memory batch that answered 202.

It runs the job with the job service of its graph (`wiring/process.py` `JOB_WORKER`, built by `wiring/aws.py` `build_job_worker`: the API's services,
their record store, vector index and job store on credentials of the tenant access role with the session tag
`tenant=<tenant>`), holding it for the invocation's time left (`JobService.run`'s lease). The job's own
failure is the job's outcome (`failed`, with its error) and the invocation succeeds; only an error of the
runtime itself (the store unreachable) fails the invocation, after ending the lease, so that Lambda's retry
(twice, then the dead-letter queue) takes the job up again. A duplicate or retried event of a job that is
finished, or held by a live invocation, does nothing.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ConfigDict, Field

from . import initialization, request_scoped

with initialization():  # the service's own modules: see initialization()
    from ..domain.errors import Misconfigured
    from ..domain.model import Model
    from ..wiring.process import JOB_WORKER
    from ._runtime import powertools
    from .payloads import parse

logger, tracer, metrics = powertools()
graph = JOB_WORKER
"""The job function's services (`wiring.aws.build_job_worker`), built by the first job."""
LEASE_MARGIN = timedelta(seconds=30)
"""Beyond the invocation's time left: a retry never claims a job its first invocation may still be writing."""


class JobEvent(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: str = Field(min_length=1, max_length=128)
    job_id: str = Field(pattern=r"^job_[a-f0-9]{1,40}$")


@request_scoped
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    order = parse(JobEvent, event, "job")
    jobs = graph().jobs
    if jobs is None:
        raise Misconfigured("the job function has no job service (AGENT_MEMORY_JOB_FUNCTION unset)")
    lease = timedelta(milliseconds=context.get_remaining_time_in_millis()) + LEASE_MARGIN
    try:
        job = jobs.run(order.tenant, order.job_id, lease)
    except Exception:
        jobs.release(order.tenant, order.job_id)  # Lambda's retry may take it up at once
        raise
    if job is None:
        logger.info("nothing to run", extra={"tenant": order.tenant, "job": order.job_id})
        metrics.add_metric(name="JobEventsSkipped", unit=MetricUnit.Count, value=1)
        return {"job": order.job_id, "ran": False}
    metrics.add_metric(name=f"Jobs{job.status.value.title()}", unit=MetricUnit.Count, value=1)
    logger.info(
        "job done", extra={"tenant": job.tenant, "job": job.id, "kind": job.kind, "status": job.status.value}
    )
    return {"job": job.id, "ran": True, "status": job.status.value}
