"""What the MCP tools take and give back: described, bounded parameter types; strict argument models (an unknown
argument is refused, naming the ones the tool takes); and compact results, so a model pays for the memory it
reads and not for tenant ids, hashes, embedding models or ranking internals (`verbose=true` gives the API's
whole answer)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._operations import FileKind, MemoryType, Reranker, SkillOutcome, Status, Tier

NAMESPACE_PATTERN = r"^(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,63}){1,8}$"
"""The API's namespace pattern (1-8 segments of letters, digits, '.', '_', '-')."""
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
SKILL_NAME_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
HIT_MAX_BYTES = 300
"""A compact recall hit, as compact JSON in UTF-8, is at most this many bytes (content is cut to fit)."""
_CUT = "…"

_NS_HELP = (
    "Namespace path, e.g. /projects/billing or /users/u-42 (1-8 segments of letters, digits, '.', '_', '-'). "
    "Omit it to use the server's default namespace (whoami lists what this key may use)."
)
NamespacePath = Annotated[str, Field(pattern=NAMESPACE_PATTERN, min_length=2, max_length=520)]
OptionalNamespace = Annotated[NamespacePath | None, Field(description=_NS_HELP)]
MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^\S+$",
        description="A memory's `id` as recall, remember or conflicts_list returned it (e.g. mem_3f2a…)",
    ),
]
Reason = Annotated[
    str, Field(max_length=500, description="Why, in a few words; kept in the memory's change log (optional)")
]
Verbose = Annotated[
    bool,
    Field(
        description="false (default): compact answer (ids, content, status, times). true: the API's full records "
        "(type, tier, scores, source, links, metadata); costs several times the tokens"
    ),
]
Kind = Annotated[
    FileKind,
    Field(
        description="Which always-in-prompt file: 'memory' = MEMORY.md (agent notes), 'user' = USER.md (profile)"
    ),
]
EntryMatch = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2000,
        description="A piece of text found in exactly one entry of the file (e.g. a few distinctive words); "
        "an ambiguous match is refused",
    ),
]
Content = Annotated[str, Field(min_length=1, max_length=4000)]
TypeArg = Annotated[
    MemoryType | None,
    Field(
        description="What kind of fact: user_preference (how the user likes things), project_state (how things "
        "are now), domain_knowledge, task_action (how to do something), episode (what happened), temporary "
        "(true for a short while), correction. Omit to let the service classify it"
    ),
]
TierArg = Annotated[
    Tier | None,
    Field(
        description="'long_term': durable now; 'short_term': a candidate the nightly consolidation may promote. "
        "Omit for the service's default"
    ),
]
Context = Annotated[
    str | None,
    Field(
        max_length=2000,
        description="Optional surrounding text (e.g. the conversation turn) indexed for keyword search only; "
        "never stored as the memory's content",
    ),
]
K = Annotated[int, Field(ge=1, le=50, description="How many memories to return, 1-50 (default 8)")]
Query = Annotated[
    str, Field(min_length=1, max_length=2000, description="What to look for, in plain language")
]
Namespaces = Annotated[
    list[NamespacePath] | None,
    Field(
        min_length=1,
        max_length=20,
        description="Namespaces to search (1-20 paths like /projects/billing); omit for the default namespace",
    ),
]
Types = Annotated[
    list[MemoryType] | None,
    Field(min_length=1, max_length=10, description="Only memories of these types; omit for every type"),
]
Rerank = Annotated[
    Reranker | None,
    Field(
        description="'bedrock': reorder the best candidates with Amazon Bedrock's reranker (only where the "
        "deployment enables it, else refused; a billed call, ~0.1-0.5 s more). Omit it (default) for the usual "
        "ranking"
    ),
]
Date = Annotated[
    str, Field(pattern=DATE_PATTERN, description="The day, as YYYY-MM-DD (UTC), e.g. 2026-03-31")
]
LogLine = Annotated[str, Field(min_length=1, max_length=4000, description="The line to append")]
Group = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The conflict's `group` as conflicts_list returned it (e.g. cfg_1a2b3c4d5e6f7a8b)",
    ),
]
Keep = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=200)]],
    Field(
        min_length=1,
        max_length=20,
        description="The ids of the group's memories that are true (1-20); the others are superseded by them",
    ),
]
SkillName = Annotated[
    str,
    Field(
        pattern=SKILL_NAME_PATTERN,
        max_length=64,
        description="The skill's name: lowercase letters, digits and '-', e.g. deploy-billing",
    ),
]
Outcome = Annotated[
    SkillOutcome,
    Field(
        description="'helped': the skill worked; 'failed': following it did not work; 'misled': it was wrong "
        "or harmful (the curator reviews skills that fail or mislead)"
    ),
]
Note = Annotated[str, Field(max_length=2000, description="What happened, in a sentence (optional)")]
IncludeChildren = Annotated[
    bool,
    Field(
        description="true (default): also the namespaces below `namespace` (/users covers /users/u-42, never "
        "/usersx) that this key may read; false: that namespace alone"
    ),
]
PageLimit = Annotated[int, Field(ge=1, le=100, description="Memories per page, 1-100 (default 20)")]
Cursor = Annotated[
    str | None,
    Field(
        max_length=2000, description="The `next_cursor` of the previous page, to read on; omit for the first"
    ),
]
StatusArg = Annotated[
    Status | None,
    Field(
        description="Only memories in this status: active (recalled), pending (in a conflict), archived, "
        "superseded, quarantined. Omit for every status"
    ),
]


