"""The dreaming state machine executed offline by moto's Step Functions interpreter, with every Lambda task
running the real `handlers/dreaming.py` in-process against the local adapters.

moto 5 executes definitions when `stepfunctions.execute_state_machine` is on; its Docker-free Lambda backend
(`lambda.use_docker: False`) would echo the payload, so the test installs an `invoke` that does what the
Lambda runtime does: call the handler, and on an exception answer `FunctionError: Unhandled` with
`{"errorType", "errorMessage"}`. A 429 from the Invoke API is injected to check the retry path; the
retrier's sleeps are recorded instead of waited. The last test sweeps as many namespaces as the ListTargets
handler allows (AGENT_MEMORY_DREAMING_MAX_TARGETS) and measures every state's payload against Step Functions'
256 KiB limit.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.core.exceptions import JsonRESTError
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager

from agent_memory.domain.dreaming.sweep import DreamingService
from agent_memory.domain.errors import ValidationFailed
from agent_memory.handlers import dreaming as dreaming_handlers
from agent_memory.settings.dreaming import DreamingSettings
from infra.workflows.dreaming_asl import (
    LAMBDA_TRANSIENT_ERRORS,
    UPSTREAM_ERRORS,
    DreamingFunctions,
    RetryPolicy,
)
from infra.workflows.dreaming_asl import build_definition as build_asl
from tests.aws.support import REGION

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from dreaming_world import NS, TENANT, World

INFRA = "/projects/infra"
FUNCTION = f"arn:aws:lambda:{REGION}:123456789012:function:agent-memory-dreaming"
INVOICES = "Invoices are generated on the first day of each month by the billing cron job"
STATE_PAYLOAD_LIMIT = 256 * 1024
"""Step Functions' quota on the input or output of a state (and of an execution): 256 KiB of UTF-8."""


def build_definition(functions: DreamingFunctions, **options: Any) -> dict[str, Any]:
    """The ASL as the stack builds it, in the `aws` partition of these moto executions."""
    return build_asl(functions, partition="aws", **options)


class FakeContext:
    function_name = "agent-memory-dreaming"
    memory_limit_in_mb = 1024
    invoked_function_arn = FUNCTION
    aws_request_id = "req-1"


