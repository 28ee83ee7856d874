"""Property-based API testing from docs/openapi.json (Schemathesis) against both runtimes:

- `local`: the local server's ASGI app (`local_server.build_asgi`: BodyLimit → HttpResolverLocal), called in
  process by Schemathesis' ASGI transport (no socket, no uvicorn);
- `aws`: the Lambda handler (`handlers.api.handler`) on moto: each generated request becomes the API Gateway
  REST proxy event of tests/behaviour/conftest.py (token authorizer context of the `alpha` key) and the
  handler's result becomes a Schemathesis response.

Every case is judged by `not_a_server_error`, `status_code_conformance` and `response_schema_conformance`
against docs/openapi.json as committed (a case sent with a method its path does not have, by the coverage
phase, by `unsupported_method` instead of `status_code_conformance`: 405 with `Allow`, its body an ErrorBody),
and a write answered 4xx must change nothing: the stats and the whole change log (GET /v1/stats, GET /v1/changes) of every namespace the case
names, and of the seeded namespace when it addresses the seeded memory or session, are the same before and
after it. A failure carries a reproduction: a curl for `agent-memory serve`, or the Lambda event as JSON.

Deterministic: fixed seed, derandomized Hypothesis, no example database; examples per operation are bounded
by FUZZ_EXAMPLES (env AGENT_MEMORY_FUZZ_EXAMPLES)."""

from __future__ import annotations

import base64
import json
import os
import re
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import requests
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.core.transport import Response
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from agent_memory.api.models import ErrorBody
from agent_memory.domain.records import is_valid_namespace

SPEC_PATH = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
SEED = 20_161  # issue 16
FUZZ_EXAMPLES = int(os.environ.get("AGENT_MEMORY_FUZZ_EXAMPLES", "10"))
SEED_NAMESPACE = "/fuzz/seed"
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
# A method the path does not have is no operation of the document: 405 with `Allow` (or a refusal that comes
# first: 401, 404 for a generated id), its body checked against ErrorBody by run_case.
WRONG_METHOD_CHECKS = [not_a_server_error, unsupported_method, response_schema_conformance]

# Success statuses other than 200 that routes answer with: created, accepted.
OTHER_SUCCESS: dict[str, int] = {
    "POST /v1/memories": 201,  # 201 when the decision created a record, 200 when it merged
    "POST /v1/sessions": 201,
    "POST /v1/admin/dream/start": 202,
    "POST /v1/memories/batch": 202,  # local server: more items than jobs.batch_threshold run as a job
    "POST /v1/imports": 202,  # local server: an import (not a dry run) runs as a job
}
READ_ONLY_POSTS = {"POST /v1/recall"}
ERROR_SHAPES = ("#/components/schemas/ErrorBody",)


def expected_statuses(label: str, operation: dict[str, Any]) -> set[int]:
    """What an operation can answer besides 200, by what it has (api/app.py, the routes, the domain errors):
    a failure or an unavailable dependency; with the bearer requirement 401 and 403; with a body 400 (not
    UTF-8 JSON), 413, 415 and 422, and 400, 413 and 415 for every POST, PUT and PATCH; with parameters 422; with path parameters 404; writes 409."""
    expected = {500, 503}
    parameters = operation.get("parameters") or []
    if operation.get("security") != [{}]:
        expected |= {401, 403}
    if "requestBody" in operation:
        expected |= {400, 413, 415, 422}
    if label.split(" ")[0] in ("POST", "PUT", "PATCH"):
        # the server reads the body of every such request before routing, also where the route takes none
        # (POST /v1/memories/{memory_id}/reviewed with a malformed, oversized or non-JSON body)
        expected |= {400, 413, 415}
    if parameters:
        expected.add(422)
    if any(parameter.get("in") == "path" for parameter in parameters):
        expected.add(404)
    if not label.startswith("GET ") and label not in READ_ONLY_POSTS:
        expected.add(409)
    if label in OTHER_SUCCESS:
        expected.add(OTHER_SUCCESS[label])
    return expected


