"""Chat on the AWS adapters, offline: Bedrock Converse and CountTokens through botocore's Stubber (real
request and response shapes; the request bytes botocore serialised are captured and compared), sessions and
turns in the MemoryTable on moto, and the chat Lambda handler with its CloudWatch metrics."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from agent_memory.adapters.aws.bedrock import Backoff, BedrockTokenCounter
from agent_memory.adapters.aws.bedrock_chat import BedrockChatModel
from agent_memory.adapters.aws.session_store import DynamoSessionStore
from agent_memory.api.context import Services
from agent_memory.domain.errors import NotFound, UpstreamFailed, UpstreamUnavailable
from agent_memory.domain.sessions.chat import tool_config
from agent_memory.domain.sessions.config import PromptCacheConfig
from agent_memory.domain.sessions.prompt_cache import CharTokenEstimator, PrefixMonitor
from agent_memory.domain.sessions.sessions import SessionService
from agent_memory.handlers import chat as chat_handler
from agent_memory.handlers._runtime import Lazy
from tests.aws.support import REGION, TABLE
from tests.contract.chat_fakes import FakeLambdaContext, api_event, build_stack
from tests.contract.session_store_contract import SessionStoreContract, make_session, make_turn

# The chat model cdk.json deploys: the IAM contract (tests/iam) judges these calls against its grant.
MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
T = "acme"
NS = "/projects/billing"
NOTES = [
    "Billing runs on Postgres 16 in eu-west-1; migrations run with `make migrate`.",
    "Invoices are generated on the first day of each month at 02:00 UTC.",
    "Amounts are integer minor units; never floats for money.",
]


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def converse_response(
    content: list[dict[str, Any]],
    *,
    stop: str = "end_turn",
    input_tokens: int = 14,
    output_tokens: int = 9,
    read: int = 0,
    write: int = 0,
) -> dict[str, Any]:
    """Converse's response as Bedrock returns it for Claude with a system cache point."""
    usage: dict[str, Any] = {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens + read + write,
        "cacheReadInputTokens": read,
        "cacheWriteInputTokens": write,
    }
    if read or write:
        usage["cacheDetails"] = [{"ttl": "5m", "inputTokens": read or write}]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": usage,
        "metrics": {"latencyMs": 812},
    }


def tool_use(name: str, tool_input: dict[str, Any], tool_use_id: str = "tooluse_01") -> dict[str, Any]:
    return {"toolUse": {"toolUseId": tool_use_id, "name": name, "input": tool_input}}


class CapturedBodies:
    """The JSON bodies botocore serialised for each Converse call (registered ahead of the Stubber)."""

    def __init__(self, client: Any) -> None:
        self.bodies: list[bytes] = []
        client.meta.events.register_first("before-call.*.*", self._capture, unique_id="capture-bodies")

    def _capture(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "Converse":
            self.bodies.append(params["body"])

    def slice(self, index: int, key: str) -> bytes:
        """The exact bytes of one top-level member (`system`, `toolConfig`) in the body sent."""
        text = self.bodies[index].decode()
        start = text.index(f'"{key}": ') + len(key) + 4
        _, end = json.JSONDecoder().raw_decode(text, start)
        return text[start:end].encode()


@pytest.fixture
def bedrock(aws) -> Any:
    return boto3.client("bedrock-runtime", region_name=REGION)


@pytest.fixture
def session_store(dynamodb) -> DynamoSessionStore:
    return DynamoSessionStore(TABLE, lambda tenant: dynamodb)


# ---------------------------------------------------------------- the store in the MemoryTable


class TestDynamoSessionStore(SessionStoreContract):
    @pytest.fixture
    def session_store(self, dynamodb):
        return DynamoSessionStore(TABLE, lambda tenant: dynamodb)


def test_given_session_and_turn_then_items_share_a_tenant_led_partition_with_ttl(session_store, dynamodb):
    session = make_session()
    session_store.create(session)
    session_store.append_turn(make_turn(session, 0), now=session.created_at)

    items = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"acme#SES#{session.id}"}},
    )["Items"]

    assert [item["sk"]["S"] for item in items] == ["SES", "TURN#000000"]
    expires = int(session.expires_at.timestamp())
    assert all(item["expires_at"] == {"N": str(expires)} for item in items)


# ---------------------------------------------------------------- Converse adapter


