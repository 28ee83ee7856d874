"""ChatService with a scripted model behind the ChatModel port, on real local adapters: the cache-stable
prefix, memory tools (files, records, caps, read-only keys), the bounded tool loop, history trimming, and no
partial turn on failure."""

from __future__ import annotations

import itertools
import json

import pytest

from agent_memory.domain.errors import NotConfigured, TooLarge, UpstreamUnavailable, ValidationFailed
from agent_memory.domain.memory.policy import FileCaps
from agent_memory.domain.memory.service import RecallInput
from agent_memory.domain.records import SourceKind
from agent_memory.domain.sessions.chat import (
    HistoryPlan,
    assemble_messages,
    build_prefix_monitor,
    plan_history,
    tool_config,
    with_cache_points,
)
from agent_memory.domain.sessions.config import ChatConfig, ContextBudget, PromptCacheConfig
from agent_memory.domain.sessions.ports import SessionClosed, Usage
from agent_memory.domain.sessions.prompt_cache import CharTokenEstimator
from bench.prompt_cache_simulator import PromptCacheSimulator
from tests.contract.chat_fakes import FakeChatModel, build_stack, text_reply, tool_reply

T = "acme"
NS = "/projects/billing"
SONNET = "anthropic.claude-sonnet-4-5-20250929-v1:0"
NOTES = [
    "Billing runs on Postgres 16 in eu-west-1; migrations live in db/migrations and run with `make migrate`.",
    "Invoices are generated on the first day of each month by the invoice-cron job at 02:00 UTC.",
    "The payments provider sends webhooks to /hooks/payments; retries back off for up to 3 days.",
    "Deploy the billing service with `make release` from main; staging deploys on every merge.",
    "Currency amounts are stored as integer minor units; never use floats for money in this codebase.",
    "The data team reads the ledger through the read replica only; never point reports at the primary.",
    "Feature flags live in config/flags.yaml and are read at start-up; a change needs a restart.",
    "On-call rotates weekly on Mondays; the runbook for failed invoice runs is docs/runbooks/invoices.md.",
]


def roles_alternate(messages) -> bool:
    roles = [m["role"] for m in messages]
    return roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))


def tool_uses_answered(messages) -> bool:
    """Every toolUse of an assistant message has a toolResult in the next message (Bedrock's rule)."""
    for position, message in enumerate(messages):
        ids = {b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b}
        if ids:
            following = messages[position + 1]["content"] if position + 1 < len(messages) else []
            if ids != {b["toolResult"]["toolUseId"] for b in following if "toolResult" in b}:
                return False
    return True


@pytest.fixture
def model(clock):
    return FakeChatModel(clock=clock)


@pytest.fixture
def stack(tmp_path, clock, model):
    return build_stack(tmp_path, clock, model)


def start(stack, **kwargs):
    return stack.sessions.start(T, NS, actor="key:k1", **kwargs).session


# ---------------------------------------------------------------- the cache-stable prefix


def cached_session_with_notes(tmp_path, clock, cache_ttl="5m"):
    """A chat stack whose model applies the provider's cache rules, MEMORY.md holding NOTES, one session
    (with a fixed 5-minute TTL unless `cache_ttl` says otherwise)."""
    model = FakeChatModel(clock=clock, simulate_cache=PromptCacheSimulator(1024))
    stack = build_stack(tmp_path, clock, model)
    for note in NOTES:
        stack.files.add(T, NS, "memory", note)
    return model, stack, start(stack, cache_ttl=cache_ttl)


def test_given_three_turns_with_a_memory_write_at_turn_two_then_the_prefix_is_written_once_and_read_after(
    tmp_path, clock
):
    model, stack, session = cached_session_with_notes(tmp_path, clock)
    model.script = [
        text_reply("Hello! I see the billing notes."),
        tool_reply("memory_file_add", {"kind": "user", "content": "Prefers answers in bullet points"}),
        text_reply("Noted."),
        text_reply("Postgres 16."),
    ]

    usages = []
    for message in ("hi", "I like bullet points", "which database?"):
        usages.append(stack.chat.turn(T, session.id, message, actor="key:k1", can_write=True).usage)
        clock.advance(minutes=1)

    assert usages[0].cache_write_input_tokens > 0 and usages[0].cache_read_input_tokens == 0
    # Later calls read everything the previous call cached (the frozen prefix and the history up to its
    # cache point) and write only the messages added since; nothing goes uncached. Turn 2 made two calls
    # (the tool round and the answer): the second read what the first had written.
    assert all(usage.input_tokens == 0 for usage in usages)
    assert usages[1].cache_read_input_tokens > 2 * usages[0].cache_write_input_tokens
    assert usages[2].cache_read_input_tokens > usages[0].cache_write_input_tokens
    assert all(u.cache_write_input_tokens < usages[0].cache_write_input_tokens / 4 for u in usages[1:])
    # every call of the session (4, the tool round included) handed the model the very same prefix bytes
    assert len({call.prefix_bytes() for call in model.calls}) == 1
    assert "Prefers answers in bullet points" in stack.files.read(T, NS, "user").text
    assert "bullet points" not in model.calls[-1].system[1]["text"]
    fresh = stack.sessions.start(T, NS, actor="key:k1")
    assert "Prefers answers in bullet points" in fresh.session.snapshot