class LambdaRuntime:
    """What moto's Lambda backend runs for each Invoke: the dreaming handler, like the real runtime."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []
        self.results: list[tuple[str, str | None, dict[str, Any]]] = []
        self.throttle: dict[tuple[str, str], int] = {}

    def invoke(self, backend, function_name, qualifier, body, headers, response_headers) -> bytes:
        payload = json.loads(body)
        task = payload.get("task")
        namespace = (payload.get("target") or payload.get("handle") or {}).get("namespace")
        self.calls.append((task, namespace))
        if self.throttle.get((task, namespace), 0) > 0:
            self.throttle[(task, namespace)] -= 1
            raise JsonRESTError("TooManyRequestsException", "Rate exceeded")
        try:
            result = dreaming_handlers.handler(payload, FakeContext())
        except Exception as error:  # the Lambda runtime reports any exception as a function error
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}).encode()
        self.results.append((task, namespace, result))
        return json.dumps(result).encode()


@pytest.fixture
def world(tmp_path, clock) -> World:
    world = World.build(tmp_path, clock)
    world.short_term(INVOICES)
    world.recall_daily(
        [
            "when are invoices generated",
            "invoice generation schedule",
            "billing cron job day",
            "first day month invoices",
        ]
    )
    world.short_term("Staging runs in eu-west-1", namespace=INFRA)
    return world


@pytest.fixture
def runtime(world, monkeypatch) -> LambdaRuntime:
    runtime = LambdaRuntime()
    monkeypatch.setattr(
        LambdaSimpleBackend,
        "invoke",
        lambda self, name, qualifier, body, headers, response_headers: runtime.invoke(
            self, name, qualifier, body, headers, response_headers
        ),
    )
    service = DreamingService(world.memory, world.store, world.files, world.clock)
    settings = DreamingSettings(tenants=[TENANT], namespaces={TENANT: [NS]})
    dreaming_handlers.configure(lambda tenant: service, settings)
    yield runtime
    dreaming_handlers.configure(None)


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    recorded: list[float] = []
    monkeypatch.setattr(retrier_decl, "time", SimpleNamespace(sleep=recorded.append))
    return recorded


def execute(
    definition: dict[str, Any], execution_input: dict[str, Any], name: str, timeout_seconds: float = 240
) -> dict[str, Any]:
    """Start and wait. The name is explicit: moto leaves `$$.Execution.Name` null without one (AWS and the
    scheduler always set one)."""
    with mock_aws(config={"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}):
        client = boto3.client("stepfunctions", region_name=REGION)
        machine = client.create_state_machine(
            name="agent-memory-dreaming",
            definition=json.dumps(definition),
            roleArn="arn:aws:iam::123456789012:role/dreaming-workflow",
        )
        started = client.start_execution(
            stateMachineArn=machine["stateMachineArn"], name=name, input=json.dumps(execution_input)
        )
        deadline = time.monotonic() + timeout_seconds
        while True:
            described = client.describe_execution(executionArn=started["executionArn"])
            if described["status"] != "RUNNING" or time.monotonic() > deadline:
                return described
            time.sleep(0.05)


def test_given_two_namespaces_one_locked_when_executed_then_one_promotes_and_the_other_records_its_failure(
    world, runtime, sleeps
):
    day = world.clock.now().date().isoformat()
    other = DreamingService(world.memory, world.store, world.files, world.clock)
    other.begin(TENANT, INFRA, run_id="manual-sweep")  # an on-demand sweep holds infra's lease
    runtime.throttle[("rem", NS)] = 2  # Lambda throttles the REM invoke twice
    definition = build_definition(DreamingFunctions.single(FUNCTION), max_concurrency=2, retry=RetryPolicy())

    described = execute(definition, {"tenants": [TENANT], "day": day}, "nightly-1")

    assert described["status"] == "SUCCEEDED", described
    # The execution's output counts the namespaces; what each sweep did is in its files and the task results
    assert json.loads(described["output"]) == {"day": day, "completed": 1, "failed": 1}
    (deep,) = [result for task, ns, result in runtime.results if task == "deep"]
    assert [p["memory_md"] for p in deep["summary"]["promoted"]] == ["added"]
    (recorded,) = [result for task, ns, result in runtime.results if task == "record_failure"]
    assert recorded["recorded"] is True and recorded["error"] == "SweepInProgress"
    # Data flow: Light → REM (throttled twice, retried) → Deep for billing; Light → RecordFailure for infra.
    assert [task for task, ns in runtime.calls if ns == NS] == ["light", "rem", "rem", "rem", "deep"]
    assert [task for task, ns in runtime.calls if ns == INFRA] == ["light", "record_failure"]
    assert len(sleeps) == 2 and all(0 <= pause <= 60 for pause in sleeps)
    assert world.memory_md() == [INVOICES]
    failure = json.loads(world.files.read_file(TENANT, INFRA, f".dreams/{day}/failure.json"))
    assert failure["error"] == "SweepInProgress" and "manual-sweep" in failure["cause"]
    lease = json.loads(world.files.read_file(TENANT, INFRA, ".dreams/lock.json"))
    assert lease["owner"] == "manual-sweep"  # a failed item never releases somebody else's lease
    assert f".dreams/{day}/run.json" in world.dream_files(NS)


def test_given_the_same_day_executed_twice_then_the_second_promotes_nothing(world, runtime, sleeps):
    day = world.clock.now().date().isoformat()
    definition = build_definition(DreamingFunctions.single(FUNCTION), max_concurrency=1)

    first = execute(definition, {"tenants": [TENANT], "day": day}, "nightly-1")
    second = execute(definition, {"tenants": [TENANT], "day": day}, "on-demand-2")

    assert first["status"] == second["status"] == "SUCCEEDED"
    assert json.loads(second["output"]) == {"day": day, "completed": 2, "failed": 0}
    second_deeps = [(ns, result) for task, ns, result in runtime.results if task == "deep"][2:]
    assert {ns: result["summary"]["status"] for ns, result in second_deeps} == {
        NS: "already_done",
        INFRA: "already_done",
    }
    assert world.memory_md() == [INVOICES]


def assert_input_error(event: dict[str, Any], message: str) -> None:
    """The handler refuses `event` with exactly ValidationFailed (not a subclass, not a bare Exception): the
    errorType Step Functions sees is `type(error).__name__` (see LambdaRuntime), and it is not one of the
    names the definition retries."""
    with pytest.raises(ValidationFailed, match=message) as raised:
        dreaming_handlers.handler(event, FakeContext())
    assert type(raised.value) is ValidationFailed
    error_type = type(raised.value).__name__
    assert error_type == "ValidationFailed"
    assert error_type not in (*UPSTREAM_ERRORS, *LAMBDA_TRANSIENT_ERRORS)


def list_every_page(event: dict[str, Any]) -> list[dict[str, Any]]:
    """ListTargets called as the state machine calls it: cursor 0, then each answer's next_cursor, with the
    first page's day handed back."""
    pages, cursor, day = [], 0, None
    while cursor is not None:
        page = dreaming_handlers.handler({**event, "cursor": cursor, "day": day}, FakeContext())
        pages.append(page)
        cursor, day = page["next_cursor"], page["day"]
    return pages