def test_given_converse_reply_with_tool_use_then_parsed_with_usage(bedrock):
    model = BedrockChatModel(bedrock, MODEL)
    system = [{"text": "base"}, {"text": "snapshot"}, {"cachePoint": {"type": "default"}}]
    messages = [{"role": "user", "content": [{"text": "note that I like tea"}]}]
    response = converse_response(
        [{"text": "Saving that."}, tool_use("memory_file_add", {"kind": "user", "content": "Likes tea"})],
        stop="tool_use",
        read=1900,
    )
    with Stubber(bedrock) as stubber:
        stubber.add_response(
            "converse",
            response,
            {
                "modelId": MODEL,
                "system": system,
                "messages": messages,
                "toolConfig": tool_config(),
                "inferenceConfig": {"maxTokens": 512},
            },
        )

        reply = model.converse(
            system=system, messages=messages, tool_config=tool_config(), inference_config={"maxTokens": 512}
        )

        stubber.assert_no_pending_responses()
    assert reply.stop_reason == "tool_use"
    assert reply.text == "Saving that."
    assert [(u.id, u.name, u.input) for u in reply.tool_uses] == [
        ("tooluse_01", "memory_file_add", {"kind": "user", "content": "Likes tea"})
    ]
    assert reply.usage.cache_read_input_tokens == 1900 and reply.usage.input_tokens == 14


def test_given_throttling_then_retried_with_jittered_backoff(bedrock):
    sleep = RecordingSleep()
    model = BedrockChatModel(bedrock, MODEL, backoff=Backoff(max_attempts=4, sleep=sleep, rand=lambda: 0.5))
    with Stubber(bedrock) as stubber:
        stubber.add_client_error("converse", "ThrottlingException", "Too many requests", 429)
        stubber.add_client_error("converse", "ServiceUnavailableException", "Busy", 503)
        stubber.add_client_error("converse", "ModelNotReadyException", "Warming up", 429)
        stubber.add_response("converse", converse_response([{"text": "hi"}]))

        reply = model.converse(
            system=[{"text": "s"}],
            messages=[{"role": "user", "content": [{"text": "x"}]}],
            tool_config=None,
            inference_config={"maxTokens": 10},
        )

        stubber.assert_no_pending_responses()
    assert reply.text == "hi"
    assert sleep.delays == [0.125, 0.25, 0.5]  # 0.5 × min(8, 0.25 × 2^n)


def test_given_throttling_that_never_ends_then_upstream_unavailable(bedrock):
    model = BedrockChatModel(bedrock, MODEL, backoff=Backoff(max_attempts=3, sleep=RecordingSleep()))
    with Stubber(bedrock) as stubber:
        for _ in range(3):
            stubber.add_client_error("converse", "ThrottlingException", "Too many requests", 429)
        with pytest.raises(UpstreamUnavailable, match="3 times"):
            model.converse(
                system=[{"text": "s"}],
                messages=[{"role": "user", "content": [{"text": "x"}]}],
                tool_config=None,
                inference_config={"maxTokens": 10},
            )
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("code", "status", "hint"),
    [
        ("ValidationException", 400, "refused the conversation"),
        ("ModelErrorException", 424, "model failed"),
        ("AccessDeniedException", 403, "enable model access"),
    ],
)
def test_given_model_error_then_upstream_failed_without_retry(bedrock, code, status, hint):
    sleep = RecordingSleep()
    model = BedrockChatModel(bedrock, MODEL, backoff=Backoff(sleep=sleep))
    with Stubber(bedrock) as stubber:
        stubber.add_client_error("converse", code, "details from Bedrock", status)
        with pytest.raises(UpstreamFailed, match=hint) as raised:
            model.converse(
                system=[{"text": "s"}],
                messages=[{"role": "user", "content": [{"text": "x"}]}],
                tool_config=None,
                inference_config={"maxTokens": 10},
            )
    assert raised.value.code == "upstream_failed" and raised.value.details["aws_error"] == code
    assert sleep.delays == []


# ---------------------------------------------------------------- a session on Bedrock + DynamoDB


def make_aws_stack(tmp_path, clock, bedrock, store, monitor=None):
    model = BedrockChatModel(
        bedrock, MODEL, backoff=Backoff(max_attempts=3, sleep=RecordingSleep(), rand=lambda: 0)
    )
    stack = build_stack(tmp_path, clock, model, store=store, monitor=monitor)
    for note in NOTES:
        stack.files.add(T, NS, "memory", note)
    return stack


@pytest.fixture
def aws_stack(tmp_path, clock, bedrock, session_store):
    return make_aws_stack(tmp_path, clock, bedrock, session_store)