def test_given_tool_definitions_then_fixed_order_and_a_fresh_copy_each_time():
    first, second = tool_config(), tool_config()
    names = [tool["toolSpec"]["name"] for tool in first["tools"]]

    assert (
        names
        == sorted(names)
        == ["memory_file_add", "memory_file_remove", "memory_file_replace", "recall", "remember"]
    )
    first["tools"].pop()
    assert json.dumps(second) == json.dumps(tool_config())


def test_given_chat_config_then_monitor_checks_the_model_minimum_and_the_memory_budget_ceiling():
    default = build_prefix_monitor(ChatConfig(), PromptCacheConfig(), CharTokenEstimator(), exact=False)
    haiku = build_prefix_monitor(
        ChatConfig(model_id="us.anthropic.claude-haiku-4-5-20251001-v1:0", snapshot_ceiling_tokens=3000),
        PromptCacheConfig(),
        CharTokenEstimator(),
        exact=False,
    )

    assert default.ceiling_tokens == int(200_000 * 0.25)
    assert default.profile.min_cacheable_tokens == 1024
    assert (haiku.ceiling_tokens, haiku.profile.min_cacheable_tokens) == (3000, 4096)
    # the deployment's tools count towards the cached prefix
    system = [{"text": "base"}, {"text": "memory"}, {"cachePoint": {"type": "default"}}]
    report = default.assess(system, "memory")
    assert (
        report.prefix_tokens
        > CharTokenEstimator().count([{"role": "user", "content": [{"text": "."}]}], system=system)
        - CharTokenEstimator().count([{"role": "user", "content": [{"text": "."}]}])
        + 500
    )
    assert (
        ChatConfig(model_id="us.anthropic.claude-x-v1:0").foundation_model_id() == "anthropic.claude-x-v1:0"
    )
    assert ChatConfig(model_id=SONNET).foundation_model_id() == SONNET


def test_given_turn_then_request_shape_and_cost_from_the_price_table(stack, model):
    session = start(stack, cache_ttl="5m")
    model.script = [
        text_reply("Hi", Usage(input_tokens=120, output_tokens=30, cache_write_input_tokens=1500))
    ]

    result = stack.chat.turn(T, session.id, "hello", actor="key:k1", can_write=True)

    call = model.calls[0]
    assert call.system == stack.sessions.prompt(session)
    assert call.messages == [{"role": "user", "content": [{"text": "hello"}]}]
    assert call.tool_config == tool_config()
    assert call.inference_config == {"maxTokens": 2048}
    assert result.reply == "Hi" and result.index == 0 and result.model_calls == 1
    # Published on-demand prices of Claude Sonnet 4.5 in USD per million tokens (Anthropic and Amazon Bedrock
    # price pages): input 3.00, output 15.00, 5-minute cache write 3.75, cache read 0.30. This turn read
    # nothing from the cache and wrote 1,500 tokens to it with the session's fixed 5-minute TTL.
    input_usd, output_usd, cache_write_5m_usd = 120 * 3.00e-6, 30 * 15.00e-6, 1500 * 3.75e-6
    assert result.cost.input_usd == pytest.approx(input_usd)
    assert result.cost.output_usd == pytest.approx(output_usd)
    assert result.cost.cache_write_usd == pytest.approx(cache_write_5m_usd)
    assert result.cost.cache_read_usd == 0
    assert result.cost.usd == pytest.approx(input_usd + output_usd + cache_write_5m_usd)  # $0.006435
    # Without caching the 1,500 tokens would have been ordinary input
    assert result.cost.usd_without_cache == pytest.approx((120 + 1500) * 3.00e-6 + output_usd)
    stored = stack.sessions.history(T, session.id)
    assert stored[0].usage == result.usage.as_bedrock()
    assert stored[0].messages[-1] == {"role": "assistant", "content": [{"text": "Hi"}]}


