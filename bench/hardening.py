"""The closing table of issue 16: bad inputs sent to every route family of both runtimes, what each answered.

Each row is one bad request (non-finite numbers, naive or out-of-range times, bodies that are not UTF-8 JSON,
absurd nesting, unknown routes and methods, other media types, namespaces with control characters, oversize
fields, wrong types) sent to a fresh namespace holding one memory. Per row and runtime (`local`: the local
server over real HTTP; `aws`: the Lambda handler on moto; see tests/behaviour/conftest.py):

- status: what the bad request got; precise 4xx: whether it is exactly the expected status;
- 5xx: server errors among the bad request and the reads after it (list, stats, recall of the namespace),
  so a namespace poisoned by what was accepted shows up here;
- stored: what changed in the namespace although the request was refused (records added or changed, change
  log entries, memory-file usage), 0 when nothing was.

    .venv/bin/python bench/hardening.py [--runtime local|aws|both]

prints the Markdown table and exits 1 when any row has a 5xx or stored something (a 4xx other than the
expected one shows as "no" in the table; tests/behaviour/test_hardening_table.py fails on it too).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEEP = 100_000
BIG = 2 * 1024 * 1024  # over the local server's default body limit (1 MiB)


@dataclass(frozen=True)
class Bad:
    """One bad request. `path`, `body` and `params` values may name {ns} (the row's namespace) and {id} (the
    memory in it); the body is a `str.format` template (braces doubled), sent in `encoding`."""

    name: str
    method: str
    path: str
    expected: int
    body: str | None = None
    content_type: str | None = "application/json"
    encoding: str = "utf-8"
    params: dict[str, str] = field(default_factory=dict)
    who: str | None = "alpha"

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")


def _memory(extra: str = "", namespace: str = "{ns}") -> str:
    return '{{"content": "The export runs at noon", "namespace": "' + namespace + '"' + extra + "}}"


def _recall(extra: str) -> str:
    return '{{"query": "export", "namespaces": ["{ns}"]' + extra + "}}"


NAIVE = "2030-01-01T00:00:00"
CAFE = '{{"content": "The café opens at nine", "namespace": "{ns}"}}'
M = "/v1/memories"
ID = "/v1/memories/{id}"

ROWS: list[Bad] = [
    # non-finite numbers (Python's json reads them; JSON has none)
    Bad("NaN in metadata", "POST", M, 422, _memory(', "metadata": {{"x": NaN}}')),
    Bad("Infinity in metadata", "POST", M, 422, _memory(', "metadata": {{"x": Infinity}}')),
    Bad("-Infinity in score", "POST", M, 422, _memory(', "score": -Infinity')),
    Bad("1e400 in half_life_hours", "POST", M, 422, _memory(', "half_life_hours": 1e400')),
    Bad(
        "NaN in a batch item's metadata",
        "POST",
        M + "/batch",
        422,
        '{{"items": [' + _memory(', "metadata": {{"x": NaN}}') + "]}}",
    ),
    Bad(
        "1e400 in a batch item's score",
        "POST",
        M + "/batch",
        422,
        '{{"items": [' + _memory(', "score": 1e400') + "]}}",
    ),
    Bad("-Infinity in PATCH metadata", "PATCH", ID, 422, '{{"metadata": {{"x": -Infinity}}}}'),
    Bad("NaN in PATCH score", "PATCH", ID, 422, '{{"score": NaN}}'),
    Bad("1e400 in PATCH half_life_hours", "PATCH", ID, 422, '{{"half_life_hours": 1e400}}'),
    Bad("NaN in recall min_score", "POST", "/v1/recall", 422, _recall(', "min_score": NaN')),
    Bad(
        "Infinity in dream explain",
        "POST",
        "/v1/admin/dream",
        422,
        '{{"namespace": "{ns}", "dry_run": true, "explain": Infinity}}',
    ),
    Bad("NaN as the limit query parameter", "GET", M, 422, params={"namespace": "{ns}", "limit": "NaN"}),
    # numeric bounds
    Bad("score 1.01", "POST", M, 422, _memory(', "score": 1.01')),
    Bad("half_life_hours 0", "POST", M, 422, _memory(', "half_life_hours": 0')),
    Bad("half_life_hours 876001", "POST", M, 422, _memory(', "half_life_hours": 876001')),
    Bad("PATCH expected_version 10^12", "PATCH", ID, 422, '{{"expected_version": 1000000000000}}'),
    Bad("PATCH expected_version -1", "PATCH", ID, 422, '{{"expected_version": -1}}'),
    Bad("recall k 101", "POST", "/v1/recall", 422, _recall(', "k": 101')),
    Bad("changes limit 0", "GET", "/v1/changes", 422, params={"namespace": "{ns}", "limit": "0"}),
    # times
    Bad("naive as_of", "POST", "/v1/recall", 422, _recall(f', "as_of": "{NAIVE}"')),
    Bad("naive valid_from", "POST", M, 422, _memory(f', "valid_from": "{NAIVE}"')),
    Bad(
        "naive valid_from in a batch",
        "POST",
        M + "/batch",
        422,
        '{{"items": [' + _memory(f', "valid_from": "{NAIVE}"') + "]}}",
    ),
    Bad(
        "as_of 0001-01-01 +01:00",
        "POST",
        "/v1/recall",
        422,
        _recall(', "as_of": "0001-01-01T00:00:00+01:00"'),
    ),
    Bad(
        "dream day 0001-01-01",
        "POST",
        "/v1/admin/dream",
        422,
        '{{"namespace": "{ns}", "day": "0001-01-01", "dry_run": true}}',
    ),
    Bad(
        "dream day 9999-12-31",
        "POST",
        "/v1/admin/dream",
        422,
        '{{"namespace": "{ns}", "day": "9999-12-31", "dry_run": true}}',
    ),
    # bodies that are not UTF-8 JSON
    Bad("invalid UTF-8 (latin-1 bytes)", "POST", M, 400, CAFE, encoding="latin-1"),
    Bad("UTF-16 with BOM", "POST", M, 400, CAFE, encoding="utf-16"),
    Bad("UTF-16-LE", "POST", M, 400, CAFE, encoding="utf-16-le"),
    Bad(
        "latin-1 bytes, charset=latin-1", "POST", M, 400, CAFE, "application/json; charset=latin-1", "latin-1"
    ),
    Bad("UTF-8 body declared charset=utf-16", "POST", M, 400, CAFE, "application/json; charset=utf-16"),
    Bad(f"{DEEP:,}-deep JSON", "POST", M, 400, "[" * DEEP + "]" * DEEP),
    Bad("5,000-digit integer", "POST", M, 400, _memory(', "metadata": {{"n": ' + "9" * 5000 + "}}")),
    Bad("truncated JSON", "POST", M, 400, '{{"content": "x", "namespace": "{ns}"'),
    # routes, methods, media types
    Bad("unknown route", "GET", "/v1/nothing-here", 404),
    Bad("unknown route outside /v1", "GET", "/nope", 404),
    Bad("wrong method DELETE /v1/memories", "DELETE", M, 405),
    Bad("wrong method PUT /v1/memories/{id}", "PUT", ID, 405, '{{"content": "x"}}'),
    Bad("text/plain body", "POST", M, 415, "content=x", "text/plain"),
    Bad(
        "form-urlencoded body",
        "POST",
        M,
        415,
        "content=x&namespace=%2Fx",
        "application/x-www-form-urlencoded",
    ),
    Bad("unknown memory id", "GET", "/v1/memories/mem_0000000000000000000000000000dead", 404),
    Bad("no API key", "POST", M, 401, _memory(), who=None),
    # namespaces
    Bad("namespace with newline (body)", "POST", M, 422, _memory(namespace="{ns}\\n")),
    Bad("namespace with newline (query)", "GET", M, 422, params={"namespace": "{ns}\n"}),
    Bad("namespace with NUL (stats)", "GET", "/v1/stats", 422, params={"namespace": "{ns}\x00"}),
    Bad(
        "namespace with tab (file entry)",
        "POST",
        "/v1/files/memory/entries",
        422,
        '{{"namespace": "{ns}\\t", "content": "Tabs"}}',
    ),
    Bad("namespace with ..", "POST", M, 422, _memory(namespace="{ns}/../x")),
    Bad("namespace without a leading /", "POST", M, 422, _memory(namespace="hardening")),
    # oversize
    Bad(
        "content of 4,001 characters",
        "POST",
        M,
        413,
        _memory().replace("The export runs at noon", "x" * 4001),
    ),
    Bad(
        "21 metadata keys",
        "POST",
        M,
        413,
        _memory(', "metadata": {{' + ", ".join(f'"k{i}": {i}' for i in range(21)) + "}}"),
    ),
    Bad("metadata over 2,048 bytes", "POST", M, 413, _memory(', "metadata": {{"k": "' + "v" * 2100 + '"}}')),
    Bad(
        "recall query of 2,001 characters",
        "POST",
        "/v1/recall",
        413,
        '{{"query": "' + "q" * 2001 + '", "namespaces": ["{ns}"]}}',
    ),
    Bad(
        "batch of 101 items", "POST", M + "/batch", 413, '{{"items": [' + ", ".join([_memory()] * 101) + "]}}"
    ),
    Bad("body of 2 MiB", "POST", M, 413, _memory().replace("The export runs at noon", "x" * BIG)),
    # wrong types and shapes
    Bad("content is a number", "POST", M, 422, '{{"content": 42, "namespace": "{ns}"}}'),
    Bad("namespace is a list", "POST", M, 422, '{{"content": "x", "namespace": ["{ns}"]}}'),
    Bad("metadata is a list", "POST", M, 422, _memory(', "metadata": [1, 2]')),
    Bad("nested metadata", "POST", M, 422, _memory(', "metadata": {{"a": {{"b": 1}}}}')),
    Bad("unknown memory type", "POST", M, 422, _memory(', "type": "gossip"')),
    Bad("unknown field", "POST", M, 422, _memory(', "colour": "blue"')),
    Bad("body is a JSON array", "POST", M, 422, "[1, 2, 3]"),
    Bad("recall k is a string", "POST", "/v1/recall", 422, _recall(', "k": "ten"')),
    Bad("empty PATCH {}", "PATCH", ID, 422, "{{}}"),
]


# --------------------------------------------------------------------------- running a row


@dataclass
class Answer:
    status: int
    text: str


def send(
    api: Any,
    method: str,
    path: str,
    body: bytes | None,
    content_type: str | None,
    params: dict[str, str] | None = None,
    who: str | None = "alpha",
) -> Answer:
    """One request with raw body bytes. In Lambda, a body that is not UTF-8 text arrives base64-encoded (API
    Gateway's binary pass-through)."""
    headers = {"Content-Type": content_type} if content_type else {}
    if api.runtime == "local":
        with api.client(who) as client:
            response = client.request(method, path, content=body, headers=headers, params=params or None)
        return Answer(response.status_code, response.text)
    from agent_memory.handlers.api import handler
    from tests.behaviour.conftest import LambdaContext, raw_lambda_event

    event = raw_lambda_event(who, method, path, body, headers, params)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the handler's EMF metrics lines are not the table
            result = handler(event, LambdaContext())
    except Exception as error:  # a failed invocation: API Gateway answers 502
        return Answer(502, f'{{"message": "Internal server error"}} ({type(error).__name__}: {error})')
    return Answer(result["statusCode"], result.get("body") or "")


def _json(api: Any, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Answer:
    raw = json.dumps(body).encode() if body is not None else None
    return send(api, method, path, raw, "application/json" if raw else None, params)


@dataclass
class State:
    records: dict[str, int]  # id → version
    changes: int
    files: Any
    server_errors: int


def state_of(api: Any, ns: str) -> State:
    """Everything a refused request could have changed in the namespace, through the API."""
    answers = {
        "list": _json(api, "GET", "/v1/memories", params={"namespace": ns, "limit": "100"}),
        "changes": _json(api, "GET", "/v1/changes", params={"namespace": ns, "limit": "500"}),
        "stats": _json(api, "GET", "/v1/stats", params={"namespace": ns}),
    }
    server_errors = sum(answer.status >= 500 for answer in answers.values())

    def body(name: str) -> dict[str, Any]:
        answer = answers[name]
        return json.loads(answer.text) if answer.status == 200 else {}

    records = {item["id"]: item["version"] for item in body("list").get("items", [])}
    return State(records, len(body("changes").get("items", [])), body("stats").get("files"), server_errors)


@dataclass
class Outcome:
    bad: Bad
    runtime: str
    status: int
    seconds: float
    server_errors: int
    stored: int
    answer: str

    @property
    def precise(self) -> bool:
        return self.status == self.bad.expected

    @property
    def ok(self) -> bool:
        return self.precise and self.server_errors == 0 and self.stored == 0


def _fill(text: str, ns: str, memory_id: str) -> str:
    return text.replace("{ns}", ns).replace("{id}", memory_id)


def run_row(api: Any, bad: Bad) -> Outcome:
    ns = f"/hardening/r-{uuid.uuid4().hex[:10]}"
    created = _json(
        api, "POST", "/v1/memories", {"content": "The invoice job retries three times", "namespace": ns}
    )
    assert created.status in (200, 201), created.text
    memory_id = json.loads(created.text)["memory"]["id"]
    before = state_of(api, ns)
    body = bad.body.format(ns=ns, id=memory_id).encode(bad.encoding) if bad.body is not None else None
    params = {key: _fill(value, ns, memory_id) for key, value in bad.params.items()}
    started = time.perf_counter()
    answer = send(api, bad.method, _fill(bad.path, ns, memory_id), body, bad.content_type, params, bad.who)
    seconds = time.perf_counter() - started
    after = state_of(api, ns)
    recall = _json(api, "POST", "/v1/recall", {"query": "invoice job", "namespaces": [ns]})
    changed_records = sum(
        1
        for key in before.records.keys() | after.records.keys()
        if before.records.get(key) != after.records.get(key)
    )
    new_changes = max(0, after.changes - before.changes)
    stored = changed_records + (new_changes if not changed_records else 0) + (before.files != after.files)
    server_errors = (answer.status >= 500) + after.server_errors + (recall.status >= 500)
    return Outcome(bad, api.runtime, answer.status, seconds, server_errors, stored, answer.text[:200])


# --------------------------------------------------------------------------- the table


def table(outcomes: list[Outcome]) -> str:
    lines = [
        "| bad input | request | runtime | status | precise 4xx (expected) | 5xx | stored | ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        request = f"`{o.bad.method} {o.bad.path}`"
        precise = f"{'yes' if o.precise else '**no**'} ({o.bad.expected})"
        errors = f"**{o.server_errors}**" if o.server_errors else "0"
        stored = f"**{o.stored}**" if o.stored else "0"
        lines.append(
            f"| {o.bad.name} | {request} | {o.runtime} | {o.status} | {precise} | {errors} | {stored} "
            f"| {o.seconds * 1000:.0f} |"
        )
    failed = [o for o in outcomes if not o.ok]
    lines.append("")
    lines.append(
        f"{len(outcomes)} requests ({len(ROWS)} bad inputs × runtimes): "
        f"{sum(o.precise for o in outcomes)} precise, {sum(o.server_errors for o in outcomes)} server errors, "
        f"{sum(o.stored for o in outcomes)} stored, {len(failed)} rows failing"
    )
    return "\n".join(lines)


@dataclass
class _TempDirs:
    """What serve_api needs of pytest's tmp_path_factory: fresh directories under `root`."""

    root: Path

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))


def runtimes(names: list[str], root: Path) -> Iterator[Any]:
    from tests.behaviour.conftest import serve_api

    for name in names:
        yield from serve_api(name, _TempDirs(root))  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", choices=["local", "aws", "both"], default="both")
    args = parser.parse_args(argv)
    names = ["local", "aws"] if args.runtime == "both" else [args.runtime]
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="hardening-") as root:
        for api in runtimes(names, Path(root)):
            outcomes.extend(run_row(api, bad) for bad in ROWS)
    print(table(outcomes))
    return 1 if any(o.server_errors or o.stored for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
