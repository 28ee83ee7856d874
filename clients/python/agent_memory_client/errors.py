"""Typed errors: one exception class per HTTP status the API answers, and a subclass per stable error code.

Every refusal of the API (either runtime, and API Gateway's own answers) is an `ErrorBody`:
`{"error": <code>, "message": <for a person>, "details": {...}}`. `error_for` picks the most specific class:
the code's class when the code is known (e.g. `cap_exceeded` → `CapExceeded`, a `Conflict`), otherwise the
status's class, otherwise `ApiError`. Catch a status class to handle a family (`except Conflict`), a code
class for one case (`except CapExceeded`).
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An answer of the API that is not a success. `code` is the API's stable `error` code."""

    status: int = 0
    default_code: str = "api_error"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status if status is not None else type(self).status
        self.code = code or type(self).default_code
        self.details: dict[str, Any] = details or {}
        self.headers: dict[str, str] = headers or {}

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


class TransportError(ApiError):
    """The API could not be reached (connection refused, DNS, timeout) after the retries."""

    default_code = "transport_error"


# ----------------------------------------------------------------------------------------------- per status


class BadRequest(ApiError):
    status = 400
    default_code = "invalid_request"


class Unauthenticated(ApiError):
    """No API key, or one the API does not know."""

    status = 401
    default_code = "unauthenticated"


class Forbidden(ApiError):
    """The key's scopes or namespaces do not allow this call."""

    status = 403
    default_code = "forbidden"


class NotFound(ApiError):
    status = 404
    default_code = "not_found"


class MethodNotAllowed(ApiError):
    status = 405
    default_code = "method_not_allowed"


class RequestTimeout(ApiError):
    status = 408
    default_code = "request_timeout"


class Conflict(ApiError):
    status = 409
    default_code = "conflict"


class PayloadTooLarge(ApiError):
    status = 413
    default_code = "too_large"


class UnsupportedMediaType(ApiError):
    status = 415
    default_code = "unsupported_media_type"


class Unprocessable(ApiError):
    """The request is well-formed but refused: validation failed or the content is unsafe."""

    status = 422
    default_code = "validation_failed"


class RateLimited(ApiError):
    """429 (API Gateway throttling), raised once the client's retries are used up."""

    status = 429
    default_code = "throttled"


class JobFailed(ApiError):
    """A route answered 202 (the local server ran it as a job) and the job failed: `code`, `message` and
    `details` are the job's `error`; `job` is the whole job (`GET /v1/jobs/{id}`). What the job wrote before it
    failed stays written."""

    default_code = "job_failed"

    def __init__(self, message: str, *, job: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.job = job


class ServerError(ApiError):
    status = 500
    default_code = "internal_error"


class UpstreamFailed(ApiError):
    """502: the chat model refused or failed; retrying the same request will not help."""

    status = 502
    default_code = "upstream_failed"


class NotConfigured(ApiError):
    """501 `not_configured`: this deployment was built without the feature (no chat model, no sessions,
    dreaming or skills); retrying will not help, the message says how to enable it."""

    status = 501
    default_code = "not_configured"


class Unavailable(ApiError):
    """503, raised once the client's retries are used up; nothing was changed."""

    status = 503
    default_code = "upstream_unavailable"


class GatewayTimeout(ApiError):
    status = 504
    default_code = "gateway_timeout"


# ------------------------------------------------------------------------------------- per stable error code


class ValidationFailed(Unprocessable):
    default_code = "validation_failed"


class UnsafeContent(Unprocessable):
    """The safety scan refused the content (a credential, an injection); nothing was stored."""

    default_code = "unsafe_content"


class ConcurrentModification(Conflict):
    """`expected_version` is not the stored version, or a concurrent turn ran: read again and retry."""

    default_code = "concurrent_modification"


class CapExceeded(Conflict):
    """A memory file would exceed its character cap (`details` has `used` and `limit`)."""

    default_code = "cap_exceeded"


class DuplicateEntry(Conflict):
    """The memory file already holds this exact entry; nothing was added (the file is as wanted)."""

    default_code = "duplicate_entry"


class AmbiguousMatch(Conflict):
    """`match` is in more than one entry of the memory file: use a longer one."""

    default_code = "ambiguous_match"


class SessionClosed(Conflict):
    default_code = "session_closed"


class TooManySessions(Conflict):
    default_code = "too_many_sessions"


class Overloaded(Unavailable):
    """The local server's request queue is full (it answers `Retry-After`)."""

    default_code = "overloaded"


class UpstreamUnavailable(Unavailable):
    default_code = "upstream_unavailable"


BY_STATUS: dict[int, type[ApiError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthenticated,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        RequestTimeout,
        Conflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        Unprocessable,
        RateLimited,
        ServerError,
        UpstreamFailed,
        NotConfigured,
        Unavailable,
        GatewayTimeout,
    )
}
BY_CODE: dict[str, type[ApiError]] = {
    cls.default_code: cls
    for cls in (
        ValidationFailed,
        UnsafeContent,
        ConcurrentModification,
        CapExceeded,
        DuplicateEntry,
        AmbiguousMatch,
        SessionClosed,
        TooManySessions,
        Overloaded,
        UpstreamUnavailable,
    )
}


def error_for(
    status: int, body: Any, headers: dict[str, str] | None = None, fallback_text: str = ""
) -> ApiError:
    """The typed error for an answer: `body` is the decoded JSON (an ErrorBody) or anything else."""
    code: str | None = None
    message = fallback_text.strip() or f"HTTP {status}"
    details: dict[str, Any] = {}
    if isinstance(body, dict):
        code = body.get("error") if isinstance(body.get("error"), str) else None
        if isinstance(body.get("message"), str):
            message = body["message"]
        if isinstance(body.get("details"), dict):
            details = body["details"]
    cls = BY_CODE.get(code or "")
    if cls is None or cls.status != status:
        cls = BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(message, status=status, code=code, details=details, headers=headers)