def test_given_long_namespace_names_then_pages_get_shorter_and_none_exceeds_the_byte_budget(handler_env):
    """The count per page does not bound the bytes: 800 namespaces with long names in one page would fail the
    execution with States.DataLimitExceeded. Pages then hold fewer targets, and every target is listed once."""
    long_names = [f"/projects/{'x' * 400}/{n:04d}" for n in range(800)]
    service = SimpleNamespace(namespaces=lambda tenant, extra=(): long_names)
    dreaming_handlers.configure(lambda tenant: service, DreamingSettings(tenants=[TENANT]))
    try:
        pages = list_every_page({"task": "list_targets", "input": {"tenants": [TENANT]}})
        assert len(pages) >= 2
        for page in pages:
            encoded = len(json.dumps(page, separators=(",", ":")).encode())
            assert encoded <= dreaming_handlers.TARGETS_MAX_BYTES
        listed = [t["namespace"] for page in pages for t in page["targets"]]
        assert listed == long_names
        assert len({page["day"] for page in pages}) == 1
        # ... while the same number of ordinary names fits one page
        short = [f"/projects/p{n:04d}" for n in range(800)]
        service.namespaces = lambda tenant, extra=(): short
        (only,) = list_every_page({"task": "list_targets", "input": {"tenants": [TENANT]}})
        assert len(only["targets"]) == 800 and only["next_cursor"] is None
    finally:
        dreaming_handlers.configure(None)


def test_given_no_tenant_anywhere_when_listing_targets_then_a_clear_error(world, handler_env):
    handler_env.delenv("AGENT_MEMORY_TENANTS", raising=False)
    service = DreamingService(world.memory, world.store, world.files, world.clock)
    dreaming_handlers.configure(lambda tenant: service, DreamingSettings(tenants=[]))
    try:
        # Bad input is a ValidationFailed: the Lambda runtime reports the class name as the errorType, the
        # name the state machine's Retry/Catch route on, and this one must not be retried like a throttle.
        assert_input_error({"task": "list_targets", "input": {}}, "no tenant to sweep")
        assert_input_error({"task": "sleep"}, "unknown dreaming task")
        listed = dreaming_handlers.handler(
            {
                "task": "list_targets",
                "input": {"tenants": [TENANT], "time_zone": "Asia/Tokyo"},
                "execution": "exec-1",
            },
            FakeContext(),
        )
        assert {t["namespace"] for t in listed["targets"]} == {NS, INFRA}
        assert all(t["run_id"].startswith("sfn-exec-1-") for t in listed["targets"])
        # an on-demand start may name the namespaces to sweep
        chosen = dreaming_handlers.handler(
            {
                "task": "list_targets",
                "input": {"tenants": [TENANT], "namespaces": [INFRA]},
                "execution": "e2",
            },
            FakeContext(),
        )
        assert [t["namespace"] for t in chosen["targets"]] == [INFRA]
        assert_input_error(
            {"task": "list_targets", "input": {"tenants": [TENANT], "namespaces": ["../x"]}},
            "namespaces must be a list",
        )
        unusable = dreaming_handlers.handler(
            {"task": "record_failure", "target": {"tenant": TENANT}}, FakeContext()
        )
        assert unusable["recorded"] is False and "namespace" in unusable["reason"]  # logged, never raised
    finally:
        dreaming_handlers.configure(None)


# --------------------------------------------------------------------------- payload size at the namespace cap


def realistic_namespace(index: int) -> str:
    return f"/projects/team-{index // 50:02d}/service-{index:04d}"


