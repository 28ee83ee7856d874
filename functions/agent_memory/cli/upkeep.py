"""`agent-memory stats|archive-decayed|reindex|repair`: counts, forgetting, the search index and stored
records' repair on the local data directory (hooked into cli/main.py).

    agent-memory archive-decayed --dry-run
    agent-memory repair -n /projects/billing --dry-run"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..domain.errors import ValidationFailed
from ..domain.memory.policy import MemoryPolicy
from ..domain.records import is_valid_namespace
from .memory import ACTOR, NAMESPACE_HELP, print_json

EVERY_NAMESPACE = "one namespace (default: every namespace of the tenant)"


def add_upkeep_parsers(commands: Any) -> None:
    stats = commands.add_parser("stats", help="counts and file usage")
    stats.add_argument("--namespace", "-n", required=True, help=NAMESPACE_HELP)

    decay = commands.add_parser("archive-decayed", help="run the forgetting job")
    decay.add_argument("--namespace", "-n", help=EVERY_NAMESPACE)
    decay.add_argument("--dry-run", action="store_true", help="list what would be archived, change nothing")

    reindex = commands.add_parser("reindex", help="rebuild the search index from the records")
    reindex.add_argument("--namespace", "-n", help=EVERY_NAMESPACE)

    repair = commands.add_parser(
        "repair",
        help="find stored memories that fail to load; fix them (or quarantine them), never delete",
    )
    repair.add_argument("--namespace", "-n", help=EVERY_NAMESPACE)
    repair.add_argument("--dry-run", action="store_true", help="report what would change, write nothing")


def decay_note(examined: int, archived: int, policy: MemoryPolicy) -> str:
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


def _stats(args: argparse.Namespace, runtime: Any) -> None:
    counts = runtime.services.memory.counts(args.tenant, args.namespace)
    print_json(
        {
            "by_status": counts.by_status,
            "by_tier": counts.by_tier,
            "by_type": counts.by_type,
            "files": runtime.services.files.usage(args.tenant, args.namespace),
        }
    )


def _archive_decayed(args: argparse.Namespace, runtime: Any) -> None:
    memory = runtime.services.memory
    decayed = memory.archive_decayed(args.tenant, args.namespace, actor=ACTOR, dry_run=args.dry_run)
    print_json(
        {
            "dry_run": decayed.dry_run,
            "examined": decayed.examined,
            "archived": [r.id for r in decayed.archived],
            "note": decay_note(decayed.examined, len(decayed.archived), memory.policy),
        }
    )


def _repair(args: argparse.Namespace, runtime: Any) -> None:
    from ..domain.memory.repair import repair_records

    if runtime.store is None:  # pragma: no cover - build_local always sets it
        raise RuntimeError("this runtime has no record store to repair")
    if args.namespace is not None and not is_valid_namespace(args.namespace):
        raise ValidationFailed(f"invalid namespace {args.namespace!r}: use a path like /projects/billing")
    report = repair_records(
        runtime.store,
        args.tenant,
        namespace=args.namespace,
        now=datetime.now(UTC),
        actor=ACTOR,
        dry_run=args.dry_run,
    )
    print_json(report.as_dict())


UPKEEP_COMMANDS: dict[str, Callable[[argparse.Namespace, Any], None]] = {
    "stats": _stats,
    "archive-decayed": _archive_decayed,
    "reindex": lambda args, runtime: print_json(
        {"reindexed": runtime.services.memory.reindex(args.tenant, args.namespace)}
    ),
    "repair": _repair,
}
"""Command name -> what it does on the local runtime (its services, `args.tenant`, its record store)."""