def test_given_history_then_next_turn_sends_it_after_the_cache_point(stack, model):
    session = start(stack)
    model.script = [text_reply("first answer"), text_reply("second answer")]

    stack.chat.turn(T, session.id, "first", actor="key:k1", can_write=True)
    stack.chat.turn(T, session.id, "second", actor="key:k1", can_write=True)

    assert model.calls[1].messages == [
        {"role": "user", "content": [{"text": "first"}]},
        {"role": "assistant", "content": [{"text": "first answer"}]},
        {"role": "user", "content": [{"text": "second"}]},
    ]
    assert model.calls[1].system == model.calls[0].system


# ---------------------------------------------------------------- memory tools


def test_given_model_tool_calls_then_files_and_records_change_and_results_go_back(stack, model):
    session = start(stack)
    model.script = [
        tool_reply(
            "memory_file_add", {"kind": "memory", "content": "Use the read replica for reports"}, "t1"
        ),
        tool_reply(
            "remember", {"content": "The invoice job runs at 02:00 UTC", "type": "project_state"}, "t2"
        ),
        tool_reply("recall", {"query": "invoice job", "k": 3}, "t3"),
        tool_reply(
            "memory_file_replace",
            {"kind": "memory", "match": "read replica", "content": "Reports use the replica"},
            "t4",
        ),
        text_reply("Done."),
    ]

    result = stack.chat.turn(T, session.id, "remember these", actor="key:k1", can_write=True)

    assert [(c.name, c.status) for c in result.tool_calls] == [
        ("memory_file_add", "success"),
        ("remember", "success"),
        ("recall", "success"),
        ("memory_file_replace", "success"),
    ]
    assert stack.files.read(T, NS, "memory").entries == ["Reports use the replica"]
    records = stack.memory.recall(T, RecallInput(query="invoice job 02:00", namespaces=(NS,))).results
    record = records[0].record
    assert record.content == "The invoice job runs at 02:00 UTC"
    assert record.source.kind is SourceKind.TOOL and record.source.ref == f"session:{session.id}#turn:1"
    recall_result = json.loads(model.calls[3].messages[-1]["content"][0]["toolResult"]["content"][0]["text"])
    assert recall_result["results"][0]["id"] == record.id
    stored = stack.sessions.history(T, session.id)[0]
    assert len(stored.messages) == 1 + 4 * 2 + 1
    assert roles_alternate(stored.messages) and tool_uses_answered(stored.messages)


def test_given_write_over_the_cap_then_model_gets_the_refusal_and_the_file_is_unchanged(
    tmp_path, clock, model
):
    stack = build_stack(tmp_path, clock, model, caps=FileCaps(memory_md=200, user_md=150))
    stack.files.add(T, NS, "memory", "x" * 150)
    session = start(stack)
    before = stack.files.read(T, NS, "memory").text
    model.script = [
        tool_reply("memory_file_add", {"kind": "memory", "content": "y" * 100}),
        text_reply("MEMORY.md is full; I will consolidate first."),
    ]

    result = stack.chat.turn(T, session.id, "note this", actor="key:k1", can_write=True)

    tool_result = model.calls[1].messages[-1]["content"][0]["toolResult"]
    payload = json.loads(tool_result["content"][0]["text"])
    assert tool_result["status"] == "error"
    assert payload["error"] == "cap_exceeded"
    assert payload["limit"] == 200 and payload["used"] == len(before)
    assert "replace or remove existing entries" in payload["message"]
    assert stack.files.read(T, NS, "memory").text == before
    assert result.tool_calls[0].status == "error"
    assert len(stack.sessions.history(T, session.id)) == 1  # a refusal is information, not a failed turn


def test_given_read_only_key_then_write_tools_refused_and_recall_allowed(stack, model):
    session = start(stack)
    model.script = [
        tool_reply("memory_file_add", {"kind": "user", "content": "Likes tea"}, "t1"),
        tool_reply("recall", {"query": "tea"}, "t2"),
        text_reply("ok"),
    ]

    result = stack.chat.turn(T, session.id, "hi", actor="key:ro", can_write=False)

    assert [(c.name, c.status) for c in result.tool_calls] == [
        ("memory_file_add", "error"),
        ("recall", "success"),
    ]
    assert "read-only" in result.tool_calls[0].summary
    assert stack.files.read(T, NS, "user").entries == []


