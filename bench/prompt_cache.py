"""What the memory block costs over a 20-turn session, with memory writes at turns 4, 9 and 15, under three
ways of putting memory into the prompt — priced by the prompt-cache model (domain/sessions/prompt_cache.py,
its rules applied by prompt_cache_simulator.py).

    (A) live system prompt: every write is applied to the system prompt at once (the prefix changes, the
        cache is rewritten from the memory block on)
    (B) memory in the user message: the current memory is prepended to each user message (after the cache
        point; never cached; earlier copies are not kept in the history)
    (C) frozen snapshot: the session's snapshot (SessionService), unchanged whatever is written

Memory, writes and snapshot are real: MEMORY.md/USER.md on a temporary directory through MemoryFilesService,
the snapshot rendered by SessionService, the tool definitions of ChatService. Tokens are estimated
(prompt_cache.estimate_text_tokens); one model request per turn, `--gap-seconds` apart. The figure printed is
the memory block's cost as a percentage of sending it uncached on every turn. The floor for (C) is
(1.25 + 19 × 0.1) / 20 = 15.75 %: one write, then reads.

A second run of (C) goes through ChatService itself, with a model double whose usage comes from the same
cache model and which makes the memory writes as tool calls (so those turns take two model calls).

    .venv/bin/python bench/prompt_cache.py [--turns 20] [--writes 4,9,15] [--gap-seconds 60] [--model ID]
        [--cache-ttl 5m|1h]

Exit status 1 when (C) misses the target of 16 % with the default 5-minute TTL.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from prompt_cache_simulator import CacheBlock, PromptCacheSimulator  # bench/, the script's directory

from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.session_store import SqliteSessionStore
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain import safety
from agent_memory.domain.files.memory_files import MemoryFilesService
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import MemoryService
from agent_memory.domain.sessions.chat import ChatService, tool_config
from agent_memory.domain.sessions.config import ChatConfig, ModelProfile, PromptCacheConfig
from agent_memory.domain.sessions.ports import ModelReply
from agent_memory.domain.sessions.prompt_cache import estimate_text_tokens
from agent_memory.domain.sessions.sessions import SessionService, system_blocks

TENANT = "bench"
NAMESPACE = "/projects/billing"
TARGET = 16.0

MEMORY_NOTES = [
    "Billing runs on Postgres 16 in eu-west-1; migrations live in db/migrations and run with `make migrate`.",
    "Invoices are generated on the first day of each month by the invoice-cron job at 02:00 UTC.",
    "The payments provider sends webhooks to /hooks/payments; retries back off for up to three days.",
    "Deploy the billing service with `make release` from main; staging deploys on every merge to main.",
    "Currency amounts are stored as integer minor units; never use floats for money in this codebase.",
    "Reports read the ledger through the read replica only; never point reports at the primary.",
    "Feature flags live in config/flags.yaml and are read at start-up; a flag change needs a restart.",
    "On-call rotates weekly on Mondays; the runbook for failed invoice runs is docs/runbooks/invoices.md.",
    "Tax rates come from the tax-service API and are cached for 24 hours in Redis under tax:<country>.",
    "Refunds above 500 EUR need a second approver; the approval flow lives in app/refunds/approval.py.",
    "The nightly reconciliation job compares ledger totals with the bank statement import at 04:30 UTC.",
    "Load tests run with k6 from tests/load; the SLO is p99 under 300 ms for POST /invoices.",
]
USER_NOTES = [
    "Prefers concise answers with code first, explanation after.",
    "Works in UTC+8; mornings are best for reviews.",
    "Reviews every migration personally before it runs in production.",
    "Writes Python 3.12 with type hints and pytest; dislikes mocks where a fake will do.",
    "Wants cost figures in EUR with two decimals.",
]
WRITES = [
    ("memory", "The ledger export moved to S3 bucket billing-ledger-exports, partitioned by day."),
    ("user", "Asked to be called Sam."),
    ("memory", "Dunning emails go out on days 3, 7 and 14 after a failed payment."),
]


def user_text(turn: int) -> str:
    return f"Turn {turn}: can you look at the invoice run for account {1000 + turn} and tell me what failed?"


def assistant_text(turn: int) -> str:
    return f"For account {1000 + turn} the run stopped at the tax lookup; the cached rate had expired. " * 2


# --------------------------------------------------------------------------- the memory under test


def build_services(root: Path, clock: BenchClock) -> tuple[MemoryFilesService, SessionService, MemoryService]:
    policy = MemoryPolicy()
    files = MemoryFilesService(PosixFileStore(root / "files"), policy.caps, safety.first_rule, clock)
    for note in MEMORY_NOTES:
        files.add(TENANT, NAMESPACE, "memory", note)
    for note in USER_NOTES:
        files.add(TENANT, NAMESPACE, "user", note)
    sessions = SessionService(SqliteSessionStore(root / "sessions.db"), files, clock)
    memory = MemoryService(
        store=SqliteRecordStore(root / "memory.db"),
        index=LocalSearchIndex(root / "index"),
        embedder=HashingEmbedder(),
        clock=clock,
        policy=policy,
    )
    return files, sessions, memory


@dataclass
class BenchClock:
    now_at: datetime = field(default_factory=lambda: datetime(2026, 11, 30, 9, 0, tzinfo=UTC))

    def now(self) -> datetime:
        return self.now_at


def text_block(text: str, cache_point: str | None = None) -> CacheBlock:
    return CacheBlock(text.encode(), estimate_text_tokens(text), cache_point)  # type: ignore[arg-type]


def tools_block() -> CacheBlock:
    data = json.dumps(tool_config(), ensure_ascii=False)
    return CacheBlock(data.encode(), estimate_text_tokens(data))


def message_block(message: Mapping[str, Any]) -> CacheBlock:
    data = json.dumps(message, ensure_ascii=False)
    return CacheBlock(data.encode(), estimate_text_tokens(data))


# --------------------------------------------------------------------------- strategies, one request per turn


@dataclass
class Tally:
    name: str
    memory_units: float = 0.0
    """Memory-block cost in "tokens at the base input price"."""
    memory_uncached_units: float = 0.0
    prompt_units: float = 0.0
    prompt_uncached_units: float = 0.0
    writes: int = 0
    reads: int = 0
    calls: int = 0

    @property
    def memory_share(self) -> float:
        return 100 * self.memory_units / self.memory_uncached_units

    @property
    def prompt_share(self) -> float:
        return 100 * self.prompt_units / self.prompt_uncached_units


def replay(
    strategy: str,
    turns: int,
    write_turns: set[int],
    gap: timedelta,
    profile: ModelProfile,
    root: Path,
    ttl: str,
) -> Tally:
    clock = BenchClock()
    files, sessions, _ = build_services(root / strategy, clock)
    frozen = sessions.start(TENANT, NAMESPACE, actor="bench", cache_ttl=ttl).session  # type: ignore[arg-type]
    cache = PromptCacheSimulator(profile.min_cacheable_tokens)
    tally = Tally(strategy)
    history: list[dict[str, Any]] = []
    pending = list(WRITES)
    base = frozen.base_system
    for turn in range(1, turns + 1):
        live_memory = sessions.render_snapshot(TENANT, NAMESPACE)
        user = {"role": "user", "content": [{"text": user_text(turn)}]}
        prefix = [tools_block(), text_block(base)]
        if strategy == "A":
            memory_block = text_block(live_memory, ttl)
            blocks = [*prefix, memory_block, *map(message_block, history), message_block(user)]
            start = sum(b.tokens for b in prefix)
        elif strategy == "B":
            prefix[-1] = text_block(base, ttl)
            injected = {"role": "user", "content": [{"text": live_memory}, {"text": user_text(turn)}]}
            history_blocks = [*map(message_block, history)]
            blocks = [*prefix, *history_blocks, message_block(injected)]
            memory_block = text_block(live_memory)
            # the memory text sits at the start of the last message
            start = sum(b.tokens for b in blocks[:-1])
        else:
            system = sessions.prompt(sessions.get(TENANT, frozen.id))
            assert system == system_blocks(frozen), "the frozen snapshot changed"
            memory_block = text_block(system[1]["text"], system[2]["cachePoint"].get("ttl", "5m"))
            blocks = [*prefix, memory_block, *map(message_block, history), message_block(user)]
            start = sum(b.tokens for b in prefix)

        outcome = cache.send(blocks, clock.now())
        end = start + memory_block.tokens
        tally.memory_units += outcome.span_cost_units(start, end, profile)
        tally.memory_uncached_units += memory_block.tokens
        tally.prompt_units += outcome.span_cost_units(0, outcome.total_tokens, profile)
        tally.prompt_uncached_units += outcome.total_tokens
        read, written, _ = outcome.split(start, end)
        tally.reads += int(read > 0)
        tally.writes += int(written > 0)
        tally.calls += 1

        # the model answered; a memory write made during this turn reaches disk now
        history += [user, {"role": "assistant", "content": [{"text": assistant_text(turn)}]}]
        if turn in write_turns and pending:
            kind, content = pending.pop(0)
            files.add(TENANT, NAMESPACE, kind, content)
        clock.now_at += gap
    return tally


# --------------------------------------------------------------------------- (C) through ChatService


class SimulatedBedrock:
    """A `ChatModel` whose usage comes from the prompt-cache model; it writes memory with a tool call on the
    write turns, like an agent would."""

    def __init__(
        self, profile: ModelProfile, clock: BenchClock, write_turns: set[int], model_id: str
    ) -> None:
        self.model_id = model_id
        self._profile = profile
        self._cache = PromptCacheSimulator(profile.min_cacheable_tokens)
        self._clock = clock
        self._write_turns = write_turns
        self._pending = list(WRITES)
        self.tally = Tally("C via ChatService")

    def converse(
        self,
        *,
        system: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        tool_config: Mapping[str, Any] | None,
        inference_config: Mapping[str, Any],
    ) -> ModelReply:
        tools_text = json.dumps(tool_config, ensure_ascii=False)
        tools = CacheBlock(tools_text.encode(), estimate_text_tokens(tools_text))
        point = system[2]["cachePoint"].get("ttl", "5m")
        blocks = [tools, text_block(system[0]["text"]), text_block(system[1]["text"], point)]
        blocks += [message_block(message) for message in messages]
        outcome = self._cache.send(blocks, self._clock.now())
        start = blocks[0].tokens + blocks[1].tokens
        end = start + blocks[2].tokens
        self.tally.memory_units += outcome.span_cost_units(start, end, self._profile)
        self.tally.memory_uncached_units += blocks[2].tokens
        self.tally.prompt_units += outcome.span_cost_units(0, outcome.total_tokens, self._profile)
        self.tally.prompt_uncached_units += outcome.total_tokens
        read, written, _ = outcome.split(start, end)
        self.tally.reads += int(read > 0)
        self.tally.writes += int(written > 0)
        self.tally.calls += 1
        usage = outcome.usage(output_tokens=60)

        turn = sum(1 for m in messages if m["role"] == "user" and "text" in m["content"][-1])
        last = messages[-1]["content"][-1]
        if turn in self._write_turns and "toolResult" not in last and self._pending:
            kind, content = self._pending.pop(0)
            use = {
                "toolUseId": f"w{turn}",
                "name": "memory_file_add",
                "input": {"kind": kind, "content": content},
            }
            return ModelReply([{"toolUse": use}], "tool_use", usage)
        return ModelReply([{"text": assistant_text(turn)}], "end_turn", usage)


def replay_chat_service(
    turns: int,
    write_turns: set[int],
    gap: timedelta,
    profile: ModelProfile,
    model_id: str,
    root: Path,
    ttl: str,
) -> tuple[Tally, float, float]:
    clock = BenchClock()
    files, sessions, memory = build_services(root / "chat", clock)
    model = SimulatedBedrock(profile, clock, write_turns, model_id)
    chat = ChatService(
        sessions, files, memory, model, clock, ChatConfig(model_id=model_id), PromptCacheConfig()
    )
    session = sessions.start(TENANT, NAMESPACE, actor="bench", cache_ttl=ttl).session  # type: ignore[arg-type]
    spent = without = 0.0
    for turn in range(1, turns + 1):
        result = chat.turn(TENANT, session.id, user_text(turn), actor="bench", can_write=True)
        spent += result.cost.usd
        without += result.cost.usd_without_cache
        clock.now_at += gap
    snapshot = sessions.get(TENANT, session.id).snapshot
    assert all(content not in snapshot for _, content in WRITES), "a write leaked into the running snapshot"
    assert all(
        content in sessions.render_snapshot(TENANT, NAMESPACE) for _, content in WRITES[: len(write_turns)]
    ), "the next session must see the writes"
    return model.tally, spent, without


# --------------------------------------------------------------------------- report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--writes", default="4,9,15", help="turns during which memory is written")
    parser.add_argument("--gap-seconds", type=float, default=60.0, help="time between turns")
    parser.add_argument("--model", default="anthropic.claude-sonnet-4-5-20250929-v1:0")
    parser.add_argument("--cache-ttl", choices=("5m", "1h"), default="5m")
    args = parser.parse_args()
    write_turns = {int(t) for t in args.writes.split(",") if t.strip()}
    gap = timedelta(seconds=args.gap_seconds)
    profile = PromptCacheConfig().profile(args.model)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tallies = [
            replay(name, args.turns, write_turns, gap, profile, root, args.cache_ttl)
            for name in ("A", "B", "C")
        ]
        chat_tally, spent, without = replay_chat_service(
            args.turns, write_turns, gap, profile, args.model, root, args.cache_ttl
        )
        clock = BenchClock()
        _, sessions, _ = build_services(root / "sizes", clock)
        snapshot = sessions.render_snapshot(TENANT, NAMESPACE)

    write = profile.write_multiplier(args.cache_ttl)  # type: ignore[arg-type]
    floor = 100 * (write + (args.turns - 1) * profile.cache_read_multiplier) / args.turns
    print(f"model {args.model}: minimum cacheable prefix {profile.min_cacheable_tokens:,} tokens")
    print(
        f"{args.turns} turns, {args.gap_seconds:g} s apart, cache TTL {args.cache_ttl}, memory writes during "
        f"turns {', '.join(map(str, sorted(write_turns)))}; memory block about {estimate_text_tokens(snapshot):,} "
        f"tokens ({len(snapshot):,} characters), tools about {tools_block().tokens:,} tokens"
    )
    print()
    labels = {
        "A": "(A) writes applied to the system prompt",
        "B": "(B) memory in the user message",
        "C": "(C) frozen snapshot",
    }
    print(f"{'strategy':44} {'calls':>5} {'writes':>6} {'reads':>5} {'memory cost':>12} {'whole prompt':>13}")
    for tally in [*tallies, chat_tally]:
        label = labels.get(
            tally.name, f"(C) through ChatService (+{chat_tally.calls - args.turns} tool rounds)"
        )
        print(
            f"{label:44} {tally.calls:>5} {tally.writes:>6} {tally.reads:>5} "
            f"{tally.memory_share:>11.2f}% {tally.prompt_share:>12.2f}%"
        )
    print()
    print("memory cost and whole prompt: % of the same input sent without caching (output excluded)")
    print(f"ChatService cost estimate for the session: ${spent:.4f} (without caching ${without:.4f})")
    frozen = tallies[2].memory_share
    if args.cache_ttl != "5m":
        print(f"(C) frozen snapshot: {frozen:.2f}% (floor with {args.cache_ttl} writes {floor:.2f}%)")
        return 0
    verdict = "PASS" if frozen <= TARGET else "FAIL"
    print(f"(C) frozen snapshot: {frozen:.2f}% (target ≤ {TARGET:.0f}%, floor {floor:.2f}%) {verdict}")
    return 0 if frozen <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
