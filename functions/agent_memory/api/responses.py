"""The refusals of the OpenAPI document: what each operation answers when it does not succeed.

Powertools documents each operation's successes from its route (return type, `status_code=`, `responses=`) and
adds a 422 in its own `HTTPValidationError` shape, which this API never sends: every refusal is the `ErrorBody`
of api/app.py. `describe_refusals` replaces that 422 and adds, per operation, each refusal it can really answer,
with what to do about it. Both `openapi.openapi_document()` (docs/openapi.json) and `/swagger` (`app._swagger`)
call it; `_swagger` imports this module on request, so a Lambda cold start does not load it.

Which refusals an operation gets follows from the document itself: a request body, or a method that carries one
(400, 408, 413, 415),
parameters (422), path parameters (404), the bearer requirement (401, 403), a method that writes (409), and a
few operation-specific ones (404 of GET /v1/daily-log, 502 of chat turns). Not documented per operation: 405
(a method the path does not have is another operation, which does not exist), the 404 of a path no route has,
and API Gateway's 502/504 of a failed or overlong invocation (the one route that can run longer than API
Gateway's 29 s, POST /v1/admin/dream, documents its 504). API Gateway's own answers (the gateway responses of
infra/constructs/memory_api.py) use the same ErrorBody, with API Gateway's response type as `error` and
`details.source` `api_gateway`; 401, 413, 429 and 500 come from either (the local server's 429 is its per-key
rate limit, and `too_many_jobs`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .models import ErrorBody

SCHEMAS = "#/components/schemas/"
JSON = "application/json"
POWERTOOLS_SCHEMAS = ("HTTPValidationError", "ResponseValidationError", "ValidationError")
"""Powertools' validation error shapes: dropped when nothing refers to them any more."""

READ_ONLY_POSTS = frozenset({"POST /v1/recall"})
"""POST operations that store nothing (so never 409)."""
JOB_ROUTES = frozenset({"POST /v1/imports", "POST /v1/memories/batch"})
"""Operations the local server may run as a job (202); their 429 can also be `too_many_jobs`."""