def test_given_unknown_tool_or_bad_input_then_error_results_not_a_failed_turn(stack, model):
    session = start(stack)
    model.script = [
        tool_reply("delete_everything", {}, "t1"),
        tool_reply("memory_file_remove", {"kind": "memory"}, "t2"),
        tool_reply("recall", {"query": "x", "k": 500}, "t3"),
        text_reply("sorry"),
    ]

    result = stack.chat.turn(T, session.id, "hi", actor="key:k1", can_write=True)

    assert [c.status for c in result.tool_calls] == ["error", "error", "error"]
    assert "unknown tool" in result.tool_calls[0].summary
    assert "`match`" in result.tool_calls[1].summary


# ---------------------------------------------------------------- bounded loop, failures


def test_given_model_that_always_wants_tools_then_loop_stops_and_history_stays_valid(tmp_path, clock, model):
    stack = build_stack(tmp_path, clock, model, chat_config=ChatConfig(max_tool_rounds=2))
    session = start(stack)
    model.script = [tool_reply("recall", {"query": f"q{i}"}, f"t{i}", text="looking") for i in range(3)]
    model.script.append(text_reply("next turn answer"))

    result = stack.chat.turn(T, session.id, "loop", actor="key:k1", can_write=True)

    assert result.model_calls == 3 and result.tool_limit_reached
    assert len(result.tool_calls) == 2
    stored = stack.sessions.history(T, session.id)[0].messages
    assert stored[-1] == {"role": "assistant", "content": [{"text": "looking"}]}
    assert roles_alternate(stored) and tool_uses_answered(stored)
    stack.chat.turn(T, session.id, "again", actor="key:k1", can_write=True)
    assert roles_alternate(model.calls[-1].messages) and tool_uses_answered(model.calls[-1].messages)


def test_given_model_failure_mid_turn_then_no_turn_is_persisted(stack, model):
    session = start(stack)
    model.script = [text_reply("first answer")]
    stack.chat.turn(T, session.id, "first", actor="key:k1", can_write=True)
    model.script = [
        tool_reply("memory_file_add", {"kind": "memory", "content": "Written before the failure"}),
        UpstreamUnavailable("Converse failed 6 times (ThrottlingException)"),
    ]

    with pytest.raises(UpstreamUnavailable):
        stack.chat.turn(T, session.id, "second", actor="key:k1", can_write=True)

    history = stack.sessions.history(T, session.id)
    assert [turn.index for turn in history] == [0]
    # the memory write itself happened (like any API write); only the conversation turn is not kept
    assert stack.files.read(T, NS, "memory").entries == ["Written before the failure"]


def test_given_no_model_configured_then_not_configured_error_that_says_how_to_configure(tmp_path, clock):
    stack = build_stack(tmp_path, clock, model=None)
    session = start(stack)
    with pytest.raises(NotConfigured, match="AGENT_MEMORY_CHAT_PROVIDER"):
        stack.chat.turn(T, session.id, "hi", actor="key:k1", can_write=True)
    assert not stack.chat.configured


def test_given_closed_session_or_bad_message_then_refused_before_any_model_call(stack, model, clock):
    session = start(stack)
    with pytest.raises(ValidationFailed):
        stack.chat.turn(T, session.id, "   ", actor="key:k1", can_write=True)
    with pytest.raises(TooLarge):
        stack.chat.turn(T, session.id, "x" * 20_001, actor="key:k1", can_write=True)
    stack.sessions.end(T, session.id)
    with pytest.raises(SessionClosed):
        stack.chat.turn(T, session.id, "hi", actor="key:k1", can_write=True)
    assert model.calls == []


def test_given_session_ended_while_the_model_answered_then_turn_not_saved(stack, model):
    session = start(stack)

    def end_meanwhile(call):
        stack.sessions.end(T, session.id)
        return text_reply("late answer")

    model.script = [end_meanwhile]
    with pytest.raises(SessionClosed):
        stack.chat.turn(T, session.id, "hi", actor="key:k1", can_write=True)
    assert stack.sessions.history(T, session.id) == []


# ---------------------------------------------------------------- history within the budget


def test_plan_history_keeps_first_and_most_recent_turns_within_budget():
    assert plan_history([10, 10, 10], budget=100, note_tokens=5) == HistoryPlan((0, 1, 2), ())
    assert plan_history([30, 30, 30, 30, 30], budget=100, note_tokens=5) == HistoryPlan((0, 3, 4), (1, 2))
    # the first exchange is dropped too when it alone does not fit beside the note
    assert plan_history([200, 30, 30], budget=100, note_tokens=5) == HistoryPlan((1, 2), (0,))


