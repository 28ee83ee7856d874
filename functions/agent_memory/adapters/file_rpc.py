"""The wire protocol between the file function (`handlers/files.py`, the only function with the S3 Files mount
in the `lean` profile) and `adapters/aws/remote_file_store.py` (the `FileStore` of the functions outside the
VPC), carried by synchronous Lambda Invoke. Pure data: no I/O, no boto3.

Request: `{"op": <OPERATIONS>, "tenant", "namespace", ...op arguments}`; the tenant is the caller's
authenticated tenant (the domain passes it), and the file function confines every path to it again, exactly as
the POSIX store does on a mount.

Response: `{"ok": true, "result": {...}}` or `{"ok": false, "error": {"code", "message", "details"}}`, where
`code` is a `DomainError.code` (`path_escape`, `too_large`, `concurrent_modification`...), turned back into
the same exception class by the caller, so the API answers the same 4xx whatever the profile.

`update(change)` cannot ship `change` (a closure): the caller reads the text and its `version` (the SHA-256 of
its UTF-8 bytes, None for an absent file), applies `change` locally and sends `write` with `expected` = that
version; the file function writes under the file's lock only if the file still has that version
(compare-and-swap), else answers `concurrent_modification` and the caller retries from a fresh read.

Size: Lambda's synchronous invocation payload is at most 6 MB each way (request and response). Memory files
are small (the domain's character caps), but a file written to the bucket directly could be larger: the file
function refuses to read more than `MAX_FILE_BYTES` (`too_large`), and both sides refuse a payload whose
encoding exceeds `MAX_PAYLOAD_BYTES` with `too_large` instead of letting Lambda fail the call.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..domain import errors as domain_errors
from ..domain.errors import DomainError, UpstreamFailed

OPERATIONS = frozenset({"read", "write", "append", "delete", "list", "namespaces", "purge"})
"""`purge` deletes any file of a namespace for an erasure plan (domain/erasure): the request names the plan
(`plan`, `purge_<32 hex>`), which the file function logs; `delete` stays limited to `.dreams/`."""

LAMBDA_SYNC_PAYLOAD_LIMIT = 6 * 1024 * 1024
"""Lambda's quota for a synchronous invocation: 6 MB for the request and 6 MB for the response."""
MAX_PAYLOAD_BYTES = LAMBDA_SYNC_PAYLOAD_LIMIT - 64 * 1024
"""What either side sends at most: the quota less a margin for the envelope."""
MAX_FILE_BYTES = 2 * 1024 * 1024
"""The largest memory file the file function reads or writes: JSON escaping can double Markdown's size
(quotes, backslashes, newlines), and the result must stay under MAX_PAYLOAD_BYTES."""


def version_of(text: str | None) -> str | None:
    """The compare-and-swap token of a file's content: SHA-256 hex of its UTF-8 bytes; None when absent."""
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def encode(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON (non-ASCII stays one code point, not a \\uXXXX escape)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def ok(result: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "result": result}


def error_response(error: DomainError) -> dict[str, Any]:
    return {
        "ok": False,
        "error": {"code": error.code, "message": error.message, "details": _json_safe(error.details)},
    }


def _error_classes() -> dict[str, type[DomainError]]:
    found: dict[str, type[DomainError]] = {}
    for value in vars(domain_errors).values():
        if isinstance(value, type) and issubclass(value, DomainError):
            found[value.code] = value
    return found


_ERRORS_BY_CODE = _error_classes()


def error_from(payload: Any) -> DomainError:
    """The domain exception an error response stands for (same class, message and details). An error code
    this version does not know becomes UpstreamFailed (502): the two functions run different code."""
    if not isinstance(payload, dict):
        return UpstreamFailed(f"the file function answered a malformed error: {payload!r:.200}")
    code = str(payload.get("code", ""))
    message = str(payload.get("message", "")) or code
    raw_details = payload.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    cls = _ERRORS_BY_CODE.get(code)
    if cls is None:
        return UpstreamFailed(f"the file function answered an unknown error {code!r}: {message}", code=code)
    return cls(message, **details)


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
