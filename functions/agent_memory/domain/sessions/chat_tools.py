"""The memory tools a session's model can call: their Converse definitions (part of the cached prefix, so
fixed per deployment and ordered by name) and their execution against the memory services.

The model manages memory the way agents do: add / replace / remove entries of MEMORY.md and USER.md (the caps
and their refusal messages come back to the model as tool errors, so it can make room), remember a record,
recall records, view and write skills. Writes reach the files and records at once; the running session's
snapshot never changes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import DomainError, NotConfigured, ValidationFailed
from ..files.memory_files import FileView, MemoryFilesService
from ..memory.service import MemoryService, RecallInput, RememberInput
from ..records import MemoryType, Source, SourceKind
from ..skills.document import Provenance
from ..skills.service import Skill, SkillsService
from .config import ChatConfig
from .ports import SessionRecord, ToolUse

_KIND = {
    "type": "string",
    "enum": ["memory", "user"],
    "description": "memory = MEMORY.md (your notes about the project, environment and lessons learned); "
    "user = USER.md (the user's profile and preferences)",
}
_MATCH = {
    "type": "string",
    "description": "A short unique substring of the one entry to change, copied from the entry",
}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"json": {"type": "object", "properties": properties, "required": required}}


_TOOL_SPECS: list[dict[str, Any]] = [
    {
        "toolSpec": {
            "name": "memory_file_add",
            "description": "Add one entry to MEMORY.md or USER.md. Keep entries short, factual and durable. "
            "Refused when the file would exceed its character cap (replace or remove entries first) or the "
            "entry is an exact duplicate. Saved at once; visible in the snapshot from the next session.",
            "inputSchema": _object(
                {"kind": _KIND, "content": {"type": "string", "description": "The entry text"}},
                ["kind", "content"],
            ),
        }
    },
    {
        "toolSpec": {
            "name": "memory_file_replace",
            "description": "Replace the one entry of MEMORY.md or USER.md that contains `match` with new text "
            "(to correct it, or to merge entries and make room under the cap).",
            "inputSchema": _object(
                {
                    "kind": _KIND,
                    "match": _MATCH,
                    "content": {"type": "string", "description": "The new text"},
                },
                ["kind", "match", "content"],
            ),
        }
    },
    {
        "toolSpec": {
            "name": "memory_file_remove",
            "description": "Remove the one entry of MEMORY.md or USER.md that contains `match`.",
            "inputSchema": _object({"kind": _KIND, "match": _MATCH}, ["kind", "match"]),
        }
    },
    {
        "toolSpec": {
            "name": "remember",
            "description": "Store a fact as a memory record of this project (searchable with recall). "
            "Duplicates merge and contradictions supersede older records automatically.",
            "inputSchema": _object(
                {
                    "content": {"type": "string", "description": "The fact, in plain language"},
                    "type": {
                        "type": "string",
                        "enum": [t.value for t in MemoryType],
                        "description": "Optional; classified automatically when omitted",
                    },
                },
                ["content"],
            ),
        }
    },
    {
        "toolSpec": {
            "name": "recall",
            "description": "Search this project's memory records (meaning and keywords); returns the best "
            "matches with their ids, types and scores.",
            "inputSchema": _object(
                {
                    "query": {"type": "string", "description": "What to look for"},
                    "k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many results"},
                },
                ["query"],
            ),
        }
    },
]
# Part of the cached prefix: a fixed order makes the bytes identical on every call of every session.
_TOOL_SPECS.sort(key=lambda spec: spec["toolSpec"]["name"])
TOOL_NAMES: tuple[str, ...] = tuple(spec["toolSpec"]["name"] for spec in _TOOL_SPECS)
_SKILL_TOOL_SPECS: list[dict[str, Any]] = [
    {
        "toolSpec": {
            "name": "skill_view",
            "description": "Load the full procedure of one skill listed under 'Skills' in the memory snapshot "
            "(the snapshot lists names and descriptions only). The view is recorded as a use.",
            "inputSchema": _object({"name": {"type": "string", "description": "The skill's name"}}, ["name"]),
        }
    },
    {
        "toolSpec": {
            "name": "skill_manage",
            "description": "Write your own skills (procedures for a kind of task: do A, B, C, avoid D) and "
            "report how one worked. action=create (name, description, body), edit (name, body, optional "
            "description), patch (name, heading, content: replaces that section), archive or restore (name), "
            "outcome (name, outcome helped|failed|misled, note). Every change is versioned; a new skill "
            "appears in the snapshot from the next session. Skills that mislead are retired by the curator.",
            "inputSchema": _object(
                {
                    "action": {
                        "type": "string",
                        "enum": ["create", "edit", "patch", "archive", "restore", "outcome"],
                    },
                    "name": {"type": "string", "description": "Lower-case letters, digits and hyphens"},
                    "description": {"type": "string", "description": "One line: when to use the skill"},
                    "body": {"type": "string", "description": "The Markdown procedure"},
                    "heading": {"type": "string", "description": "patch: the section's heading"},
                    "content": {"type": "string", "description": "patch: the section's new lines"},
                    "outcome": {"type": "string", "enum": ["helped", "failed", "misled"]},
                    "note": {"type": "string", "description": "Why (change log) or what happened (outcome)"},
                },
                ["action", "name"],
            ),
        }
    },
]
"""Offered when the deployment has skills (`ChatService(skills=…)`): still fixed per deployment."""
SKILL_TOOL_NAMES: tuple[str, ...] = tuple(spec["toolSpec"]["name"] for spec in _SKILL_TOOL_SPECS)
_WRITE_TOOLS = frozenset(
    {"memory_file_add", "memory_file_replace", "memory_file_remove", "remember", "skill_manage"}
)


def tool_config(*, skills: bool = False) -> dict[str, Any]:
    """The Converse `toolConfig` (a fresh copy: callers may not alter the shared definitions); with `skills`,
    the skill tools too (sorted in with the others)."""
    specs = sorted([*_TOOL_SPECS, *_SKILL_TOOL_SPECS], key=lambda spec: spec["toolSpec"]["name"])
    return {"tools": copy.deepcopy(specs if skills else _TOOL_SPECS)}


ToolCallStatus = Literal["success", "error"]


@dataclass(frozen=True)
class ToolCallOutcome:
    name: str
    status: ToolCallStatus
    """`success` or `error` (the error text went back to the model)."""
    summary: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "summary": self.summary}


@dataclass(frozen=True)
class ToolContext:
    tenant: str
    session: SessionRecord
    actor: str
    can_write: bool
    turn_index: int


class MemoryTools:
    """Runs the model's tool calls for a session; refusals go back to the model as tool errors."""

    def __init__(
        self,
        files: MemoryFilesService,
        memory: MemoryService,
        config: ChatConfig,
        skills: SkillsService | None = None,
    ) -> None:
        self._files = files
        self._memory = memory
        self.config = config
        self._skills = skills

    def run(self, use: ToolUse, context: ToolContext) -> tuple[dict[str, Any], ToolCallOutcome]:
        status: ToolCallStatus
        try:
            available = (*TOOL_NAMES, *SKILL_TOOL_NAMES) if self._skills is not None else TOOL_NAMES
            if use.name not in available:
                raise ValidationFailed(f"unknown tool {use.name!r}; available: {', '.join(available)}")
            if use.name in _WRITE_TOOLS and not context.can_write:
                raise ValidationFailed(
                    "this API key is read-only: memory writes are not allowed in this session"
                )
            payload, summary = self._dispatch(use, context)
            status = "success"
        except DomainError as error:
            # Refusals (caps, duplicates, unsafe content, bad input) are information for the model, not a
            # failed turn: it can replace or remove entries and try again.
            payload = {"error": error.code, "message": error.message}
            payload.update(
                {k: v for k, v in error.details.items() if isinstance(v, str | int | float | bool)}
            )
            summary = f"{error.code}: {error.message}"
            status = "error"
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        limit = self.config.tool_result_max_chars
        if len(text) > limit:
            text = text[:limit] + "…[cut]"
        block = {"toolResult": {"toolUseId": use.id, "content": [{"text": text}], "status": status}}
        return block, ToolCallOutcome(use.name, status, summary[:300])

    def _dispatch(self, use: ToolUse, context: ToolContext) -> tuple[dict[str, Any], str]:
        args = use.input
        tenant, namespace = context.tenant, context.session.namespace
        if use.name == "memory_file_add":
            view = self._files.add(tenant, namespace, _arg(args, "kind"), _arg(args, "content"))
            return _file_payload(view, "added"), f"added to {view.path} ({view.used}/{view.limit})"
        if use.name == "memory_file_replace":
            view = self._files.replace(
                tenant, namespace, _arg(args, "kind"), _arg(args, "match"), _arg(args, "content")
            )
            return _file_payload(view, "replaced"), f"replaced in {view.path} ({view.used}/{view.limit})"
        if use.name == "memory_file_remove":
            view = self._files.remove(tenant, namespace, _arg(args, "kind"), _arg(args, "match"))
            return _file_payload(view, "removed"), f"removed from {view.path} ({view.used}/{view.limit})"
        if use.name in ("skill_view", "skill_manage"):
            return self._skill_tool(use.name, args, context)
        if use.name == "remember":
            raw_type = args.get("type")
            try:
                memory_type = MemoryType(raw_type) if raw_type else None
            except ValueError:
                raise ValidationFailed(f"unknown memory type {raw_type!r}") from None
            result = self._memory.remember(
                tenant,
                RememberInput(
                    content=_arg(args, "content"),
                    namespace=namespace,
                    type=memory_type,
                    source=Source(
                        kind=SourceKind.TOOL,
                        ref=f"session:{context.session.id}#turn:{context.turn_index + 1}",
                        actor=context.actor,
                    ),
                ),
                actor=context.actor,
            )
            record_id = result.record.id if result.record else None
            payload = {"decision": result.decision.value, "reason": result.reason, "id": record_id}
            return payload, f"{result.decision.value}: {result.reason}"
        # recall
        k = args.get("k", self.config.recall_k)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 50:
            raise ValidationFailed("k must be an integer from 1 to 50")
        found = self._memory.recall(
            tenant, RecallInput(query=_arg(args, "query"), namespaces=(namespace,), k=k)
        ).results
        results = [
            {
                "id": item.record.id,
                "type": item.record.type.value,
                "content": item.record.content[:1000],
                "score": round(item.score, 3),
            }
            for item in found
        ]
        return {"results": results}, f"{len(results)} results"

    def _skill_tool(
        self, name: str, args: Mapping[str, Any], context: ToolContext
    ) -> tuple[dict[str, Any], str]:
        """`skill_view` and `skill_manage`: agent-written skills (provenance `agent`, author the session's
        actor); a skill written here reaches the snapshot of the next session only."""
        if self._skills is None:
            raise NotConfigured("skills are not configured on this deployment")
        skills, tenant, namespace, actor = (
            self._skills,
            context.tenant,
            context.session.namespace,
            context.actor,
        )
        skill_name = _arg(args, "name")
        if name == "skill_view":
            skill = skills.view(tenant, namespace, skill_name, actor=actor)
            return _skill_payload(skill, body=True), f"viewed {skill_name} v{skill.meta.version}"
        action = _arg(args, "action")
        raw_note = args.get("note")
        note = raw_note if isinstance(raw_note, str) else ""
        if action == "outcome":
            signals = skills.report_outcome(
                tenant, namespace, skill_name, _arg(args, "outcome"), actor=actor, note=note
            )
            return {
                "status": "recorded",
                "outcomes": signals.as_dict()["outcomes"],
            }, f"outcome for {skill_name}"
        skill = self._change_skill(skills, action, args, context, note)
        payload = _skill_payload(skill, body=False)
        payload["note"] = "saved; it appears in the skills listing of the snapshot from the next session"
        return payload, f"{action} {skill_name} v{skill.meta.version}"

    @staticmethod
    def _change_skill(
        skills: SkillsService, action: str, args: Mapping[str, Any], context: ToolContext, note: str
    ) -> Skill:
        """`skill_manage` create, edit, patch, archive or restore: the skill as it is afterwards."""
        tenant, namespace, actor = context.tenant, context.session.namespace, context.actor
        skill_name = _arg(args, "name")
        if action == "create":
            skill = skills.create(
                tenant,
                namespace,
                skill_name,
                description=_arg(args, "description"),
                body=_arg(args, "body"),
                actor=actor,
                provenance=Provenance.AGENT,
                note=note,
            )
        elif action == "edit":
            description = args.get("description")
            skill = skills.edit(
                tenant,
                namespace,
                skill_name,
                body=_arg(args, "body"),
                description=description if isinstance(description, str) and description.strip() else None,
                actor=actor,
                note=note,
            )
        elif action == "patch":
            content = args.get("content")
            if not isinstance(content, str):
                raise ValidationFailed("the tool input needs a string `content` for patch")
            skill = skills.patch(
                tenant,
                namespace,
                skill_name,
                heading=_arg(args, "heading"),
                content=content,
                actor=actor,
                note=note,
            )
        elif action in ("archive", "restore"):
            change = skills.archive if action == "archive" else skills.restore
            skill = change(tenant, namespace, skill_name, actor=actor, note=note)
        else:
            raise ValidationFailed(
                f"unknown skill_manage action {action!r}: use create, edit, patch, archive, restore or outcome"
            )
        return skill


def _skill_payload(skill: Skill, *, body: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "name": skill.meta.name,
        "description": skill.meta.description,
        "status": skill.meta.status.value,
        "version": skill.meta.version,
        "provenance": skill.meta.provenance.value,
    }
    if body:
        payload["body"] = skill.body
    return payload


def _arg(args: Mapping[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed(f"the tool input needs a non-empty string `{name}`")
    return value


def _file_payload(view: FileView, action: str) -> dict[str, Any]:
    return {
        "status": action,
        "path": view.path,
        "used": view.used,
        "limit": view.limit,
        "entries": len(view.entries),
        "note": "saved; it appears in the memory snapshot from the next session",
    }
