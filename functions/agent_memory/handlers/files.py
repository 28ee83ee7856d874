"""Lambda entry point of the file function: in the `lean` profile the only function in the VPC, the only one
with the S3 Files mount, and it makes no AWS API call (so the VPC needs no interface endpoint). The API, chat
and dreaming functions run outside the VPC and reach the memory files through it with a synchronous Lambda
Invoke (`adapters/aws/remote_file_store.py`).

Event and answer: `adapters/file_rpc.py` (`{"op": "read" | "write" | "append" | "list" | "namespaces",
"tenant", "namespace", ...}` → `{"ok": true, "result"}` or `{"ok": false, "error": {"code", "message"}}`).
Every tenant id, namespace and path is checked again here, exactly as on a mount (`adapters/posix/`): only
the callers' roles may invoke this function, but it never trusts a path it is given. File content is never
logged.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization, request_scoped

with initialization():  # the service's own modules: see initialization()
    from ..wiring import process
    from ._runtime import powertools

logger, tracer, _ = powertools("files")
server = process.FILE_SERVER
"""The file server (`wiring.aws.build_file_server`), built by the first request."""


@request_scoped
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    op = event.get("op") if isinstance(event, dict) else None
    if op == "purge":  # an erasure: which plan removed which tenant's file (never its content)
        logger.info(
            "file purged for an erasure plan",
            extra={"plan": event.get("plan"), "tenant": event.get("tenant")},
        )
    response = server().handle(event)
    if not response["ok"]:
        logger.info("file request refused", extra={"op": op, "error": response["error"]["code"]})
    return response