def test_given_three_turns_then_cache_written_once_read_after_and_system_bytes_never_change(
    aws_stack, bedrock, clock
):
    session = aws_stack.sessions.start(T, NS, actor="key:k1", cache_ttl="5m").session
    captured = CapturedBodies(bedrock)
    system = aws_stack.sessions.prompt(session)
    with Stubber(bedrock) as stubber:
        stubber.add_response(
            "converse",
            converse_response([{"text": "Hello."}], write=1850),
            {
                "modelId": MODEL,
                "system": system,
                "messages": [{"role": "user", "content": [{"text": "hi"}]}],
                "toolConfig": tool_config(),
                "inferenceConfig": {"maxTokens": 2048},
            },
        )
        stubber.add_response(
            "converse",
            converse_response(
                [tool_use("memory_file_add", {"kind": "user", "content": "Prefers bullet points"})],
                stop="tool_use",
                read=1850,
            ),
        )
        stubber.add_response("converse", converse_response([{"text": "Noted."}], read=1850))
        stubber.add_response("converse", converse_response([{"text": "Postgres 16."}], read=1850))

        results = []
        for message in ("hi", "I prefer bullet points", "which database?"):
            results.append(aws_stack.chat.turn(T, session.id, message, actor="key:k1", can_write=True))
            clock.advance(minutes=1)

        stubber.assert_no_pending_responses()

    assert results[0].usage.cache_write_input_tokens == 1850 and results[0].usage.cache_read_input_tokens == 0
    assert [r.usage.cache_read_input_tokens for r in results[1:]] == [3700, 1850]
    assert results[1].cost.cache_write_usd == 0 and results[0].cost.cache_write_usd > 0
    # The memory write of turn 2 changed USER.md, not one byte of what turn 3 sent before the cache point.
    assert len(captured.bodies) == 4
    first_system, first_tools = captured.slice(0, "system"), captured.slice(0, "toolConfig")
    for index in range(1, 4):
        assert captured.slice(index, "system") == first_system
        assert captured.slice(index, "toolConfig") == first_tools
    assert b"Prefers bullet points" not in first_system
    assert aws_stack.files.read(T, NS, "user").entries == ["Prefers bullet points"]
    # A Lambda instance that did not serve turns 1-2 loads them from DynamoDB.
    turns = aws_stack.store.list_turns(T, session.id)
    assert [len(t.messages) for t in turns] == [2, 4, 2]
    sent_turn3 = json.loads(captured.bodies[3])["messages"]
    assert sent_turn3 == [m for t in turns[:2] for m in t.messages] + [
        {"role": "user", "content": [{"text": "which database?"}]}
    ]

    fresh = aws_stack.sessions.start(T, NS, actor="key:k1")
    assert "Prefers bullet points" in fresh.session.snapshot
    assert fresh.session.snapshot_sha256 != session.snapshot_sha256


def test_given_model_error_mid_turn_then_no_turn_in_dynamodb(aws_stack, bedrock):
    session = aws_stack.sessions.start(T, NS, actor="key:k1").session
    with Stubber(bedrock) as stubber:
        stubber.add_response(
            "converse",
            converse_response(
                [tool_use("memory_file_add", {"kind": "memory", "content": "Kept anyway"})], stop="tool_use"
            ),
        )
        stubber.add_client_error("converse", "ValidationException", "messages: too many tokens", 400)

        with pytest.raises(UpstreamFailed, match="too many tokens"):
            aws_stack.chat.turn(T, session.id, "hi", actor="key:k1", can_write=True)

    assert aws_stack.store.list_turns(T, session.id) == []
    assert "Kept anyway" in aws_stack.files.read(T, NS, "memory").entries


def test_given_session_in_dynamodb_then_another_tenant_cannot_see_or_end_it(aws_stack):
    session = aws_stack.sessions.start(T, NS, actor="key:k1").session

    with pytest.raises(NotFound):
        aws_stack.sessions.get("globex", session.id)
    with pytest.raises(NotFound):
        aws_stack.chat.turn("globex", session.id, "hi", actor="key:evil", can_write=True)
    assert aws_stack.sessions.get(T, session.id).status.value == "open"


# ---------------------------------------------------------------- token monitor on CountTokens


def test_given_count_tokens_then_snapshot_and_prefix_counted_exactly(bedrock, tmp_path, clock, session_store):
    counter = BedrockTokenCounter(bedrock, "anthropic.claude-haiku-4-5-20251001-v1:0")
    monitor = PrefixMonitor(
        counter,
        model_id=MODEL,
        profile=PromptCacheConfig().profile(MODEL),
        tool_config=tool_config(),
        ceiling_tokens=800,
        exact=True,
    )
    stack = build_stack(tmp_path, clock, None, store=session_store)
    stack.files.add(T, NS, "memory", NOTES[0])
    sessions = SessionService(session_store, stack.files, clock, monitor=monitor)
    with Stubber(bedrock) as stubber:
        stubber.add_response("count_tokens", {"inputTokens": 8})
        stubber.add_response("count_tokens", {"inputTokens": 908})
        # Haiku 4.5 caches prefixes of 4,096 tokens and more: this one is cacheable
        stubber.add_response("count_tokens", {"inputTokens": 4608})

        started = sessions.start(T, NS, actor="key:k1")

        stubber.assert_no_pending_responses()
    report = started.tokens
    assert (report.method, report.snapshot_tokens, report.prefix_tokens) == ("count_tokens", 900, 4600)
    assert report.cacheable and report.above_ceiling