def test_assemble_messages_puts_the_note_after_the_cache_point_at_the_elided_gap():
    turns = [
        [
            {"role": "user", "content": [{"text": f"u{i}"}]},
            {"role": "assistant", "content": [{"text": f"a{i}"}]},
        ]
        for i in range(4)
    ]
    current = {"role": "user", "content": [{"text": "now"}]}

    messages = assemble_messages(turns, HistoryPlan((0, 3), (1, 2)), "[2 earlier turns omitted]", current)

    assert [m["content"][-1]["text"] for m in messages] == ["u0", "a0", "u3", "a3", "now"]
    assert messages[2]["content"][0] == {"text": "[2 earlier turns omitted]"}
    assert turns[3][0]["content"] == [{"text": "u3"}]  # stored history is not altered


def test_given_long_conversation_then_middle_turns_elided_and_system_untouched(tmp_path, clock, model):
    # 2,000-token window: history share 35 % = 700 tokens; each turn below is about 260 tokens.
    config = ChatConfig(context_window=2000, budget=ContextBudget())
    stack = build_stack(tmp_path, clock, model, chat_config=config)
    session = start(stack)
    model.script = [text_reply("b" * 400) for _ in range(6)]

    results = [
        stack.chat.turn(T, session.id, f"message {i} " + "a" * 600, actor="key:k1", can_write=True)
        for i in range(6)
    ]

    last = model.calls[-1]
    texts = [
        block.get("text", "") for m in last.messages for block in m["content"] if "cachePoint" not in block
    ]
    assert texts[0].startswith("message 0")
    assert any(t.startswith("[") and "omitted to fit the context budget" in t for t in texts)
    assert texts[-1].startswith("message 5")
    assert results[-1].elided_turns > 0 and results[0].elided_turns == 0
    assert len({json.dumps(call.system) for call in model.calls}) == 1
    assert last.inference_config == {"maxTokens": 400}  # 20 % of the window caps the response
    assert roles_alternate(last.messages)


def test_given_summaries_enabled_then_model_summarises_the_elided_turns(tmp_path, clock, model):
    config = ChatConfig(context_window=2000, summarize_history=True, summary_max_tokens=40)
    stack = build_stack(tmp_path, clock, model, chat_config=config)
    session = start(stack)

    def answer(call):
        if call.tool_config is None:  # the summary request: no tools, its own system prompt
            assert "Summarise" in call.system[0]["text"]
            return text_reply("User discussed invoices.", Usage(50, 8))
        return text_reply("b" * 400)

    model.script = [answer] * 12
    results = [
        stack.chat.turn(T, session.id, f"message {i} " + "a" * 600, actor="key:k1", can_write=True)
        for i in range(5)
    ]

    summarized = [r for r in results if r.summarized]
    assert summarized, "trimming should have happened"
    last_turn_call = [c for c in model.calls if c.tool_config is not None][-1]
    notes = [
        b["text"]
        for m in last_turn_call.messages
        for b in m["content"]
        if b.get("text", "").startswith("[Summary")
    ]
    assert notes and notes[0].endswith("User discussed invoices.")
    assert summarized[-1].usage.input_tokens >= 50  # the summary call is part of the turn's usage


# ---------------------------------------------------------------- cache points on the history


def _without_cache_points(messages):
    return [{**m, "content": [b for b in m["content"] if "cachePoint" not in b]} for m in messages]


def _cache_point_ends(messages):
    """For each cache point in `messages`: how many messages it closes."""
    return [i + 1 for i, m in enumerate(messages) for b in m["content"] if "cachePoint" in b]


