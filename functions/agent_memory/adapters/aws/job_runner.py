"""`JobRunner` of the AWS runtime: a queued job is handed to the job function by an asynchronous Lambda
invoke (`InvocationType="Event"`), with the API function's own role.

The event names the job only (`{"tenant", "job_id"}`, a few dozen bytes): what it is to do stays in the job
store, under the tenant's keys, and the job function reads it with that tenant's credentials. Lambda queues
the event, retries a failed invocation twice and sends what still fails to the function's dead-letter queue;
the job function is idempotent on those retries (`JobService.run`: a lease, then the work's own idempotency).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import Misconfigured, UpstreamUnavailable
from ...domain.jobs.model import Job
from ._errors import error_code, upstream_errors


class LambdaJobRunner:
    def __init__(self, client: Any, function_name: str) -> None:
        if not function_name:
            raise ValueError("the job function's name is empty")
        self._client = client
        self._function = function_name

    def submit(self, job: Job) -> None:
        """Queue the job's event with Lambda (202 from Lambda); anything else is `UpstreamUnavailable`, and
        the job service fails the job rather than leave it queued with no event to run it."""
        payload = json.dumps({"tenant": job.tenant, "job_id": job.id}).encode("utf-8")
        try:
            with upstream_errors("Lambda", "Invoke"):
                response = self._client.invoke(
                    FunctionName=self._function, InvocationType="Event", Payload=payload
                )
        except ClientError as error:  # refused (not throttling): a deployment problem, not the job's
            raise Misconfigured(
                f"Lambda refused to queue job {job.id} on the job function ({error_code(error)}); an operator "
                "must check the job function and its grant",
                aws_error=error_code(error),
            ) from error
        if int(response.get("StatusCode", 0)) != 202:
            raise UpstreamUnavailable(
                f"Lambda did not queue job {job.id} (status {response.get('StatusCode')}); submit it again",
                service="Lambda",
                operation="Invoke",
            )

    def idle(self) -> bool:
        """Unknown here (Lambda runs the jobs): the callers that wait on it are the local server's tests and
        tools. Always False, so nobody concludes that nothing is running."""
        return False

    def start(self) -> None:
        """Nothing to start: Lambda runs an invocation per queued event."""