def longest_namespace(index: int) -> str:
    """A namespace as long as one may be (8 segments of 64 characters, 520 in all): about 640 bytes per target,
    so a page is cut by its byte budget at under 400 targets rather than by the 1,000-target count."""
    first = f"team-{index:05d}-".ljust(64, "x")
    return "/" + "/".join([first, *[f"s{segment}".ljust(64, "y") for segment in range(7)]])


class StubbedSweep:
    """Lambda answers of realistic size for every task of a sweep over `count` namespaces, without sweeping:
    ListTargets is the real handler (over a service that reports `count` namespaces); Light, REM and Deep
    answer what the real tasks answer for a namespace with a dozen candidates and three promotions; every
    `fail_every`-th namespace fails in REM with `SweepInProgress` and is recorded."""

    def __init__(self, count: int, fail_every: int, longest_names: bool = False) -> None:
        name = longest_namespace if longest_names else realistic_namespace
        self.namespaces = [name(i) for i in range(count)]
        self.failing = set(self.namespaces[::fail_every])
        self.deep_summaries: list[int] = []

    def namespaces_of(self, tenant: str, configured: Any) -> list[str]:
        return list(self.namespaces)

    def invoke(self, backend, function_name, qualifier, body, headers, response_headers) -> bytes:
        payload = json.loads(body)
        task = payload["task"]
        if task == "list_targets":
            return json.dumps(dreaming_handlers.handler(payload, FakeContext())).encode()
        handle = payload.get("handle") or payload.get("target") or {}
        namespace = handle.get("namespace")
        if task == "light":
            answer: dict[str, Any] = {
                "handle": {**handle, "as_of": "2026-11-30T02:00:03.517000Z", "skip": False, "reason": None},
                "light": {"candidates": 12, "materialized": 3},
            }
        elif task == "rem" and namespace in self.failing:
            response_headers["x-amz-function-error"] = "Unhandled"
            error = {"errorType": "SweepInProgress", "errorMessage": f"{namespace} is leased by manual-sweep"}
            return json.dumps(error).encode()
        elif task == "rem":
            answer = {"rem": {"themes": 2}}
        elif task == "deep":
            promoted = [
                {
                    "record_id": f"rec_01JD{index:022d}",
                    "memory_md": "added",
                    "text": "Invoices are generated on the first day of each month by the billing cron job",
                    "score": 0.8731,
                }
                for index in range(3)
            ]
            summary = {
                "status": "completed",
                "run_id": handle["run_id"],
                "candidates": 12,
                "promoted": promoted,
            }
            answer = {"summary": {**summary, "rejected": 9, "archived": 1, "capped": 0, "duration_ms": 5120}}
            self.deep_summaries.append(len(json.dumps(answer)))
        elif task == "record_failure":
            answer = {
                "recorded": True,
                "error": "SweepInProgress",
                "failed_at": "2026-11-30T02:00:09.101000Z",
            }
        else:
            raise AssertionError(f"unexpected task {task!r}")
        return json.dumps(answer).encode()


class PayloadSizes:
    """Every state input and output of the executions, measured as moto's interpreter records each history
    event (reading 28,000 events back through GetExecutionHistory takes moto longer than the execution)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sizes: list[tuple[str, str, int]] = []
        create = EventManager._create_history_event

        def recording(*args: Any, **kwargs: Any) -> Any:
            event = create(*args, **kwargs)
            for key, details in event.items():
                if key.endswith("EventDetails") and isinstance(details, dict):
                    for field in ("input", "output"):
                        if isinstance(details.get(field), str):
                            kind = str(getattr(event["type"], "value", event["type"]))
                            self.sizes.append((kind, details.get("name", ""), len(details[field].encode())))
            return event

        monkeypatch.setattr(EventManager, "_create_history_event", staticmethod(recording))

    def of(self, event_type: str, name: str = "") -> list[int]:
        return [
            size for kind, state, size in self.sizes if kind == event_type and (not name or state == name)
        ]


def _reuse_lambda_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto builds a new boto3 client (and TLS context) for every Lambda invoke; at thousands of invokes that
    is most of the run, so one client per region serves them all (boto3 clients are thread-safe)."""
    build = lambda_eval_utils.boto_client_for
    clients = functools.lru_cache(maxsize=None)(lambda region, service: build(region, service))
    monkeypatch.setattr(
        lambda_eval_utils,
        "boto_client_for",
        lambda region, service, state_credentials=None: clients(region, service),
    )