def undocumented_statuses(document: dict[str, Any]) -> dict[str, list[int]]:
    """Per operation ("POST /v1/memories"), the statuses of expected_statuses the document does not
    describe, and the refusals it describes in a shape other than ErrorBody."""
    missing: dict[str, list[int]] = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            label = f"{method.upper()} {path}"
            responses = operation.get("responses", {})
            lacking = {
                status for status in expected_statuses(label, operation) if str(status) not in responses
            }
            for status, response in responses.items():
                content = json.dumps(response.get("content", {}).get("application/json", {}))
                shapes = set(re.findall(r'"\$ref": "([^"]+)"', content))
                if int(status) >= 400 and not (shapes and shapes <= set(ERROR_SHAPES)):
                    lacking.add(int(status))
            if lacking:
                missing[label] = sorted(lacking)
    return missing


def load_schema(*, coverage: bool) -> Any:
    """The fuzz document with a fixed seed, derandomized, no example database. Phases: the document's
    examples, Hypothesis fuzzing (FUZZ_EXAMPLES per operation and generation mode, positive and negative)
    and, when `coverage`, Schemathesis' coverage phase (every boundary and negative value of each parameter,
    deterministic, not bounded by FUZZ_EXAMPLES: most of the cases)."""
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {"max-examples": FUZZ_EXAMPLES, "deterministic": True, "database": "none"},
            "phases": {
                "examples": {"enabled": True},
                # two wrong methods per path, not nine
                "coverage": {"enabled": coverage, "unexpected-methods": ["DELETE", "PUT"]},
                "fuzzing": {"enabled": True},
                "stateful": {"enabled": False},
            },
        }
    )
    return schemathesis.openapi.from_dict(json.loads(SPEC_PATH.read_text(encoding="utf-8")), config=config)


# --------------------------------------------------------------------------- targets


@dataclass
class Seeded:
    """Records made before fuzzing, so id-addressed operations sometimes hit something that exists."""

    memory_id: str
    session_id: str


Caller = Callable[[str, str, dict[str, str] | None, Any], tuple[int, Any]]


