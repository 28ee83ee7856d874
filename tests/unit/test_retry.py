"""The one retry helper (domain/retry.py): full-jitter bounds, attempts, the deadline and the one final error,
with a fake clock whose sleep advances time (no test waits)."""

from __future__ import annotations

import pytest

from agent_memory.domain import retry as retry_module
from agent_memory.domain.errors import ConcurrentModification, Conflict, UpstreamUnavailable
from agent_memory.domain.retry import Exhausted, Retry, RetryPolicy, full_jitter


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.pauses: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.pauses.append(seconds)
        self.now += seconds


def _retry(policy: RetryPolicy, clock: FakeClock, rand: float = 0.999999) -> Retry:
    return Retry(policy, sleep=clock.sleep, clock=clock.clock, rand=lambda: rand)


def test_full_jitter_draws_between_zero_and_the_capped_exponential() -> None:
    # the extremes of rand() give the extremes of the pause, never more than min(cap, base * 2^n)
    for attempt in range(12):
        ceiling = min(2.0, 0.05 * 2**attempt)
        assert full_jitter(attempt, 0.05, 2.0, lambda: 0.0) == 0.0
        high = full_jitter(attempt, 0.05, 2.0, lambda: 0.999999)
        assert ceiling * 0.99 < high < ceiling
    assert full_jitter(3, 0.05, 2.0, lambda: 0.5) == pytest.approx(0.2)


def test_pauses_follow_full_jitter_and_none_after_the_last_attempt() -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_attempts=5, base_delay=0.1, max_delay=0.5, deadline=60.0)
    calls = []

    def fail() -> None:
        calls.append(clock.now)
        raise ConcurrentModification("lost the race")

    with pytest.raises(ConcurrentModification, match="lost the race"):
        _retry(policy, clock, rand=0.5).call(fail, retry_on=(ConcurrentModification,))
    assert len(calls) == 5
    assert clock.pauses == pytest.approx([0.05, 0.1, 0.2, 0.25])  # 0.5 x min(0.5, 0.1 x 2^n)


def test_the_deadline_ends_retries_before_the_attempts_do() -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_attempts=100, base_delay=1.0, max_delay=4.0, deadline=10.0)
    calls = 0

    def throttled() -> None:
        nonlocal calls
        calls += 1
        clock.now += 0.5  # each call takes half a second
        raise ConcurrentModification("busy")

    spent: list[Exhausted] = []

    def give_up(exhausted: Exhausted) -> Exception:
        spent.append(exhausted)
        return UpstreamUnavailable("out of time")

    with pytest.raises(UpstreamUnavailable):
        _retry(policy, clock).call(throttled, retry_on=(ConcurrentModification,), give_up=give_up)
    elapsed = clock.now - 100.0
    assert elapsed <= policy.deadline  # no pause that would end past the deadline is taken
    assert 3 <= calls < 100
    assert spent[0].attempts == calls and spent[0].elapsed == pytest.approx(elapsed)


def test_give_up_builds_the_one_final_error_chained_to_the_last() -> None:
    clock = FakeClock()
    seen: list[Exhausted] = []

    def give_up(spent: Exhausted) -> Exception:
        seen.append(spent)
        return UpstreamUnavailable(f"still throttled after {spent.attempts} attempts")

    policy = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.1, deadline=5.0)
    last = ConcurrentModification("third")
    errors = iter([ConcurrentModification("first"), ConcurrentModification("second"), last])

    def fail() -> None:
        raise next(errors)

    with pytest.raises(UpstreamUnavailable, match="after 3 attempts") as raised:
        _retry(policy, clock).call(fail, retry_on=(ConcurrentModification,), give_up=give_up)
    assert raised.value.__cause__ is last
    assert seen[0].attempts == 3 and seen[0].last_error is last


def test_an_error_it_does_not_retry_propagates_at_once() -> None:
    clock = FakeClock()
    calls = 0

    def refuse() -> None:
        nonlocal calls
        calls += 1
        raise Conflict("wrong state")

    policy = RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.1, deadline=5.0)
    with pytest.raises(Conflict):
        _retry(policy, clock).call(refuse, retry_on=lambda e: isinstance(e, ConcurrentModification))
    assert calls == 1 and clock.pauses == []


def test_success_after_failures_returns_the_result() -> None:
    clock = FakeClock()
    outcomes = iter([ConcurrentModification("x"), ConcurrentModification("y"), "done"])

    def flaky() -> str:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    policy = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.1, deadline=5.0)
    assert _retry(policy, clock).call(flaky, retry_on=(ConcurrentModification,)) == "done"
    assert len(clock.pauses) == 2


def test_attempts_marks_exhaustion_for_loops_that_check_a_result() -> None:
    clock = FakeClock()
    retry = _retry(RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.1, deadline=5.0), clock)
    run = retry.attempts()
    assert list(run) == [0, 1, 2, 3]
    assert run.exhausted is not None and run.exhausted.attempts == 4
    other = retry.attempts()  # each run is its own: one Retry serves concurrent threads
    for attempt in other:
        if attempt == 1:
            break
    assert other.exhausted is None  # the caller broke out: it succeeded
    assert run.exhausted.attempts == 4


@pytest.mark.parametrize(
    "bad",
    [
        {"max_attempts": 0, "base_delay": 0.1, "max_delay": 1.0, "deadline": 1.0},
        {"max_attempts": 1, "base_delay": 2.0, "max_delay": 1.0, "deadline": 1.0},
        {"max_attempts": 1, "base_delay": 0.1, "max_delay": 1.0, "deadline": 0.0},
    ],
)
def test_a_policy_that_cannot_work_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


