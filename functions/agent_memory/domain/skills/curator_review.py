"""The curator's optional LLM review: the prompt that asks a review model for merge and improve proposals,
and the reading of its answer into proposals a person may accept (only those that name known skills and carry
a body; the rest is dropped and counted)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from ..errors import DomainError
from .document import validate_name
from .service import Skill


class ReviewModel(Protocol):
    """A text model that answers one prompt (Bedrock Converse in AWS), never the sessions' chat model."""

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2000) -> str: ...


REVIEW_SYSTEM = (
    "You review procedures ('skills') that AI agents wrote for themselves. Find (1) near-duplicates: skills "
    "that describe the same procedure and should be one; (2) unclear skills: vague, contradictory or missing "
    "steps. Answer with JSON only: "
    '{"proposals": [{"kind": "merge", "skills": ["<keep>", "<other>", ...], "reason": "...", '
    '"description": "<one line>", "body": "<merged Markdown body>"}, {"kind": "improve", "skills": ["<name>"], '
    '"reason": "...", "description": "<one line>", "body": "<improved Markdown body>"}]}. '
    'Use only the given names. Return {"proposals": []} when all skills are distinct and clear.'
)


def parse_proposals(answer: str, skills: dict[str, Skill], day: str) -> tuple[list[dict[str, Any]], int]:
    """The model's proposals that name known skills and carry a body; the rest is dropped (and counted)."""
    text = answer.strip()
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if start >= 0 else {}
    except json.JSONDecodeError:
        return [], 1
    raw = data.get("proposals") if isinstance(data, dict) else None
    proposals: list[dict[str, Any]] = []
    dropped = 0
    for item in raw if isinstance(raw, list) else []:
        try:
            kind = str(item["kind"])
            names = [validate_name(n) for n in item["skills"]]
            body, description = str(item["body"]), str(item.get("description") or "")
            if kind not in ("merge", "improve") or not body.strip() or any(n not in skills for n in names):
                raise ValueError("unknown kind, skill or empty body")
            if (kind == "merge") != (len(names) >= 2) or len(set(names)) != len(names):
                raise ValueError("a merge names two or more skills, an improvement one")
        except (KeyError, TypeError, ValueError, DomainError):
            dropped += 1
            continue
        digest = hashlib.sha256(json.dumps([kind, names, body], ensure_ascii=False).encode()).hexdigest()[:10]
        proposals.append(
            {
                "id": f"p-{day}-{digest}",
                "kind": kind,
                "skills": names,
                "reason": " ".join(str(item.get("reason", "")).split())[:500],
                "versions": {n: skills[n].meta.version for n in names},
                "proposed": {"description": description or skills[names[0]].meta.description, "body": body},
            }
        )
    return proposals, dropped
