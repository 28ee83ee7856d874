"""`agent-memory remember|recall|get|history|correct|archive|restore|list|conflicts|resolve`: the memory
service's commands on the local data directory (hooked into cli/main.py), one function each.

    agent-memory remember "the deploy script lives in tools/" -n /projects/billing
    agent-memory recall "where is the deploy script" -n /projects/billing
    agent-memory correct mem_... "the deploy script lives in scripts/" --reason moved"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..domain.errors import ValidationFailed
from ..domain.memory.service import RecallInput, RememberInput
from ..domain.records import MemoryType, Metadata, Source, SourceKind, Status, Tier
from .versioning import NO_CHILDREN, list_memories, zoned_datetime

ACTOR = "cli"
NAMESPACE_HELP = "namespace path, e.g. /projects/billing"


def print_json(value: Any) -> None:
    """A result as indented JSON on stdout (a pydantic model through its JSON dump)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def metadata(pairs: Sequence[str] | None) -> Metadata:
    result: Metadata = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--metadata takes key=value, got {pair!r}")
        result[key] = value
    return result


# ------------------------------------------------------------------ parsers


def add_memory_parsers(commands: Any) -> None:
    _add_remember_and_recall(commands)
    _add_record_commands(commands)


def _add_remember_and_recall(commands: Any) -> None:
    remember = commands.add_parser("remember", help="remember one memory")
    remember.add_argument("content", help="the text to remember")
    remember.add_argument("--namespace", "-n", required=True, help=NAMESPACE_HELP)
    remember.add_argument(
        "--type",
        choices=[t.value for t in MemoryType],
        help="memory type (default: classified from the text)",
    )
    remember.add_argument(
        "--tier",
        choices=[t.value for t in Tier],
        help="short_term candidate or long_term (default: chosen from the type)",
    )
    remember.add_argument("--metadata", "-m", action="append", help="key=value (repeatable)")

    recall = commands.add_parser("recall", help="hybrid recall")
    recall.add_argument("query", help="what to look for, in plain words")
    recall.add_argument(
        "--namespace", "-n", action="append", required=True, help="namespace to search (repeatable)"
    )
    recall.add_argument(
        "-k", type=int, default=5, help="how many memories to return (default 5, at most 100)"
    )
    recall.add_argument(
        "--mode",
        choices=["hybrid", "vector", "keyword"],
        default="hybrid",
        help="hybrid: vector and BM25 keyword ranks fused (default); vector or keyword: one of them alone",
    )
    recall.add_argument(
        "--as-of",
        type=zoned_datetime,
        help="recall what was true at this time: ISO 8601 with a time zone, e.g. 2030-01-01T00:00:00Z",
    )


def _add_record_commands(commands: Any) -> None:
    for name, help_text in (("get", "show a memory"), ("history", "lineage and change log of a memory")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("memory_id", help="memory id (mem_...)")
    correct = commands.add_parser("correct", help="correct a memory's content")
    correct.add_argument("memory_id", help="memory id (mem_...)")
    correct.add_argument("content", help="the corrected text (the old version is archived and linked)")
    correct.add_argument("--reason", default="", help="why, kept in the change log")
    for name in ("archive", "restore"):
        sub = commands.add_parser(name, help=f"{name} a memory")
        sub.add_argument("memory_id", help="memory id (mem_...)")
        sub.add_argument("--reason", default="", help="why, kept in the change log")

    listing = commands.add_parser("list", help="list memories of a namespace")
    listing.add_argument("--namespace", "-n", required=True, help=NAMESPACE_HELP)
    listing.add_argument(
        "--status", choices=[s.value for s in Status], help="only memories in this status (default: any)"
    )
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    listing.add_argument("--no-children", action="store_true", help=NO_CHILDREN)

    conflicts = commands.add_parser("conflicts", help="open conflict groups")
    conflicts.add_argument("--namespace", "-n", required=True, help=NAMESPACE_HELP)
    resolve = commands.add_parser("resolve", help="resolve a conflict group")
    resolve.add_argument("group", help="conflict group id, as `conflicts` prints it")
    resolve.add_argument(
        "--keep",
        action="append",
        required=True,
        help="memory id to keep active (repeatable); the other members are superseded",
    )


# ------------------------------------------------------------------ commands


def _remember(args: argparse.Namespace, runtime: Any) -> None:
    result = runtime.services.memory.remember(
        args.tenant,
        RememberInput(
            content=args.content,
            namespace=args.namespace,
            type=MemoryType(args.type) if args.type else None,
            tier=Tier(args.tier) if args.tier else None,
            metadata=metadata(args.metadata),
            source=Source(kind=SourceKind.TOOL, ref="agent-memory cli", actor=os.environ.get("USER", ACTOR)),
        ),
        actor=ACTOR,
    )
    print_json(
        {
            "decision": result.decision.value,
            "reason": result.reason,
            "memory": result.record and result.record.model_dump(mode="json"),
        }
    )


def _recall(args: argparse.Namespace, runtime: Any) -> None:
    recalled = runtime.services.memory.recall(
        args.tenant,
        RecallInput(
            query=args.query, namespaces=tuple(args.namespace), k=args.k, mode=args.mode, as_of=args.as_of
        ),
    )
    for item in recalled.results:
        print(f"{item.score:.3f}  {item.record.id}  [{item.record.type.value}] {item.record.content}")
    if not recalled.results:
        print("(nothing recalled)")


def _history(args: argparse.Namespace, runtime: Any) -> None:
    lineage, changes = runtime.services.memory.history(args.tenant, args.memory_id)
    print_json(
        {
            "lineage": [r.model_dump(mode="json") for r in lineage],
            "changes": [c.model_dump(mode="json", exclude={"before", "after"}) for c in changes],
        }
    )


def _correct(args: argparse.Namespace, runtime: Any) -> None:
    previous, current = runtime.services.memory.correct(
        args.tenant, args.memory_id, args.content, actor=ACTOR, reason=args.reason
    )
    print_json({"previous": previous.id, "memory": current.model_dump(mode="json")})


def _archive_or_restore(args: argparse.Namespace, runtime: Any) -> None:
    memory = runtime.services.memory
    action = memory.archive if args.command == "archive" else memory.restore
    print_json(action(args.tenant, args.memory_id, actor=ACTOR, reason=args.reason))


def _list(args: argparse.Namespace, runtime: Any) -> None:
    if runtime.services.versioning is None:  # pragma: no cover - the local runtime wires it
        raise ValidationFailed("listing needs the versioning service")
    list_memories(args, runtime.services.memory, runtime.services.versioning, args.tenant)


def _conflicts(args: argparse.Namespace, runtime: Any) -> None:
    for group in runtime.services.memory.conflicts(args.tenant, args.namespace):
        print(group.group)
        for record in group.records:
            print(f"  {record.id}  {record.content}")


def _resolve(args: argparse.Namespace, runtime: Any) -> None:
    resolved = runtime.services.memory.resolve_conflict(args.tenant, args.group, keep=args.keep, actor=ACTOR)
    print_json([r.model_dump(mode="json") for r in resolved])


MEMORY_COMMANDS: dict[str, Callable[[argparse.Namespace, Any], None]] = {
    "remember": _remember,
    "recall": _recall,
    "get": lambda args, runtime: print_json(runtime.services.memory.get(args.tenant, args.memory_id)),
    "history": _history,
    "correct": _correct,
    "archive": _archive_or_restore,
    "restore": _archive_or_restore,
    "list": _list,
    "conflicts": _conflicts,
    "resolve": _resolve,
}
"""Command name -> what it does on the local runtime (its services, `args.tenant`)."""
