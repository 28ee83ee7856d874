"""`FileStore` through the file function (Lambda Invoke): what the API, chat and dreaming functions use in the
`lean` profile, where they run outside the VPC and only the file function mounts S3 Files.

The protocol is `adapters/file_rpc.py`. `update(change)` is read → `change` applied here → conditional write
(compare-and-swap on the content version the read returned), retried from a fresh read (`domain.retry`:
full-jitter pauses, a deadline) up to `max_attempts` times when another writer got in between, then
`ConcurrentModification` (409). If `change`
raises, nothing is written. Domain errors of the file function come back as the same exception classes;
a failed invocation (the function crashed, Lambda throttled) is `UpstreamUnavailable` (503).

Payloads stay under Lambda's 6 MB synchronous limit: a request larger than `MAX_PAYLOAD_BYTES` is refused
here with `TooLarge` before any call (memory files are capped far below that by the domain).
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from botocore.config import Config

from ...domain.errors import ConcurrentModification, TooLarge, UpstreamFailed, UpstreamUnavailable
from ...domain.retry import CONCURRENT_WRITE, Retry
from ..file_rpc import MAX_PAYLOAD_BYTES, encode, error_from
from ._errors import upstream_errors

LAMBDA_CLIENT_CONFIG = Config(
    # Throttling and 5xx answers are retried (the request did not run); the read timeout is longer than the
    # file function's own timeout, so a slow write is never sent twice by a client-side timeout.
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=3,
    read_timeout=40,
)

DEFAULT_MAX_ATTEMPTS = 5


class RemoteFileStore:
    """Memory files of every tenant, served by the file function `function_name` (name or ARN)."""

    def __init__(
        self,
        client: Any,
        function_name: str,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not function_name:
            raise ValueError("the file function's name is empty")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._client = client
        self._function = function_name
        self._max_attempts = max_attempts
        self._sleep = sleep

    # ------------------------------------------------------------------ FileStore

    def read(self, tenant: str, namespace: str, path: str) -> str | None:
        text, _ = self.read_versioned(tenant, namespace, path)
        return text

    def read_versioned(self, tenant: str, namespace: str, path: str) -> tuple[str | None, str | None]:
        """The text (None when absent) and its version, the token a conditional write compares."""
        result = self._call({"op": "read", "tenant": tenant, "namespace": namespace, "path": path})
        return result.get("text"), result.get("version")

    def update(self, tenant: str, namespace: str, path: str, change: Callable[[str | None], str]) -> str:
        def once() -> str:
            current, version = self.read_versioned(tenant, namespace, path)
            new_text = change(current)
            if not isinstance(new_text, str):
                raise TypeError(f"change() must return str, not {type(new_text).__name__}")
            if new_text == current:
                return new_text
            request = {
                "op": "write",
                "tenant": tenant,
                "namespace": namespace,
                "path": path,
                "text": new_text,
                "expected": version,
            }
            self._call(request)  # ConcurrentModification: another writer changed it after our read
            return new_text

        policy = replace(CONCURRENT_WRITE, max_attempts=self._max_attempts)
        return Retry(policy, sleep=self._sleep).call(
            once,
            retry_on=(ConcurrentModification,),
            give_up=lambda spent: ConcurrentModification(
                f"{path!r} kept changing while this request wrote it ({spent.attempts} attempts); retry",
                path=path,
                attempts=spent.attempts,
            ),
        )

    def append(self, tenant: str, namespace: str, path: str, text: str) -> None:
        # Atomic in the file function (under the file's lock): no read-modify-write over the network.
        self._call({"op": "append", "tenant": tenant, "namespace": namespace, "path": path, "text": text})

    def delete(self, tenant: str, namespace: str, path: str) -> bool:
        result = self._call({"op": "delete", "tenant": tenant, "namespace": namespace, "path": path})
        return bool(result.get("deleted"))

    def purge_file(self, tenant: str, namespace: str, path: str, plan_id: str) -> bool:
        """Delete any file of the namespace for an erasure plan (the file function's `purge` operation)."""
        request = {"op": "purge", "tenant": tenant, "namespace": namespace, "path": path, "plan": plan_id}
        return bool(self._call(request).get("deleted"))

    def list(self, tenant: str, namespace: str, prefix: str = "") -> builtins.list[str]:
        result = self._call({"op": "list", "tenant": tenant, "namespace": namespace, "prefix": prefix})
        return [str(p) for p in result.get("paths", [])]

    def list_namespaces(self, tenant: str) -> builtins.list[str]:
        """Namespaces of a tenant that have memory files (the dreaming sweep's target list)."""
        result = self._call({"op": "namespaces", "tenant": tenant})
        return [str(n) for n in result.get("namespaces", [])]

    # ------------------------------------------------------------------ transport

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        payload = encode(request)
        if len(payload) > MAX_PAYLOAD_BYTES:
            raise TooLarge(
                f"the request ({len(payload):,} bytes) exceeds what a Lambda invocation can carry",
                limit=MAX_PAYLOAD_BYTES,
            )
        with upstream_errors("lambda", f"file {request['op']}"):
            answer = self._client.invoke(
                FunctionName=self._function, InvocationType="RequestResponse", Payload=payload
            )
        body = answer["Payload"].read()
        if answer.get("FunctionError"):
            # The function failed (crash, timeout, out of memory): nothing it reported can be trusted.
            raise UpstreamUnavailable(
                f"the file function failed during {request['op']}: {body[:300].decode('utf-8', 'replace')}",
                service="lambda",
                operation=f"file {request['op']}",
            )
        try:
            response = json.loads(body)
        except ValueError:
            raise UpstreamFailed(f"the file function answered non-JSON to {request['op']}") from None
        if not isinstance(response, dict) or "ok" not in response:
            raise UpstreamFailed(f"the file function answered a malformed response to {request['op']}")
        if not response["ok"]:
            raise error_from(response.get("error"))
        result = response.get("result")
        return result if isinstance(result, dict) else {}