@dataclass
class Target:
    """One runtime under test: how a case is sent (with its reproduction) and how a plain request is made
    (seeding, snapshots)."""

    runtime: str
    send: Callable[[Any], tuple[Response, str]]  # case → (response, reproduction)
    request: Caller  # (method, path, params, json body) → (status, json)
    seeded: Seeded | None = None
    timings: list[float] = field(default_factory=list)
    outcomes: Counter[tuple[str, int]] = field(default_factory=Counter)  # (operation, status) → cases

    known: dict[str, Any] = field(default_factory=dict)  # namespace → its last snapshot, while still true

    def snapshot(self, namespace: str) -> Any:
        """The namespace's stats and its whole change log, through the API."""
        status, stats = self.request("GET", "/v1/stats", {"namespace": namespace}, None)
        changes: list[Any] = []
        cursor: str | None = None
        while True:
            params = {"namespace": namespace, "limit": "500", **({"cursor": cursor} if cursor else {})}
            code, page = self.request("GET", "/v1/changes", params, None)
            if code != 200:
                changes.append(code)
                break
            changes.extend(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                break
        return {"stats": (status, stats), "changes": changes}

    def state(self, namespaces: set[str]) -> dict[str, Any]:
        """Snapshots of `namespaces`; one taken after a refused request stands until a request is accepted
        (or fails), so a run of refusals costs one snapshot each, not two."""
        for namespace in namespaces - self.known.keys():
            self.known[namespace] = self.snapshot(namespace)
        return {namespace: self.known[namespace] for namespace in namespaces}


def namespaces_of(case: Any, seeded_note: str) -> set[str]:
    """Every valid namespace anywhere in the case (query, body), and the seeded one when the case addresses
    a seeded record."""
    found = {SEED_NAMESPACE} if seeded_note else set()

    def walk(value: Any) -> None:
        if isinstance(value, str) and is_valid_namespace(value):
            found.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(case.query or {})
    walk(case.body if isinstance(case.body, dict | list | str) else None)
    return found


def aim_at_seeded(case: Any, seeded: Seeded | None) -> str:
    """Half of the generated ids (decided by the id itself, so reproducible) are replaced by a seeded one;
    returns a note for the reproduction when one was."""
    if seeded is None:
        return ""
    notes = []
    for name, value in (("memory_id", seeded.memory_id), ("session_id", seeded.session_id)):
        generated = case.path_parameters.get(name)
        if isinstance(generated, str) and zlib.crc32(generated.encode("utf-8", "surrogatepass")) % 2 == 0:
            case.path_parameters[name] = value
            notes.append(f"{name} {value} is the seeded one (conftest.seed): use one that exists")
    return "\n".join(notes)


def run_case(target: Target, case: Any) -> None:
    """Send one case, run the checks, and for a 4xx compare the namespaces' state before and after."""
    seeded_note = aim_at_seeded(case, target.seeded)
    label = f"{case.method.upper()} {case.path}"
    # Reads and methods the path does not have (405) are not snapshotted: nothing of theirs could store
    may_write = case.method.upper() == case.operation.method.upper() != "GET"
    namespaces = namespaces_of(case, seeded_note) if may_write else set()
    before = target.state(namespaces)
    started = time.perf_counter()
    response, reproduction = target.send(case)
    target.timings.append(time.perf_counter() - started)
    target.outcomes[(label, response.status_code)] += 1
    refused = 400 <= response.status_code < 500
    if may_write and not refused:
        target.known.clear()  # accepted (or failed): anything may have changed, anywhere
    try:
        if case.method.upper() == case.operation.method.upper():
            case.validate_response(response, checks=CHECKS)
        else:
            case.validate_response(response, checks=WRONG_METHOD_CHECKS)
            if response.status_code == 405:
                try:
                    ErrorBody.model_validate_json(response.content)
                except ValueError as error:
                    raise AssertionError(
                        f"a 405 that is not an ErrorBody: {response.content[:300]!r}"
                    ) from error
        if namespaces and refused:
            for namespace in namespaces:
                del target.known[namespace]
            after = target.state(namespaces)
            changed = {ns: (before[ns], after[ns]) for ns in namespaces if before[ns] != after[ns]}
            assert not changed, (
                f"a refused request ({response.status_code}: {response.content[:300]!r}) changed state:\n"
                + "\n".join(
                    f"  {ns}: before {b!r}\n  {' ' * len(ns)}  after  {a!r}" for ns, (b, a) in changed.items()
                )
            )
    except BaseException as failure:
        failure.add_note(f"\n[{target.runtime}] reproduce with:\n{reproduction}\n{seeded_note}".rstrip())
        raise


# --------------------------------------------------------------------------- local (ASGI, in process)


def local_target(app: Any, api_key: str, dream_launcher: Any = None, jobs: Any = None) -> Target:
    """`dream_launcher`: the runtime's dream launcher (`api/jobs.py` JobLauncher); each case waits for the sweeps it started, so a
    background sweep never changes a namespace between another case's before and after snapshots. `jobs`:
    the runtime's JobService; likewise each case waits until no job (a 202 import or batch) is running."""
    auth = {"Authorization": f"Bearer {api_key}"}
    client = asgi.get_client(app)

    def send(case: Any) -> tuple[Response, str]:
        curl = case.as_curl_command(base_url="http://127.0.0.1:8080")
        # the key as a shell variable (a header passed to as_curl_command would be masked as [Filtered])
        reproduction = curl.replace("curl ", 'curl -H "Authorization: Bearer $AGENT_MEMORY_KEY" ', 1)
        response = Response.from_any(case.call(app=app, headers=auth))
        for started in list(dream_launcher.started.values()) if dream_launcher else []:
            started.result(timeout=120)
        while jobs is not None and not jobs.idle():
            time.sleep(0.01)
        return response, reproduction + "\n(against `agent-memory serve`; any key with admin)"

    def request(method: str, path: str, params: dict[str, str] | None, body: Any) -> tuple[int, Any]:
        reply = client.request(method, path, params=params, json=body, headers=auth)
        return reply.status_code, reply.json() if reply.content else None

    return Target(runtime="local", send=send, request=request)


# --------------------------------------------------------------------------- aws (Lambda handler on moto)


def lambda_target(event_builder: Callable[..., dict[str, Any]], invoke: Callable[[dict], dict]) -> Target:
    """`event_builder(method, path, body, params, headers)` is LambdaClient._event of tests/behaviour (the
    authorizer context of the key); `invoke(event)` calls the handler and returns its result."""

    def to_event(prepared: requests.PreparedRequest) -> dict[str, Any]:
        url = urlsplit(prepared.url or "")
        path = unquote(url.path)
        pairs = parse_qsl(url.query, keep_blank_values=True)
        headers = {
            name: value
            for name, value in prepared.headers.items()
            if name.lower() not in ("authorization", "content-length", "host")
        }
        single = dict(pairs) or None
        event = event_builder(prepared.method or "GET", path, None, single, headers)
        event["headers"] = {"Host": "api.example.com", **headers}  # no default Content-Type: the case's own
        event["multiValueHeaders"] = {name: [value] for name, value in event["headers"].items()}
        multi: dict[str, list[str]] = {}
        for name, value in pairs:
            multi.setdefault(name, []).append(value)
        event["queryStringParameters"] = single
        event["multiValueQueryStringParameters"] = multi or None
        event["requestContext"]["path"] = f"/prod{path}" + (f"?{urlencode(pairs)}" if pairs else "")
        raw = prepared.body
        body = raw.encode("utf-8") if isinstance(raw, str) else raw
        if body is not None and not isinstance(body, bytes):
            raise TypeError(f"a streamed request body cannot become an event: {type(body)}")
        if body:
            try:
                event["body"], event["isBase64Encoded"] = body.decode("utf-8"), False
            except UnicodeDecodeError:  # API Gateway hands binary bodies over base64-encoded
                event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
        return event

    def call(event: dict[str, Any], prepared: requests.PreparedRequest) -> Response:
        started = time.perf_counter()
        try:
            result = invoke(event)
        except Exception as error:  # a failed invocation: API Gateway answers 502 with this body
            result = {"statusCode": 502, "body": json.dumps({"message": "Internal server error"})}
            result["headers"] = {"Content-Type": "application/json", "X-Handler-Error": repr(error)[:500]}
        elapsed = time.perf_counter() - started
        raw = result.get("body") or ""
        content = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode("utf-8")
        headers: dict[str, list[str]] = {
            name.lower(): [str(value)] for name, value in (result.get("headers") or {}).items()
        }
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers[name.lower()] = [str(value) for value in values]
        return Response(
            status_code=result["statusCode"],
            headers=headers,
            content=content,
            request=prepared,
            elapsed=elapsed,
            verify=True,
        )

    def send(case: Any) -> tuple[Response, str]:
        kwargs = case.as_transport_kwargs(base_url="https://api.example.com")
        kwargs.pop("auth", None)
        kwargs.pop("cookies", None)
        request = requests.Request(
            method=kwargs["method"],
            url=kwargs["url"],
            headers=kwargs.get("headers"),
            params=kwargs.get("params"),
            json=kwargs.get("json"),
            data=kwargs.get("data"),
            files=kwargs.get("files"),
        )
        prepared = request.prepare()
        event = to_event(prepared)
        shown = {key: value for key, value in event.items() if key != "multiValueHeaders"}
        reproduction = (
            "handlers.api.handler(event, LambdaContext()) with this event (multiValueHeaders: one list per "
            "header):\n" + json.dumps(shown)
        )
        return call(event, prepared), reproduction

    def request(method: str, path: str, params: dict[str, str] | None, body: Any) -> tuple[int, Any]:
        prepared = requests.Request(
            method, "https://api.example.com" + path, params=params, json=body
        ).prepare()
        response = call(to_event(prepared), prepared)
        return response.status_code, json.loads(response.content) if response.content else None

    return Target(runtime="aws", send=send, request=request)
