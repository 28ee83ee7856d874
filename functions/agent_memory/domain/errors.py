"""Typed domain errors. The API maps each class to one HTTP status, once (see api/errors.py)."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Base class: every domain error carries a message a person can act on and optional details."""

    code = "memory_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class ValidationFailed(DomainError):
    """The input is well-formed JSON but breaks a domain rule (422)."""

    code = "validation_failed"


class TooLarge(DomainError):
    """Content, metadata or a batch exceeds a configured size limit (413)."""

    code = "too_large"


class NotFound(DomainError):
    """No such record/file/entry in the caller's tenant (404). Never reveals other tenants' data."""

    code = "not_found"


class Conflict(DomainError):
    """The operation conflicts with the current state (409), e.g. a concurrent update or wrong status."""

    code = "conflict"


class ConcurrentModification(Conflict):
    """An optimistic-concurrency check failed: somebody else changed the record first."""

    code = "concurrent_modification"


class CapExceeded(Conflict):
    """A memory-file write would exceed the file's character cap (409, with used/limit)."""

    code = "cap_exceeded"


class DuplicateEntry(Conflict):
    """An exact-duplicate memory-file entry was refused (409)."""

    code = "duplicate_entry"


class AmbiguousMatch(Conflict):
    """A substring used to select a memory-file entry matched more than one entry (409)."""

    code = "ambiguous_match"


class UnsafeContent(DomainError):
    """The safety scan rejected the content (422), naming the rule that fired."""

    code = "unsafe_content"


class RateLimited(DomainError):
    """The caller sent more than its share (429): retry after `retry_after_seconds` (also the `Retry-After`
    header)."""

    code = "rate_limited"


class Forbidden(DomainError):
    """The caller is authenticated but not allowed this namespace or operation (403)."""

    code = "forbidden"


class Unauthenticated(DomainError):
    """No or invalid credentials (401)."""

    code = "unauthenticated"


class EmbedderMismatch(Conflict):
    """A vector from a different embedder identity would be mixed into an index (409)."""

    code = "embedder_mismatch"


class EmbedderDrift(EmbedderMismatch):
    """A query or write would compare vectors of two embedder fingerprints (409): the tenant's read index was
    switched or rolled back while the request ran, or a caller used the wrong embedder. Retry the request."""

    code = "embedder_drift"


class PathEscape(ValidationFailed):
    """A memory-file path tried to leave the namespace directory (422)."""

    code = "path_escape"


class Misconfigured(DomainError):
    """The deployment's configuration is missing or invalid (500): an operator must fix the environment;
    retrying the same call will not help."""

    code = "misconfigured"


class NotConfigured(DomainError):
    """The deployment does not offer this feature (501): it was built without it (no chat model, no sessions,
    dreaming or skills wired). Retrying will not help; the message says how to enable it."""

    code = "not_configured"


class UpstreamUnavailable(DomainError):
    """A dependency (embedding model, vector index, database) stayed unavailable after bounded retries (503).
    Safe to retry later; nothing was changed by the failed call."""

    code = "upstream_unavailable"


class UpstreamFailed(DomainError):
    """A dependency answered but failed or refused the request (502), e.g. the chat model rejected the
    conversation or raised a model error. Retrying the same request will not help; the message says why."""

    code = "upstream_failed"
