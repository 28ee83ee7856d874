"""`agent-memory files show|add|replace|remove` and `agent-memory log`: the memory files (MEMORY.md, USER.md) and
the daily log on the local data directory (hooked into cli/main.py).

    agent-memory files add memory "Deploys go through tools/deploy.sh" -n /projects/billing
    agent-memory log "shipped the invoice export" -n /projects/billing"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .memory import NAMESPACE_HELP

FILE_ARGUMENTS = {"content": "the entry's text", "match": "a substring of exactly one existing entry"}


def add_files_parsers(commands: Any) -> None:
    files = commands.add_parser("files", help="MEMORY.md / USER.md entries")
    file_commands = files.add_subparsers(dest="files_command", required=True)
    for name, help_text, arguments in (
        ("show", "print the file, its entries and its size against the cap", ()),
        ("add", "add an entry (refused over the character cap or if it exists)", ("content",)),
        ("replace", "replace the entry containing MATCH with CONTENT", ("match", "content")),
        ("remove", "remove the entry containing MATCH", ("match",)),
    ):
        sub = file_commands.add_parser(name, help=help_text)
        sub.add_argument("kind", choices=["memory", "user"], help="memory (MEMORY.md) or user (USER.md)")
        for argument in arguments:
            sub.add_argument(argument, help=FILE_ARGUMENTS[argument])
        sub.add_argument("--namespace", "-n", required=True, help=NAMESPACE_HELP)

    log = commands.add_parser("log", help="append to today's daily log")
    log.add_argument("text", help="the line to append")
    log.add_argument("--namespace", "-n", required=True, help=NAMESPACE_HELP)


def _files(args: argparse.Namespace, runtime: Any) -> None:
    files, tenant, sub = runtime.services.files, args.tenant, args.files_command
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


def _log(args: argparse.Namespace, runtime: Any) -> None:
    print(runtime.services.files.append_daily(args.tenant, args.namespace, args.text))


FILE_COMMANDS: dict[str, Callable[[argparse.Namespace, Any], None]] = {"files": _files, "log": _log}
"""Command name -> what it does on the local runtime (its services, `args.tenant`)."""
