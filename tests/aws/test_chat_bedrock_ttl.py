"""Cache-point TTLs on Bedrock Converse, offline (issue 33): the requests an `auto` session sends pass
botocore's validation against the pinned bedrock-runtime service model (botocore 1.44.8: `CachePointBlock`
has `ttl`, enum 5m/1h; the enum itself is checked here, botocore does not),
keep Bedrock's rule that TTLs do not increase from system to messages, and the 1-hour writes Bedrock reports
in `cacheDetails` are priced at the 1-hour rate."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ParamValidationError
from botocore.stub import Stubber

from agent_memory.adapters.aws.session_store import DynamoSessionStore
from agent_memory.domain.sessions.cache_ttl import TTL_SECONDS, non_increasing
from tests.aws.support import REGION, TABLE
from tests.aws.test_chat_bedrock import (
    MODEL,
    NS,
    CapturedBodies,
    T,
    converse_response,
    make_aws_stack,
)

LONG_MESSAGE = "Please review this invoice log line by line. " * 400
"""About 4,500 tokens: the history reaches the 4,096-token minimum of Claude Haiku 4.5, so the requests carry
history cache points as well as the system one."""


@pytest.fixture
def bedrock(aws) -> Any:
    return boto3.client("bedrock-runtime", region_name=REGION)


@pytest.fixture
def session_store(dynamodb) -> DynamoSessionStore:
    return DynamoSessionStore(TABLE, lambda tenant: dynamodb)


def _ttls(body: bytes) -> list[str]:
    """The TTLs of a serialised Converse request's cache points, in request order (system, then messages);
    a point without `ttl` has Bedrock's default, 5 minutes."""
    request = json.loads(body)
    blocks = list(request.get("system", []))
    blocks += [block for message in request["messages"] for block in message["content"]]
    return [block["cachePoint"].get("ttl", "5m") for block in blocks if "cachePoint" in block]


def test_pinned_service_model_has_cache_point_ttl_with_5m_and_1h(bedrock):
    shape = bedrock.meta.service_model.shape_for("CachePointBlock")
    assert "ttl" in shape.members
    assert shape.members["ttl"].enum == ["5m", "1h"]
    assert set(TTL_SECONDS) == set(shape.members["ttl"].enum)
    details = bedrock.meta.service_model.shape_for("TokenUsage").members["cacheDetails"]
    assert set(details.member.members) == {"ttl", "inputTokens"}


def test_given_a_member_outside_the_service_model_then_botocore_refuses_it_before_sending(bedrock):
    """The validation the next test relies on is live: a `cachePoint` member the service model does not
    have is refused. (botocore does not check enum values: the next test checks `ttl` against the enum.)"""
    with Stubber(bedrock) as stubber, pytest.raises(ParamValidationError, match="ttlSeconds"):
        stubber.add_response("converse", converse_response([{"text": "never sent"}]))
        bedrock.converse(
            modelId=MODEL,
            system=[{"text": "x"}, {"cachePoint": {"type": "default", "ttlSeconds": 3600}}],
            messages=[{"role": "user", "content": [{"text": "hi"}]}],
        )


def _write(tokens: int, hour: int) -> dict[str, Any]:
    response = converse_response([{"text": "Checked."}], write=tokens)
    response["usage"]["cacheDetails"] = [
        detail
        for detail in ({"ttl": "1h", "inputTokens": hour}, {"ttl": "5m", "inputTokens": tokens - hour})
        if detail["inputTokens"]
    ]
    return response


def test_given_auto_session_with_a_pause_then_requests_validate_and_ttls_never_increase(
    tmp_path, clock, bedrock, session_store
):
    stack = make_aws_stack(tmp_path, clock, bedrock, session_store)
    session = stack.sessions.start(T, NS, actor="key:k1").session
    captured = CapturedBodies(bedrock)
    with Stubber(bedrock) as stubber:
        stubber.add_response("converse", _write(5000, hour=1300))
        stubber.add_response("converse", _write(3800, hour=3800))
        stubber.add_response("converse", converse_response([{"text": "Checked."}], read=5000, write=40))
        results = []
        for gap_minutes, message in ((0, LONG_MESSAGE), (7, "and the totals?"), (1, "thanks")):
            clock.advance(minutes=gap_minutes)
            results.append(stack.chat.turn(T, session.id, message, actor="key:k1", can_write=True))
        stubber.assert_no_pending_responses()

    sent = [_ttls(body) for body in captured.bodies]
    allowed = bedrock.meta.service_model.shape_for("CachePointBlock").members["ttl"].enum
    assert all(ttl in allowed for ttls in sent for ttl in ttls)
    assert sent[0] == ["1h", "5m"]  # snapshot for an hour, history with the model's default
    assert sent[1] == ["1h", "1h", "1h"]  # the 5-minute history expired in the pause: written for an hour
    assert all(non_increasing(ttls) for ttls in sent)
    # the system text blocks are the same bytes on every call; only the cache point's ttl is chosen
    texts = [[b for b in json.loads(body)["system"] if "text" in b] for body in captured.bodies]
    assert texts[1] == texts[0] == texts[2]
    # priced from cacheDetails: 1,300 tokens at 2x and 3,700 at 1.25x of Haiku 4.5's $1 per million
    assert results[0].cost.cache_write_usd == pytest.approx((1300 * 2.0 + 3700 * 1.25) * 1e-6)
    assert results[1].cost.cache_write_usd == pytest.approx(3800 * 2.0 * 1e-6)
    stored = stack.store.get(T, session.id)
    assert stored is not None
    assert (stored.usage.snapshot_1h_turns, stored.usage.history_1h_turns) == (3, results_1h(results))
    assert stored.usage.cost_without_cache_usd == pytest.approx(
        sum(r.cost.usd_without_cache for r in results), abs=1e-6
    )


def results_1h(results: list[Any]) -> int:
    return sum(1 for r in results if r.cache_ttl.history == "1h")