NOT_FOUND_BY_PARAMETER = {
    "memory_id": "no memory with this id that the key can see (another tenant's, or in a namespace the key "
    "may not use, is not found either)",
    "session_id": "no session with this id that the key can see",
    "job_id": "no job with this id submitted by this API key (another key's job, of this tenant or another, "
    "is not found either; finished jobs are forgotten after 7 days)",
    "kind": "`kind` is neither `memory` (MEMORY.md) nor `user` (USER.md)",
    "group": "no open conflict group with this id (also when one of its memories is in a namespace the key "
    "may not use)",
    "name": "no skill with this name in the namespace",
    "version": "the skill has no such version",
    "snapshot": "no snapshot of this name in the namespace (or, for `to`, no such second snapshot)",
}
NOT_FOUND_BY_OPERATION = {
    "GET /v1/daily-log": "no log for that `date` in the namespace",
    "POST /v1/files/{kind}/entries/replace": "no entry contains `match`",
    "POST /v1/files/{kind}/entries/remove": "no entry contains `match`",
    "POST /v1/conflicts/{group}/resolve": "a `keep` id is not a memory the key can see",
    "POST /v1/skills/{name}/patch": "no section has that `heading`",
    "GET /v1/admin/curator/runs": "no curator run on that `day` in the namespace",
    **{
        f"{verb} /v1/admin/migration/{name}": "the tenant has no embedding migration: plan one first"
        for verb, name in (
            ("GET", "status"),
            ("POST", "start"),
            ("POST", "retry"),
            ("POST", "switch"),
            ("POST", "rollback"),
            ("POST", "archive"),
        )
    },
    "POST /v1/admin/curator/accept": "no curator run on that `day`, or no such proposal in it",
}
TOO_LARGE_BY_OPERATION = {
    "GET /v1/export": "Over a size limit (`too_large`): the export is larger than one API response carries "
    "(5 MB). Run `agent-memory export --namespace N --out bundle.tar.gz` where the data lives, or export "
    "smaller namespaces",
    **{
        f"GET {path}": "Over a size limit (`too_large`): the answer is larger than one API response carries "
        "(5 MB). Use `agent-memory snapshot diff` (or `export`) where the data lives"
        for path in ("/v1/snapshots/{snapshot}", "/v1/snapshots/{snapshot}/diff", "/v1/diff")
    },
}
CONFLICT_BY_OPERATION = {
    "POST /v1/snapshots": "`conflict`: the namespace already has a snapshot of that name (snapshots are "
    "immutable: choose another name)",
    "POST /v1/memories": "`conflict`: the `Idempotency-Key` was sent before with another body (use a new key "
    "for a new request) or its first request is still running (retry shortly)",
    "PATCH /v1/memories/{memory_id}": "`concurrent_modification`: `expected_version` is not the stored "
    "version (read the memory again); `conflict`: a superseded or quarantined memory cannot be updated",
    "POST /v1/memories/{memory_id}/correct": "`conflict`: the correction is identical to the current content, "
    "or the memory is neither active nor pending (restore an archived or quarantined one first; a superseded "
    "one has a successor to correct)",
    "POST /v1/memories/{memory_id}/archive": "`conflict`: the memory is neither active nor quarantined "
    "(already archived, or superseded by a correction); archiving a quarantined memory rejects it",
    "POST /v1/memories/{memory_id}/restore": "`conflict`: the memory is neither archived nor quarantined "
    "(e.g. already active), was superseded, or was rejected from quarantine",
    "POST /v1/conflicts/{group}/resolve": "`conflict`: the group was resolved meanwhile",
    "POST /v1/files/{kind}/entries": "`cap_exceeded`: the file would exceed its character cap (`details` "
    "has `used` and `limit`: remove or shorten entries first); `duplicate_entry`: the entry is already there",
    "POST /v1/files/{kind}/entries/replace": "`ambiguous_match`: `match` is in more than one entry (use a "
    "longer one); `cap_exceeded`: the new content would exceed the file's cap",
    "POST /v1/files/{kind}/entries/remove": "`ambiguous_match`: `match` is in more than one entry (use a "
    "longer one)",
    "POST /v1/sessions": "`too_many_sessions`: the calling API key (`details.per` `api_key`), the namespace "
    "(`namespace`) or the tenant (`tenant`) has its maximum of open sessions (end some with "
    "`POST /v1/sessions/{session_id}/end` or let them expire)",
    "POST /v1/admin/migration/plan": "`conflict`: the tenant has an unfinished migration (switch and archive "
    "it, or roll it back), or already uses that model",
    "POST /v1/admin/migration/start": "`conflict`: the migration is past the backfill",
    "POST /v1/admin/migration/retry": "`conflict`: dead letters are retried while the migration is verifying",
    "POST /v1/admin/migration/switch": "`conflict`: the migration is not verifying, or its verification did "
    "not pass (`message` gives coverage, overlap@10 and dead letters)",
    "POST /v1/admin/migration/rollback": "`conflict`: the migration is archived or already rolled back",
    "POST /v1/admin/migration/archive": "`conflict`: the migration is not switched, or the export could not be "
    "verified (nothing was deleted: run archive again)",
    "POST /v1/sessions/{session_id}/turns": "`session_closed`: the session ended or expired (start a new "
    "one); `concurrent_modification`: another turn of this session ran at the same time (send turns one "
    "after the other)",
}
MISSING_FEATURE_BY_OPERATION = {
    "POST /v1/sessions": "sessions are not enabled in this runtime",
    "GET /v1/sessions/{session_id}": "sessions are not enabled in this runtime",
    "POST /v1/sessions/{session_id}/end": "sessions are not enabled in this runtime",
    "POST /v1/sessions/{session_id}/turns": "no chat model is configured (the message says how to configure "
    "one)",
    "POST /v1/admin/dream": "dreaming is not configured on this deployment",
    "POST /v1/admin/dream/start": "this deployment runs dreaming only synchronously (use `POST /v1/admin/dream`"
    ", or enable schedules.dreaming.on_demand in cdk.json)",
}

MISSING_FEATURE_BY_PATH_PREFIX = {
    "/v1/skills": "skills are not configured on this deployment",
    "/v1/admin/curat": "the skills curator is not configured on this deployment",
}


def _missing_feature(label: str) -> str | None:
    """Why the operation `label` ("METHOD /path") can answer 501 `not_configured`, if it can."""
    if label in MISSING_FEATURE_BY_OPERATION:
        return MISSING_FEATURE_BY_OPERATION[label]
    path = label.split(" ", 1)[-1]
    return next(
        (why for prefix, why in MISSING_FEATURE_BY_PATH_PREFIX.items() if path.startswith(prefix)), None
    )


GATEWAY_TOO = "Behind API Gateway, "