SWEEP_NAMESPACES = 800
"""With the longest namespace names, three pages (392 + 388 + 20), the first two filled to the byte
budget: page boundaries crossed twice and the largest state a page can make, in 800 child executions (a third
page only needs to exist: each namespace past the second page is one more child execution to interpret).
bench/sweep_scale.py runs 10,000 namespaces of realistic names (ten pages of 1,000)."""


def run_paged_sweep(
    monkeypatch: pytest.MonkeyPatch,
    namespaces: int,
    *,
    fail_every: int = 25,
    max_concurrency: int = 40,
    timeout_seconds: float = 600,
    longest_names: bool = False,
) -> tuple[dict[str, Any], StubbedSweep, PayloadSizes]:
    """The dreaming definition executed by moto over `namespaces` stubbed namespaces, as the schedule starts it
    (a UUID execution name, `{"tenants", "time_zone"}`): (DescribeExecution, the stub, the payload sizes)."""
    sweep = StubbedSweep(namespaces, fail_every=fail_every, longest_names=longest_names)
    monkeypatch.setattr(
        LambdaSimpleBackend,
        "invoke",
        lambda self, name, qualifier, body, headers, response_headers: sweep.invoke(
            self, name, qualifier, body, headers, response_headers
        ),
    )
    _reuse_lambda_clients(monkeypatch)
    payloads = PayloadSizes(monkeypatch)
    service = SimpleNamespace(namespaces=sweep.namespaces_of)
    dreaming_handlers.configure(lambda tenant: service, DreamingSettings(tenants=[TENANT]))
    definition = build_definition(DreamingFunctions.single(FUNCTION), max_concurrency=max_concurrency)
    try:
        described = execute(
            definition,
            {"tenants": [TENANT], "time_zone": "UTC"},
            "6f1c2b7e-0d4a-4b8e-9c3f-1a2b3c4d5e6f",
            timeout_seconds,
        )
    finally:
        dreaming_handlers.configure(None)
    return described, sweep, payloads


@pytest.mark.slow  # 800 child executions in moto's interpreter
# Outside coverage measurement (pytest-cov's marker; the threads the execution starts are not traced either):
# what runs here is moto's interpreter and the stubbed tasks above, and tracing them tripled the test's CPU
# (12 s → 35 s). The one handler of ours it calls, ListTargets, is measured by the tests above.
@pytest.mark.no_cover
def test_given_several_pages_of_namespaces_when_swept_then_every_one_is_counted_and_no_state_nears_256_kib(
    monkeypatch, sleeps
):
    """Across ListTargets pages every namespace is swept once and counted, and no state input or output reaches
    Step Functions' 256 KiB: with names as long as a namespace may be, a page is cut by the handler's byte
    budget, so the Map's input is as large as a page can make it (realistic names fill 1,000-target pages to
    about 150 KB; bench/sweep_scale.py runs ten of them), and the tally after every page stays small."""
    # Given three pages of the longest namespaces, every 25th of which fails, and Deep summaries of realistic size
    described, sweep, payloads = run_paged_sweep(monkeypatch, SWEEP_NAMESPACES, longest_names=True)

    # Then the execution succeeds, and its output is three numbers over every page
    assert described["status"] == "SUCCEEDED", described.get("error")
    failed = len(sweep.failing)
    output = json.loads(described["output"])
    assert output == {"day": output["day"], "completed": SWEEP_NAMESPACES - failed, "failed": failed}
    assert len(described["output"].encode()) < 1024
    assert len(sweep.deep_summaries) == SWEEP_NAMESPACES - failed and min(sweep.deep_summaries) > 400
    # And it listed three pages, each run as one Map whose result is far smaller than its targets
    listed = payloads.of("TaskStateExited", "ListTargets")
    maps_in = payloads.of("MapStateEntered", "SweepNamespaces")
    maps_out = payloads.of("MapStateExited", "SweepNamespaces")
    assert len(listed) == len(maps_in) == len(maps_out) == 3
    assert all(out < entered for out, entered in zip(maps_out, maps_in, strict=True))
    # And the full pages were cut by the byte budget, not the count: the Map's input is near its largest
    assert max(maps_in) > 0.95 * dreaming_handlers.TARGETS_MAX_BYTES
    # And no input or output anywhere in the execution reaches the 256 KiB limit: a page stays within the
    # handler's byte budget, and the state after a page is as small as before the first
    assert max(size for *_, size in payloads.sizes) < STATE_PAYLOAD_LIMIT
    assert max(payloads.of("PassStateExited", "Tally")) < 2_048
