"""`adapters/aws/_dynamo.py`: items through boto3's TypeSerializer keep the stored format the stores wrote by hand
(existing data must read back), and a batch call that stays throttled ends in one 503 naming what it left."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from agent_memory.adapters.aws._dynamo import (
    attr,
    dynamo_item,
    expr_values,
    pending_keys,
    plain,
    until_processed,
    write_all,
)
from agent_memory.domain.errors import UpstreamUnavailable
from agent_memory.domain.retry import DYNAMODB_BATCH, Retry, RetryPolicy


def test_items_are_byte_identical_to_the_hand_written_format() -> None:
    # The shapes the stores wrote by hand before: S, N (decimal text), B, BOOL, L of S (never SS), empty S.
    written = dynamo_item(
        pk="acme#REC#r1",
        sk="REC",
        version=7,
        expires_at=1_767_225_600,
        access_count=0,
        vector=b"\x00\x01\xff",
        disabled=False,
        namespaces=["/a", "/b/*"],
        doc="",
    )
    assert written == {
        "pk": {"S": "acme#REC#r1"},
        "sk": {"S": "REC"},
        "version": {"N": "7"},
        "expires_at": {"N": "1767225600"},
        "access_count": {"N": "0"},
        "vector": {"B": b"\x00\x01\xff"},
        "disabled": {"BOOL": False},
        "namespaces": {"L": [{"S": "/a"}, {"S": "/b/*"}]},
        "doc": {"S": ""},
    }
    assert expr_values(pk="acme#MIG", v=3, true=True) == {
        ":pk": {"S": "acme#MIG"},
        ":v": {"N": "3"},
        ":true": {"BOOL": True},
    }
    assert attr("x") == {"S": "x"}


def test_a_float_is_refused_rather_than_rounded() -> None:
    with pytest.raises(TypeError):
        dynamo_item(score=0.1)


def test_stored_items_read_back_as_plain_values() -> None:
    stored = {
        "pk": {"S": "acme#REC#r1"},
        "version": {"N": "7"},
        "vector": {"B": b"\x00\x01"},
        "scopes": {"L": [{"S": "read"}]},
        "disabled": {"BOOL": True},
    }
    assert plain(stored) == {
        "pk": "acme#REC#r1",
        "version": Decimal(7),
        "vector": b"\x00\x01",
        "scopes": ["read"],
        "disabled": True,
    }


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def _put(pk: str, sk: str) -> dict[str, Any]:
    return {"PutRequest": {"Item": dynamo_item(pk=pk, sk=sk, doc="{}")}}


def test_unprocessed_items_are_resent_until_written() -> None:
    clock = FakeClock()
    sent: list[int] = []
    first, second = _put("acme#A", "1"), _put("acme#B", "2")

    def send(request: dict[str, Any]) -> dict[str, Any]:
        sent.append(len(request["T"]))
        return {"UnprocessedItems": {"T": request["T"][1:]}} if len(request["T"]) > 1 else {}

    retry = Retry(DYNAMODB_BATCH, sleep=clock.sleep, clock=lambda: clock.now, rand=lambda: 0.5)
    write_all(send, {"T": [first, second]}, advice="retry", retry=retry)
    assert sent == [2, 1]
    assert clock.pauses == [0.025]  # full jitter: 0.5 x min(2.0, 0.05 x 2^0)


def test_items_left_after_the_deadline_raise_503_naming_them() -> None:
    clock = FakeClock()
    calls = 0

    def throttled(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        clock.now += 1.0  # each call takes a second
        return {"UnprocessedItems": request}

    policy = RetryPolicy(max_attempts=50, base_delay=0.05, max_delay=2.0, deadline=4.0)
    retry = Retry(policy, sleep=clock.sleep, clock=lambda: clock.now, rand=lambda: 0.999)
    with pytest.raises(UpstreamUnavailable) as raised:
        write_all(throttled, {"T": [_put("acme#A", "1"), _put("acme#B", "2")]}, advice="do X", retry=retry)
    error = raised.value
    assert calls < 50 and clock.now <= 4.0 + 1.0  # stopped by the deadline, not the attempts
    assert "acme#A/1" in error.message and "acme#B/2" in error.message and "do X" in error.message
    assert error.details["unprocessed"] == [["acme#A", "1"], ["acme#B", "2"]]
    assert error.details["retry_after_seconds"] == 2


def test_unprocessed_keys_of_a_batch_get_are_named_too() -> None:
    pending = {"T": {"Keys": [dynamo_item(pk="acme#REC#r9", sk="REC")], "ConsistentRead": True}}
    assert pending_keys(pending) == [("acme#REC#r9", "REC")]
    retry = Retry(
        RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.01, deadline=1.0),
        sleep=lambda s: None,
        rand=lambda: 0.0,
    )
    with pytest.raises(UpstreamUnavailable, match="acme#REC#r9/REC"):
        list(
            until_processed(
                lambda request: {"UnprocessedKeys": request},
                pending,
                operation="BatchGetItem",
                advice="retry",
                retry=retry,
            )
        )