def describe_refusals(document: dict[str, Any]) -> dict[str, Any]:
    """Add `ErrorBody` to the components and each operation's refusals to its
    responses, in place; Powertools' validation error schemas go when nothing refers to them."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas[ErrorBody.__name__] = ErrorBody.model_json_schema(mode="serialization")
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            responses.pop("422", None)  # Powertools' HTTPValidationError, never sent by this API
            responses.pop(422, None)
            for status, response in refusals(method.upper(), path, operation).items():
                responses[str(status)] = response
    text = repr(document["paths"])
    for name in POWERTOOLS_SCHEMAS:  # referred to by the dropped 422s and by each other only
        others = repr({key: value for key, value in schemas.items() if key not in POWERTOOLS_SCHEMAS})
        if f"{SCHEMAS}{name}'" not in text + others:
            schemas.pop(name, None)
    return document


@dataclass(frozen=True)
class _Operation:
    """What decides an operation's refusals, read from its entry in the document."""

    label: str
    """"METHOD /path", the key of the per-operation tables above."""
    path_parameters: tuple[str, ...]
    has_parameters: bool
    has_body: bool
    reads_body: bool
    """The server reads (and can refuse) the body of every POST, PUT and PATCH before any route sees it,
    including those whose route takes none (POST /v1/memories/{memory_id}/reviewed answers 400/413/415 too)."""
    protected: bool
    writes: bool

    @classmethod
    def of(cls, method: str, path: str, operation: dict[str, Any]) -> _Operation:
        label = f"{method} {path}"
        parameters = operation.get("parameters") or []
        has_body = "requestBody" in operation
        return cls(
            label=label,
            path_parameters=tuple(p["name"] for p in parameters if p.get("in") == "path"),
            has_parameters=bool(parameters),
            has_body=has_body,
            reads_body=has_body or method in ("POST", "PUT", "PATCH"),
            protected=operation.get("security") != [{}],
            writes=method != "GET" and label not in READ_ONLY_POSTS,
        )


def _unreadable_body(op: _Operation) -> dict[int, str]:
    if not op.reads_body:
        return {}
    return {
        400: "The body cannot be read: not UTF-8, not JSON, or nested too deeply (`malformed_json`; for a syntax "
        "error `details.problems` gives the position), or a charset other than UTF-8 "
        "(`unsupported_charset`). Send JSON encoded as UTF-8 with `Content-Type: application/json`.",
        408: "Local server only: the body did not arrive within the server's body timeout "
        "(`request_timeout`); the connection is closed. Send the whole body promptly.",
        413: "Over a size limit (`too_large`; `details` names the limit): the body's bytes (local server: "
        "`max_body_bytes`, 1 MiB by default), content or query characters, metadata bytes or batch "
        f"items. Shorten or split the request. {GATEWAY_TOO}a body over 10 MB is refused by API Gateway "
        "itself, with `error` `REQUEST_TOO_LARGE`.",
        415: "The body is not JSON (`unsupported_media_type`; `details.media_type` is what was sent). Send it "
        "with `Content-Type: application/json`.",
    }


def _unauthorized(op: _Operation) -> dict[int, str]:
    if not op.protected:
        return {}
    return {
        401: "No API key, or one that is unknown or disabled (`unauthenticated`, with `WWW-Authenticate: "
        "Bearer`). Send `Authorization: Bearer <api key>`; ask the operator for a new key if yours was "
        f"disabled. {GATEWAY_TOO}the authorizer refuses first, with `error` `UNAUTHORIZED`.",
        403: "The key may not do this (`forbidden`): it lacks the scope the operation needs (`read`, `write` "
        "or `admin`), or a namespace of the request is outside the key's namespaces (a key limited to "
        "some namespaces must name them). Use a key that has both, or ask the operator to widen this one.",
    }


def _not_found(op: _Operation) -> dict[int, str]:
    reasons = [
        NOT_FOUND_BY_PARAMETER.get(name, f"nothing is found for `{name}`") for name in op.path_parameters
    ]
    if op.label in NOT_FOUND_BY_OPERATION:
        reasons.append(NOT_FOUND_BY_OPERATION[op.label])
    if not reasons:
        return {}
    routes = (
        " A path parameter containing `/` (ids never do) reaches no route: also 404."
        if op.path_parameters
        else ""
    )
    return {404: f"Not found (`not_found`): {'; or '.join(reasons)}.{routes}"}


def _conflict(op: _Operation) -> dict[int, str]:
    if not op.writes:
        return {}
    specific = CONFLICT_BY_OPERATION.get(op.label)
    return {
        409: "The request conflicts with the current state; nothing was changed. "
        + (f"{specific}. " if specific else "")
        + "`concurrent_modification`: another request changed the same data first, retry; "
        "`embedder_mismatch`: the tenant's vector index was built by another embedding model (an operator "
        "must re-embed or configure the same model)."
    }


