"""The request loop shared by the sync and async clients: auth, idempotency keys, retries with backoff."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from .errors import ApiError, JobFailed, TransportError, error_for

JSON = dict[str, Any]
"""A decoded JSON object, as documented for the operation in docs/openapi.json."""

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
IDEMPOTENCY_HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on 429 and 503 (and on a connection that could not be made), with exponential backoff and
    full jitter: attempt n waits a random time in [0, min(max_delay, base_delay * 2**n)], or the server's
    `Retry-After` (seconds or an HTTP date) when it sends one, capped at `max_delay`."""

    max_retries: int = 4
    base_delay: float = 0.25
    max_delay: float = 20.0
    retry_statuses: frozenset[int] = field(default_factory=lambda: frozenset({429, 503}))

    def delay(
        self, attempt: int, retry_after: str | None, rand: Callable[[], float] = random.random
    ) -> float:
        hinted = parse_retry_after(retry_after)
        if hinted is not None:
            return min(self.max_delay, hinted)
        return min(self.max_delay, self.base_delay * (2**attempt)) * rand()


NO_RETRIES = RetryPolicy(max_retries=0)

JOB_PATH = "/v1/jobs/"
JOB_POLL_SECONDS = 1.0
JOB_MAX_WAIT_SECONDS = 3600.0
"""How long `send_*` follows a job (202) before giving up with `TransportError` (the job may still finish:
`get_job(id)` shows it)."""


def job_of(response: httpx.Response, body: JSON) -> str | None:
    """The job's path when the route answered 202 with a job (the local server's imports and large batches)."""
    location = body.get("location")
    if response.status_code == 202 and isinstance(location, str) and location.startswith(JOB_PATH):
        return location
    return None


def job_outcome(job: JSON, headers: Mapping[str, str]) -> JSON | None:
    """The finished job's `result` (the body the route answers synchronously), `JobFailed` for a failed one,
    None while it is queued or running."""
    if job.get("status") == "succeeded":
        result = job.get("result")
        return result if isinstance(result, dict) else {}
    if job.get("status") == "failed":
        found = job.get("error")
        error: dict[str, Any] = found if isinstance(found, dict) else {}
        raise JobFailed(
            str(error.get("message") or "the job failed"),
            job=job,
            status=200,
            code=str(error.get("error") or "job_failed"),
            details=error.get("details") if isinstance(error.get("details"), dict) else {},
            headers=dict(headers),
        )
    return None


def poll_delay(response: httpx.Response) -> float:
    hinted = parse_retry_after(response.headers.get("Retry-After"))
    return JOB_POLL_SECONDS if hinted is None else min(30.0, max(0.2, hinted))


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass(frozen=True)
class Call:
    """One operation: what to send. `write` calls carry an `Idempotency-Key` (the same one on each retry)."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    idempotency_key: str | None = None

    @property
    def write(self) -> bool:
        return self.method in WRITE_METHODS

    def headers(self) -> dict[str, str]:
        if not self.write:
            return {}
        return {IDEMPOTENCY_HEADER: self.idempotency_key or str(uuid.uuid4())}

    def query(self) -> dict[str, Any] | None:
        if not self.params:
            return None
        out: dict[str, Any] = {}
        for key, value in self.params.items():
            if value is None:
                continue
            out[key] = ("true" if value else "false") if isinstance(value, bool) else value
        return out


def auth_headers(api_key: str | None, user_agent: str) -> dict[str, str]:
    headers = {"User-Agent": user_agent, "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def decode(response: httpx.Response) -> JSON:
    """The JSON body of a success, or the typed error of a refusal."""
    try:
        body: Any = response.json() if response.content else {}
    except ValueError:
        body = None
    if response.is_success:
        if not isinstance(body, dict):
            raise ApiError(
                f"expected a JSON object from {response.request.method} {response.request.url.path}",
                status=response.status_code,
                code="invalid_response",
            )
        return body
    raise error_for(response.status_code, body, dict(response.headers), fallback_text=response.text[:500])


def send_sync(
    client: httpx.Client, call: Call, policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep
) -> JSON:
    headers = call.headers()
    attempt = 0
    while True:
        try:
            response = client.request(
                call.method, call.path, params=call.query(), json=call.json, headers=headers
            )
        except httpx.TransportError as exc:
            if attempt >= policy.max_retries or not isinstance(exc, httpx.ConnectError):
                raise TransportError(f"{call.method} {call.path}: {exc}") from exc
            sleep(policy.delay(attempt, None))
            attempt += 1
            continue
        if response.status_code in policy.retry_statuses and attempt < policy.max_retries:
            sleep(policy.delay(attempt, response.headers.get("Retry-After")))
            attempt += 1
            continue
        body = decode(response)
        location = job_of(response, body)
        return body if location is None else follow_job_sync(client, location, response, policy, sleep)


def follow_job_sync(
    client: httpx.Client,
    location: str,
    response: httpx.Response,
    policy: RetryPolicy,
    sleep: Callable[[float], None],
) -> JSON:
    """Poll the job until it finishes; its `result` is what the route would have answered synchronously."""
    waited = 0.0
    while waited <= JOB_MAX_WAIT_SECONDS:
        delay = poll_delay(response)
        sleep(delay)
        waited += delay
        job = send_sync(client, Call("GET", location), policy, sleep)
        outcome = job_outcome(job, {})
        if outcome is not None:
            return outcome
    raise TransportError(f"the job {location} did not finish within {JOB_MAX_WAIT_SECONDS:g} s")


async def send_async(
    client: httpx.AsyncClient,
    call: Call,
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> JSON:
    headers = call.headers()
    attempt = 0
    while True:
        try:
            response = await client.request(
                call.method, call.path, params=call.query(), json=call.json, headers=headers
            )
        except httpx.TransportError as exc:
            if attempt >= policy.max_retries or not isinstance(exc, httpx.ConnectError):
                raise TransportError(f"{call.method} {call.path}: {exc}") from exc
            await sleep(policy.delay(attempt, None))
            attempt += 1
            continue
        if response.status_code in policy.retry_statuses and attempt < policy.max_retries:
            await sleep(policy.delay(attempt, response.headers.get("Retry-After")))
            attempt += 1
            continue
        body = decode(response)
        location = job_of(response, body)
        if location is None:
            return body
        waited = 0.0
        while waited <= JOB_MAX_WAIT_SECONDS:
            delay = poll_delay(response)
            await sleep(delay)
            waited += delay
            outcome = job_outcome(await send_async(client, Call("GET", location), policy, sleep), {})
            if outcome is not None:
                return outcome
        raise TransportError(f"the job {location} did not finish within {JOB_MAX_WAIT_SECONDS:g} s")
