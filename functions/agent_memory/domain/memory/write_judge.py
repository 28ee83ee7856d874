"""Optional LLM write judge (Mem0-style, issue 15): a text model decides, for a new memory and its nearest
existing ones, ADD / UPDATE <id> / DELETE <id> / NONE, with a reason.

The service applies the verdict (UPDATE: the new memory supersedes the target; DELETE: the target is archived,
never deleted, and the new memory is added; NONE: folded into the target, as a merge, only when nothing is lost:
see `plan`) and writes the verdict,
its reason and the model's token usage into the change log. Any model error or timeout, and any answer that
is not exactly the JSON contract below (unknown action, an id that was not offered, missing target), falls
back to the rule-based discipline: the judge can only ever choose among the records it was shown.

Off by default; `MemoryPolicy.write_judge_tenants` names the tenants that use it ("*" for all), and the
service gets a `JudgeModel`: `wiring/parts.py` builds the Bedrock Converse one (`adapters/aws/bedrock_text.py`) from
AGENT_MEMORY_WRITE_JUDGE_MODEL_ID in either runtime, or takes an explicit port (`build_local(judge=...)`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ..errors import Misconfigured
from ..records import MemoryRecord
from .decide import Plan
from .merge_guard import same_statement
from .relation import relate

logger = logging.getLogger(__name__)

Action = Literal["ADD", "UPDATE", "DELETE", "NONE"]
_ACTIONS: frozenset[str] = frozenset({"ADD", "UPDATE", "DELETE", "NONE"})
MAX_CANDIDATES = 5
MAX_REASON_CHARS = 300


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class JudgeModel(Protocol):
    """A text model that reports its token usage (Bedrock Converse's `usage`)."""

    def complete_with_usage(self, *, system: str, prompt: str, max_tokens: int = 2000) -> Completion: ...


@dataclass(frozen=True)
class Verdict:
    action: Action
    target: MemoryRecord | None
    reason: str
    input_tokens: int
    output_tokens: int

    @property
    def note(self) -> str:
        """The change-log reason: verdict, model reason and token usage."""
        target = f" {self.target.id}" if self.target else ""
        return (
            f"write judge: {self.action}{target}: {self.reason} "
            f"({self.input_tokens} input + {self.output_tokens} output tokens)"
        )


@dataclass(frozen=True)
class Fallback:
    """The judge gave no usable verdict: the rule-based discipline decides; `why` goes into the reason."""

    why: str
    input_tokens: int = 0
    output_tokens: int = 0


SYSTEM = (
    "You maintain an agent's long-term memory. Given a NEW memory and EXISTING memories (each with an id), "
    "decide one action: ADD (new information; keep everything), UPDATE (the new memory replaces one "
    "existing memory: it changes or refines the same fact), DELETE (the new memory shows one existing "
    "memory is no longer true; it is archived and the new one kept), NONE (the new memory says nothing that "
    "an existing one does not already say). Statements of different speakers never replace each other. "
    'Answer with JSON only: {"action": "ADD|UPDATE|DELETE|NONE", "id": "<existing id or null>", '
    '"reason": "<one short sentence>"}. UPDATE, DELETE and NONE need the id of one existing memory.'
)


def prompt(new: str, candidates: Sequence[MemoryRecord]) -> str:
    lines = [f"NEW: {json.dumps(new, ensure_ascii=False)}", "EXISTING:"]
    lines += [
        f"- id={record.id} type={record.type.value} recorded={record.recorded_at.date().isoformat()}: "
        f"{json.dumps(record.content, ensure_ascii=False)}"
        for record in candidates[:MAX_CANDIDATES]
    ]
    return "\n".join(lines)


def parse(text: str, candidates: Sequence[MemoryRecord]) -> tuple[Action, MemoryRecord | None, str] | str:
    """(action, target, reason), or why the answer is unusable. Tolerates a code fence around the JSON."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("{") :] if "{" in body else body
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return "no JSON object in the answer"
    try:
        answer = json.loads(body[start : end + 1])
    except ValueError:
        return "the answer is not valid JSON"
    if not isinstance(answer, dict):
        return "the answer is not a JSON object"
    action = str(answer.get("action", "")).strip().upper()
    if action not in _ACTIONS:
        return f"unknown action {action[:20]!r}"
    reason = " ".join(str(answer.get("reason") or "").split())[:MAX_REASON_CHARS] or "no reason given"
    target_id = answer.get("id")
    if action == "ADD":
        return "ADD", None, reason
    by_id = {record.id: record for record in candidates[:MAX_CANDIDATES]}
    if not isinstance(target_id, str) or target_id not in by_id:
        return f"{action} names no memory that was offered ({str(target_id)[:40]!r})"
    return action, by_id[target_id], reason  # type: ignore[return-value]


def judge(
    model: JudgeModel, new: str, candidates: Sequence[MemoryRecord], max_tokens: int
) -> Verdict | Fallback:
    """Ask the model; never raises (a failing judge must not fail a write)."""
    try:
        completion = model.complete_with_usage(
            system=SYSTEM, prompt=prompt(new, candidates), max_tokens=max_tokens
        )
    except Exception as error:
        logger.warning("write judge unavailable, rule-based discipline used: %s", type(error).__name__)
        return Fallback(f"model error ({type(error).__name__})")
    parsed = parse(completion.text, candidates)
    if isinstance(parsed, str):
        logger.warning("write judge answer unusable, rule-based discipline used: %s", parsed)
        return Fallback(parsed, completion.input_tokens, completion.output_tokens)
    action, target, reason = parsed
    return Verdict(action, target, reason, completion.input_tokens, completion.output_tokens)


def plan(verdict: Verdict, rules: Plan, content: str) -> Plan:
    """The verdict as a plan for the service's own write paths, under the rule every write obeys: nothing a
    user gave is destroyed. UPDATE supersedes the target (kept, linked); DELETE archives it (never deletes)
    beside the new record; ADD adds; NONE merges the new memory into the target only when the two hold the
    same values, names, words and polarity (`merge_guard.same_statement`) — a NONE that would fold a different value
    away is refused and the rules' plan is kept, with the judge's answer in its reason."""
    target, note = verdict.target, verdict.note
    if verdict.action == "UPDATE" and target is not None:
        return Plan("supersede", note, [target])
    if verdict.action == "DELETE" and target is not None:
        return Plan("archive", note, [target])
    if verdict.action == "NONE" and target is not None:
        check = same_statement(content, target.content)
        if check.allowed and relate(content, target.content).kind in ("same", "compatible"):
            return Plan("merge", note, [target])
        refused = f"{note}; merge refused ({check.reason}), so both are kept: {rules.reason}"
        return Plan("add" if rules.action == "merge" else rules.action, refused, rules.targets)
    return Plan("add", note)


def required(tenants: tuple[str, ...], model: JudgeModel | None) -> JudgeModel | None:
    """The judge model, refusing a policy that names judged tenants when the runtime has none (a setting that
    would silently do nothing)."""
    if tenants and model is None:
        raise Misconfigured(
            "the policy names write_judge_tenants but this runtime has no write-judge model: set "
            "AGENT_MEMORY_WRITE_JUDGE_MODEL_ID to a Bedrock model or inference profile (the CDK stack sets it "
            "from the `write_judge` config; there is no offline text model, so locally it calls Bedrock with "
            "the machine's AWS credentials), or remove write_judge_tenants"
        )
    return model