def _answer_too_large(op: _Operation) -> dict[int, str]:
    """An answer over what one response carries: replaces the body's 413 where both apply."""
    return {413: TOO_LARGE_BY_OPERATION[op.label] + "."} if op.label in TOO_LARGE_BY_OPERATION else {}


def _invalid(op: _Operation) -> dict[int, str]:
    if not (op.has_parameters or op.has_body):
        return {}
    unsafe = (
        " `unsafe_content`: the safety scan refused a text field (`details` names the rule and, for a "
        "field other than the content, the `field`): do not store secrets or instructions aimed at the "
        "agent in any field (content, context, metadata, source, reasons, notes)."
        if op.has_body and op.writes
        else ""
    )
    return {
        422: "The request is well-formed but invalid; the same request will be refused again. "
        "`invalid_request`: `details.problems` lists each field (`field`, `problem`). `validation_failed`: "
        f"a rule of the service, explained in `message`.{unsafe}"
    }


def _throttled(op: _Operation) -> dict[int, str]:
    jobs = (
        " `too_many_jobs` (local server): the tenant already has as many jobs waiting as the server queues "
        "(`jobs.max_queued_per_tenant`); retry after `Retry-After` seconds, once some have finished."
        if op.label in JOB_ROUTES
        else ""
    )
    return {
        429: "Too many requests; nothing was changed. Local server: `rate_limited`, the API key sent "
        "more than its token bucket allows (`rate_limit` setting: `requests_per_second`, `burst`); retry "
        f"after `Retry-After` seconds (also `details.retry_after_seconds`).{jobs} {GATEWAY_TOO}the stage's or "
        "the key's usage plan rate was exceeded (`THROTTLED`), or the key's daily quota is used up "
        "(`QUOTA_EXCEEDED`): retry with exponential backoff and jitter; a quota resets the next day (UTC), "
        "or ask the operator for a larger one."
    }


def _failed(op: _Operation) -> dict[int, str]:
    found = {
        500: "The service failed on this request (`internal_error`, logged with its traceback): retry later, and "
        "report it if it persists. `misconfigured`: the deployment's configuration is missing or invalid; "
        f"retrying will not help until an operator fixes it. {GATEWAY_TOO}a failing authorizer (e.g. the key "
        "table cannot be read) answers 500 with `error` `AUTHORIZER_FAILURE`: retry later.",
        503: "Unavailable for now; nothing was changed. "
        + (
            "`upstream_unavailable`: a dependency (database, embedding model, vector index, chat model) stayed "
            "unavailable after retries: retry later with backoff. "
            if op.protected
            else ""
        )
        + "`overloaded` (local server): too many requests are running; retry after `Retry-After` seconds.",
    }
    missing = _missing_feature(op.label)
    if missing:
        found[501] = f"`not_configured`: {missing}. Retrying will not help; nothing was changed."
    return found


UPSTREAM_BY_OPERATION = {
    "POST /v1/sessions/{session_id}/turns": {
        502: "The chat model refused or failed the conversation (`upstream_failed`; `message` says why, e.g. "
        "no access to the model). Retrying the same request will not help: change the request or the "
        "model's configuration."
    },
    "POST /v1/admin/dream": {
        504: "API Gateway only: the sweep ran longer than API Gateway's 29 s "
        "(`INTEGRATION_TIMEOUT`) and may still complete. Use `POST /v1/admin/dream/start` (asynchronous) "
        "for large namespaces; running the same day again reports `already_done` once it completed."
    },
}
"""The operations whose dependency can fail them as a whole: a chat turn's model, a synchronous sweep."""

REFUSALS: tuple[Callable[[_Operation], dict[int, str]], ...] = (
    _unreadable_body,
    _unauthorized,
    _not_found,
    _conflict,
    _answer_too_large,  # after _unreadable_body, whose 413 it replaces
    _invalid,
    _throttled,
    _failed,
    lambda op: UPSTREAM_BY_OPERATION.get(op.label, {}),
)
"""Each rule: the refusals (status -> what happened and what to do) it gives an operation; a later rule's
answer to a status replaces an earlier one's."""


def refusals(method: str, path: str, operation: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The refusals of one operation, by status."""
    op = _Operation.of(method, path, operation)
    found: dict[int, str] = {}
    for rule in REFUSALS:
        found |= rule(op)
    return {status: _error(found[status]) for status in sorted(found)}


def _error(description: str) -> dict[str, Any]:
    """An ErrorBody answer (API Gateway's own answers have the same shape)."""
    schema = {"$ref": f"{SCHEMAS}{ErrorBody.__name__}"}
    return {"description": description, "content": {JSON: {"schema": schema}}}