@pytest.mark.iam_contract_exempt(
    reason="another model family (Nova) on purpose: the refusal path, not this deployment's chat model"
)
def test_given_count_tokens_refused_then_estimate_with_a_warning(bedrock, tmp_path, clock, session_store):
    counter = BedrockTokenCounter(bedrock, "amazon.nova-pro-v1:0")
    monitor = PrefixMonitor(
        counter,
        model_id="amazon.nova-pro-v1:0",
        profile=PromptCacheConfig().profile("amazon.nova-pro-v1:0"),
        tool_config=tool_config(),
        ceiling_tokens=5000,
        exact=True,
    )
    stack = build_stack(tmp_path, clock, None, store=session_store)
    sessions = SessionService(session_store, stack.files, clock, monitor=monitor)
    with Stubber(bedrock) as stubber:
        stubber.add_client_error("count_tokens", "ValidationException", "CountTokens is not supported", 400)

        report = sessions.start(T, NS, actor="key:k1").tokens

    assert report.method == "estimate" and "exact token count unavailable" in report.warnings[0]


# ---------------------------------------------------------------- the chat Lambda handler


@pytest.fixture
def handler_stack(tmp_path, clock, bedrock, session_store, monkeypatch):
    monitor = PrefixMonitor(
        CharTokenEstimator(),
        model_id=MODEL,
        profile=PromptCacheConfig().profile(MODEL),
        tool_config=tool_config(),
        ceiling_tokens=10,
        exact=False,
    )
    stack = make_aws_stack(tmp_path, clock, bedrock, session_store, monitor)
    built = Services(memory=stack.memory, files=stack.files, sessions=stack.sessions, chat=stack.chat)
    # A fresh lazy holder: the first request observes these services (the metrics observers), as in Lambda.
    monkeypatch.setattr(chat_handler, "services", Lazy(lambda: chat_handler.observe(built)))
    monkeypatch.setattr(chat_handler, "app", Lazy(chat_handler.build_app))  # a resolver over those services
    return built


def emitted_metrics(output: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for line in output.splitlines():
        if '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = document[metric["Name"]]
                values[metric["Name"]] = value[0] if isinstance(value, list) else value
    return values


def test_given_chat_handler_then_session_and_turn_metrics_are_emitted(handler_stack, bedrock, capsys):
    started = chat_handler.handler(api_event("POST", "/v1/sessions", {"namespace": NS}), FakeLambdaContext())
    assert started["statusCode"] == 201, started["body"]
    session_id = json.loads(started["body"])["session"]["id"]
    start_metrics = emitted_metrics(capsys.readouterr().out)
    assert start_metrics["SnapshotTokensAboveCeiling"] == 1  # ceiling of 10 tokens in this fixture
    assert start_metrics["SnapshotTokens"] > 10

    with Stubber(bedrock) as stubber:
        stubber.add_response(
            "converse", converse_response([{"text": "Hello."}], input_tokens=20, output_tokens=4, read=1800)
        )
        turned = chat_handler.handler(
            api_event("POST", f"/v1/sessions/{session_id}/turns", {"message": "hi"}), FakeLambdaContext()
        )

    assert turned["statusCode"] == 200, turned["body"]
    body = json.loads(turned["body"])
    turn_metrics = emitted_metrics(capsys.readouterr().out)
    assert turn_metrics["CacheHitRatio"] == pytest.approx(round(1800 / 1820 * 100, 2))
    assert turn_metrics["CacheReadInputTokens"] == 1800 and turn_metrics["InputTokens"] == 20
    assert turn_metrics["OutputTokens"] == 4 and turn_metrics["CacheWriteInputTokens"] == 0
    assert turn_metrics["CostUSD"] == pytest.approx(body["cost_usd"])


def test_given_other_tenant_through_the_handler_then_404(handler_stack):
    started = chat_handler.handler(api_event("POST", "/v1/sessions", {"namespace": NS}), FakeLambdaContext())
    session_id = json.loads(started["body"])["session"]["id"]

    response = chat_handler.handler(
        api_event("GET", f"/v1/sessions/{session_id}", tenant="globex"), FakeLambdaContext()
    )

    assert response["statusCode"] == 404