class StrictArguments(BaseModel):
    """Base of every tool's argument model: an argument the tool does not take is refused by name."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    @model_validator(mode="before")
    @classmethod
    def _known_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = {field.alias or name for name, field in cls.model_fields.items()}
            unknown = sorted(str(key) for key in data if key not in known)
            if unknown:
                raise ValueError(
                    f"unknown argument(s) {', '.join(unknown)}; this tool takes: {', '.join(sorted(known)) or 'none'}"
                )
        return data


# --------------------------------------------------------------------------- compact results


def _time(value: Any) -> str | None:
    """An API date-time to the second, in UTC (2026-03-31T09:15:02Z)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _size(item: dict[str, Any]) -> int:
    return len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def fit(item: dict[str, Any], limit: int = HIT_MAX_BYTES) -> dict[str, Any]:
    """`item` with its `content` cut (ending '…') so that it is at most `limit` bytes as compact JSON: the
    longest prefix that fits, found by bisection on characters (a character may take 1-4 bytes)."""
    if _size(item) <= limit:
        return item
    content = str(item.get("content", ""))
    low, high = 0, len(content)  # content[:low] + '…' fits (or low is 0); content[:high + 1] does not
    while low < high:
        middle = (low + high + 1) // 2
        if _size({**item, "content": content[:middle] + _CUT}) <= limit:
            low = middle
        else:
            high = middle - 1
    return {**item, "content": content[:low].rstrip() + _CUT}


def memory(record: dict[str, Any]) -> dict[str, Any]:
    """A memory record as a model needs it: id, content, status (when not active), time."""
    out: dict[str, Any] = {"id": record.get("id"), "content": record.get("content")}
    if record.get("status") not in (None, "active"):
        out["status"] = record.get("status")
    out["time"] = _time(record.get("valid_from") or record.get("created_at"))
    return out


def hit(result: dict[str, Any], with_namespace: bool) -> dict[str, Any]:
    record = result.get("memory") or {}
    out = memory(record)
    out["score"] = round(float(result.get("score") or 0.0), 3)
    if with_namespace:
        out["namespace"] = record.get("namespace")
    return fit(out)


def recall(answer: dict[str, Any], with_namespace: bool) -> dict[str, Any]:
    hits = [hit(result, with_namespace) for result in answer.get("results", [])]
    out: dict[str, Any] = (
        {"results": hits} if hits else {"results": [], "note": "no memory matched; try other words"}
    )
    rerank = answer.get("rerank")
    if rerank:  # asked for: say whether the reranker's order came back (false: the usual order, it failed)
        out["reranked"] = bool(rerank.get("applied"))
    return out


def remembered(answer: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"decision": answer.get("decision"), "reason": answer.get("reason")}
    if answer.get("rule"):
        out["rule"] = answer["rule"]
    if answer.get("memory"):
        out["memory"] = memory(answer["memory"])
    if answer.get("related"):
        out["related"] = [memory(record) for record in answer["related"]]
    return out


def history(answer: dict[str, Any]) -> dict[str, Any]:
    changes = [
        {
            key: change.get(key)
            for key in ("record_id", "operation", "at", "reason")
            if change.get(key) not in (None, "")
        }
        for change in answer.get("changes", [])
    ]
    return {"lineage": [memory(record) for record in answer.get("lineage", [])], "changes": changes}


def conflicts(answer: dict[str, Any]) -> dict[str, Any]:
    groups = [
        {"group": group.get("group"), "memories": [memory(record) for record in group.get("memories", [])]}
        for group in answer.get("conflicts", [])
    ]
    if not groups:
        return {"conflicts": [], "note": "no open conflict in this namespace"}
    return {"conflicts": groups}


def page(answer: dict[str, Any], with_namespace: bool) -> dict[str, Any]:
    """A listing page: compact memories (with their namespace when the page spans a tree), the cursor to
    read on, and why an empty page is empty (the namespaces below that hold memories)."""
    items = []
    for record in answer.get("items", []):
        item = memory(record)
        if with_namespace:
            item["namespace"] = record.get("namespace")
        items.append(fit(item))
    out: dict[str, Any] = {"memories": items}
    if answer.get("next_cursor"):
        out["next_cursor"] = answer["next_cursor"]
    if answer.get("empty_reason"):
        out["note"] = answer["empty_reason"]
    if answer.get("child_namespaces"):
        out["child_namespaces"] = answer["child_namespaces"]
    return out


def memory_file(answer: dict[str, Any]) -> dict[str, Any]:
    """A MEMORY.md / USER.md view without its rendered text (the entries are the text)."""
    return {key: answer.get(key) for key in ("path", "entries", "used", "limit")}