def test_on_conflict_re_raises_the_last_concurrent_modification(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(retry_module.time, "sleep", clock.sleep)
    calls = 0

    def lose() -> None:
        nonlocal calls
        calls += 1
        raise ConcurrentModification(f"lost {calls}")

    with pytest.raises(ConcurrentModification, match="lost 4"):
        retry_module.on_conflict(lose, attempts=4)
    assert calls == 4 and len(clock.pauses) == 3
    assert all(0 <= p <= retry_module.CONCURRENT_WRITE.max_delay for p in clock.pauses)


def test_a_remember_that_keeps_losing_its_race_ends_in_409_after_its_attempts(
    tmp_path, clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.adapters.local.embedders import HashingEmbedder
    from agent_memory.adapters.local.search_index import LocalSearchIndex
    from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
    from agent_memory.domain.memory import writer
    from agent_memory.domain.memory.service import MemoryService, RememberInput

    class Racing(SqliteRecordStore):
        commits = 0

        def commit(self, writes, changes):  # type: ignore[no-untyped-def]
            Racing.commits += 1
            raise ConcurrentModification("another request wrote first")

    fake = FakeClock()
    monkeypatch.setattr(retry_module.time, "sleep", fake.sleep)
    service = MemoryService(
        store=Racing(tmp_path / "memory.db"),
        index=LocalSearchIndex(tmp_path / "index"),
        embedder=HashingEmbedder(),
        clock=clock,
    )
    with pytest.raises(ConcurrentModification, match="wrote first"):
        service.remember("acme", RememberInput(content="Billing runs Postgres 16", namespace="/p"), actor="t")
    assert Racing.commits == writer.MAX_RETRIES
    assert len(fake.pauses) == writer.MAX_RETRIES - 1  # a short full-jitter pause before each new read
    assert all(0 <= p <= retry_module.CONCURRENT_WRITE.max_delay for p in fake.pauses)


def test_the_api_answers_a_503_with_retry_after(tmp_path, clock) -> None:
    import json

    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

    from agent_memory.api.app import create_app
    from agent_memory.api.auth import authorizer_context_authenticator
    from agent_memory.api.context import Services
    from tests.contract.chat_fakes import FakeChatModel, FakeLambdaContext, api_event, build_stack

    stack = build_stack(tmp_path, clock, FakeChatModel(clock=clock))
    app = create_app(
        APIGatewayRestResolver(enable_validation=True),
        lambda: Services(memory=stack.memory, files=stack.files),
        authorizer_context_authenticator,
    )

    @app.get("/v1/throttled")
    def throttled() -> None:
        raise UpstreamUnavailable("DynamoDB left 2 item(s) unprocessed", retry_after_seconds=2)

    result = app.resolve(api_event("GET", "/v1/throttled"), FakeLambdaContext())
    headers = {
        k.lower(): v for k, v in (result.get("multiValueHeaders") or result.get("headers") or {}).items()
    }
    assert result["statusCode"] == 503
    assert headers["retry-after"] in ("2", ["2"])
    assert json.loads(result["body"])["error"] == "upstream_unavailable"


class _ShiftingStore:
    """A record store whose records change status on every read (other writers keep winning), or settle after
    `settles_after` reads."""

    def __init__(self, settles_after: int | None = None) -> None:
        self.reads = 0
        self.settles_after = settles_after

    def get_many(self, tenant: str, ids: list[str]) -> list[object]:
        from datetime import UTC, datetime

        from agent_memory.domain.records import MemoryRecord, MemoryType, Status

        self.reads += 1
        now = datetime(2026, 12, 1, tzinfo=UTC)
        settled = self.settles_after is not None and self.reads > self.settles_after
        status = Status.ARCHIVED if settled or self.reads % 2 else Status.ACTIVE
        return [
            MemoryRecord(
                id=record_id,
                tenant=tenant,
                namespace="/p",
                type=MemoryType.EPISODE,
                content="x",
                status=status,
                created_at=now,
                updated_at=now,
                last_access_at=now,
                valid_from=now,
                recorded_at=now,
            )
            for record_id in ids
        ]


class _RecordingIndex:
    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str]] = []

    def set_status(self, tenant: str, ids: list[str], status: object) -> None:
        self.calls.append((list(ids), str(status)))


def test_settling_the_index_ends_in_one_409_when_other_writers_keep_changing_the_records() -> None:
    from agent_memory.domain.memory.transitions import settle_index
    from agent_memory.domain.records import Status

    clock = FakeClock()
    store, index = _ShiftingStore(), _RecordingIndex()
    rounds = _retry(retry_module.CONCURRENT_WRITE, clock, rand=0.5)
    with pytest.raises(ConcurrentModification, match="the change is committed") as raised:
        settle_index(store, index, "acme", {"m1": Status.ACTIVE}, rounds=rounds)  # type: ignore[arg-type]
    assert raised.value.details == {"record_ids": ["m1"], "rounds": 3}
    assert len(index.calls) == 3 and store.reads == 4  # three rounds applied, then the check that failed
    assert len(clock.pauses) == 2  # a full-jitter pause between rounds, none after the last


def test_settling_the_index_returns_once_the_store_holds_still() -> None:
    from agent_memory.domain.memory.transitions import settle_index
    from agent_memory.domain.records import Status

    clock = FakeClock()
    store, index = _ShiftingStore(settles_after=1), _RecordingIndex()
    rounds = _retry(retry_module.CONCURRENT_WRITE, clock)
    settle_index(store, index, "acme", {"m1": Status.ACTIVE}, rounds=rounds)  # type: ignore[arg-type]
    assert index.calls == [(["m1"], "archived")] and store.reads == 2  # applied once, then found in line
