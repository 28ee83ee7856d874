"""The file function in-process, behind a real boto3 Lambda client.

moto's Lambda runs functions in Docker, which the suites do not have; instead, `in_process_lambda_client`
returns a genuine botocore `lambda` client whose `Invoke` requests are serialised by botocore from the real
service model (so a bad request shape fails here as it would against AWS), then answered by calling
`agent_memory.handlers.files.handler` with the decoded payload, the way Lambda would: a returned value is the
200 response's payload; an exception becomes `X-Amz-Function-Error: Unhandled` with Lambda's error document.
The call passes through botocore's `_make_api_call`, so the IAM contract recorder sees every Invoke.
"""

from __future__ import annotations

import io
import json
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

from tests.aws.support import REGION

FILE_FUNCTION = "FileFunction"
"""The physical name the suites give the file function (tests/iam/contract.py binds it)."""
FILE_FUNCTION_ARN = f"arn:aws:lambda:{REGION}:123456789012:function:{FILE_FUNCTION}"


class _Raw(io.BytesIO):
    def stream(self, **_: Any) -> Iterator[bytes]:
        chunk = self.read()
        while chunk:
            yield chunk
            chunk = self.read()


class FileFunctionContext:
    function_name = FILE_FUNCTION
    memory_limit_in_mb = 512
    invoked_function_arn = FILE_FUNCTION_ARN
    aws_request_id = "test-file-request"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class InvokeLog:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        """Every Invoke as botocore sent it: FunctionName (from the URL), the invocation type header and
        the payload size."""


JOB_FUNCTION = "job-function"
"""The physical name the suites give the job function (`bound_name("AGENT_MEMORY_JOB_FUNCTION")`)."""


class JobFunctionContext:
    """The Lambda context the job function's handler reads (its time left bounds a job's lease)."""

    function_name = JOB_FUNCTION
    memory_limit_in_mb = 1024
    invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:{JOB_FUNCTION}"
    aws_request_id = "test-job-request"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def in_process_lambda_client(
    log: InvokeLog | None = None, jobs: Callable[[dict[str, Any]], None] | None = None
) -> Any:
    """`jobs`: what receives the events of asynchronous invokes of the job function (`JOB_FUNCTION`), which
    Lambda would queue and answer 202 to; without it such an invoke is answered 404, as for a function the
    account does not have."""
    client = boto3.client(
        "lambda",
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        aws_session_token="testing",
    )

    def answer(request: Any, **_: Any) -> AWSResponse:
        from agent_memory.handlers.files import handler

        body = request.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        url = str(request.url)
        if log is not None:
            log.requests.append(
                {
                    "url": url,
                    "function": url.split("/functions/", 1)[1].split("/", 1)[0],
                    "invocation_type": request.headers.get("X-Amz-Invocation-Type"),
                    "payload_bytes": len(body),
                }
            )
        headers = {"Content-Type": "application/json", "X-Amz-Executed-Version": "$LATEST"}
        if url.split("/functions/", 1)[1].split("/", 1)[0] == JOB_FUNCTION:
            return _queued_job(url, request, body, jobs)
        try:
            result = handler(json.loads(body), FileFunctionContext())
            payload = json.dumps(result).encode("utf-8")
        except Exception as error:  # Lambda's report of an unhandled exception
            headers["X-Amz-Function-Error"] = "Unhandled"
            payload = json.dumps(
                {
                    "errorMessage": str(error),
                    "errorType": type(error).__name__,
                    "stackTrace": traceback.format_tb(error.__traceback__),
                }
            ).encode("utf-8")
        return AWSResponse(url, 200, headers, _Raw(payload))

    # First, so that moto (when active) never sees the call: its Lambda would need Docker.
    client.meta.events.register_first("before-send.lambda.Invoke", answer)
    return client


def _queued_job(
    url: str, request: Any, body: bytes, jobs: Callable[[dict[str, Any]], None] | None
) -> AWSResponse:
    """An asynchronous invoke of the job function: Lambda answers 202 with no payload once it has queued the
    event (only `Event` invocations are queued; the job function is never invoked synchronously)."""
    headers = {"Content-Type": "application/json"}
    if jobs is None:
        missing = {"Type": "User", "Message": f"Function not found: {JOB_FUNCTION}"}
        headers["x-amzn-ErrorType"] = "ResourceNotFoundException"
        return AWSResponse(url, 404, headers, _Raw(json.dumps(missing).encode("utf-8")))
    if request.headers.get("X-Amz-Invocation-Type") not in (b"Event", "Event"):
        raise AssertionError("the job function is invoked asynchronously only (InvocationType=Event)")
    jobs(json.loads(body))
    return AWSResponse(url, 202, headers, _Raw(b""))


@contextmanager
def file_function_serving(root: Path) -> Iterator[None]:
    """The file function's mount is `root` for the duration."""
    from agent_memory.adapters.posix.file_server import FileServer
    from agent_memory.handlers import files

    files.server.set(FileServer(root))
    try:
        yield
    finally:
        files.server.set(None)