def test_given_turns_with_tool_rounds_then_history_cache_points_close_previous_and_current_request(
    tmp_path, clock
):
    model, stack, session = cached_session_with_notes(tmp_path, clock)
    model.script = [
        text_reply("Hello."),
        tool_reply("recall", {"query": "database"}),
        tool_reply("recall", {"query": "deploy"}, tool_use_id="tool-2"),
        text_reply("Postgres 16."),
        text_reply("Bye."),
    ]
    results = []
    for message in ("hi", "which database?", "thanks"):
        results.append(stack.chat.turn(T, session.id, message, actor="key:k1", can_write=True))
        clock.advance(minutes=1)

    system = stack.sessions.prompt(session)
    for position, call in enumerate(model.calls):
        # the snapshot's bytes and its cache point never change; at most 4 cache points per request
        assert call.system == system
        system_points = sum(1 for block in call.system if "cachePoint" in block)
        assert system_points + len(_cache_point_ends(call.messages)) <= 4
        assert _cache_point_ends(call.messages)[-1] == len(call.messages)
        assert tool_uses_answered(_without_cache_points(call.messages))
        if position:
            # the previous request's messages are a byte-identical prefix, closed by a cache point here
            previous = _without_cache_points(model.calls[position - 1].messages)
            current = _without_cache_points(call.messages)
            assert json.dumps(current[: len(previous)]) == json.dumps(previous)
            assert len(previous) in _cache_point_ends(call.messages)
    # the stored history never carries cache points
    stored = [m for turn in stack.sessions.history(T, session.id) for m in turn.messages]
    assert stored == _without_cache_points(stored)
    # after the first write every call read the whole previous request and nothing went uncached
    assert all(r.usage.input_tokens == 0 for r in results)
    assert not any(r.cache_break for r in results)
    totals = stack.sessions.get(T, session.id).usage
    assert totals.turns == 3 and totals == results[-1].session_usage
    assert totals.cache_read_input_tokens == sum(r.usage.cache_read_input_tokens for r in results)


def test_given_gap_longer_than_the_ttl_then_turn_flagged_as_cache_break(tmp_path, clock):
    model, stack, session = cached_session_with_notes(tmp_path, clock)
    model.script = [text_reply("one"), text_reply("two"), text_reply("three")]

    first = stack.chat.turn(T, session.id, "hi", actor="key:k1", can_write=True)
    clock.advance(minutes=6)  # past the 5-minute TTL
    broken = stack.chat.turn(T, session.id, "still there?", actor="key:k1", can_write=True)
    clock.advance(minutes=1)
    warm = stack.chat.turn(T, session.id, "good", actor="key:k1", can_write=True)

    assert not first.cache_break
    assert broken.cache_break and broken.cache_read_shortfall_tokens == first.usage.cache_write_input_tokens
    assert not warm.cache_break
    assert stack.sessions.get(T, session.id).usage.cache_breaks == 1


def test_given_small_prefix_or_disabled_then_no_history_cache_points(tmp_path, clock, model):
    stack = build_stack(tmp_path, clock, model, chat_config=ChatConfig(history_cache_points=False))
    for note in NOTES:
        stack.files.add(T, NS, "memory", note)
    session = start(stack)
    model.script = [text_reply("Hi")]
    stack.chat.turn(T, session.id, "hello", actor="key:k1", can_write=True)
    assert model.calls[0].messages == [{"role": "user", "content": [{"text": "hello"}]}]


def test_with_cache_points_keeps_within_four_and_prefers_the_latest():
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [{"text": str(i)}]} for i in range(7)
    ]
    system = [{"text": "base"}, {"text": "memory"}, {"cachePoint": {"type": "default"}}]

    marked = with_cache_points(messages, [1, 3, 5, 7], "1h", system=system)

    assert _cache_point_ends(marked) == [3, 5, 7]
    assert marked[6]["content"][-1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert messages[6]["content"] == [{"text": "6"}]  # the input is not changed
    assert _cache_point_ends(with_cache_points(messages, [0, 2, 99], "5m")) == [2]
    assert with_cache_points(messages, [2], "5m")[1]["content"][-1] == {"cachePoint": {"type": "default"}}


def test_plan_history_with_steps_elides_in_blocks_so_the_kept_prefix_survives_turns():
    plans = [plan_history([30] * count, budget=200, note_tokens=10, step_tokens=60) for count in range(1, 16)]
    elided = [len(plan.elided) for plan in plans]
    assert elided == sorted(elided)  # the elided span only grows
    changes = sum(1 for a, b in itertools.pairwise(elided) if a != b)
    assert elided[-1] > 0 and changes == 5  # in steps of two turns (60 tokens), not one per turn
    assert elided[6:] == [2, 2, 4, 4, 6, 6, 8, 8, 10]
    for plan, count in zip(plans, range(1, 16), strict=True):
        assert 30 * len(plan.keep) + (10 if plan.elided else 0) <= 200
        if plan.elided:
            assert plan.keep[0] == 0 and plan.keep[1:] == tuple(range(plan.elided[-1] + 1, count))
    # without steps the old behaviour: one turn more per turn once over the budget
    assert plan_history([30] * 8, budget=200, note_tokens=10) == HistoryPlan((0, 3, 4, 5, 6, 7), (1, 2))
