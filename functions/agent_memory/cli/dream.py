"""`agent-memory dream`: run the dreaming sweep now, on the local data directory (hooked into cli.py).

    agent-memory dream [--namespace NS ...] [--dry-run] [--day YYYY-MM-DD] [--force] [--json] [--limit N]

Without --namespace every namespace of the tenant is swept (memory-file directories and namespaces with
short-term records). A dry run prints the same explanation a real run writes to `.dreams/<day>/REPORT.md`.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from typing import Any

from ..domain.dreaming.report import render_report
from ..domain.dreaming.sweep import DreamingService


def add_dream_parser(subparsers: Any) -> argparse.ArgumentParser:
    dream = subparsers.add_parser("dream", help="run the dreaming sweep (Light → REM → Deep) now")
    dream.add_argument(
        "--namespace",
        "-n",
        action="append",
        help="namespace to sweep (repeatable; default: all of the tenant)",
    )
    dream.add_argument(
        "--dry-run", action="store_true", help="explain the decisions without writing anything"
    )
    dream.add_argument("--day", type=date.fromisoformat, help="sweep day YYYY-MM-DD (default: today, UTC)")
    dream.add_argument("--force", action="store_true", help="run again although the day's sweep completed")
    dream.add_argument("--json", action="store_true", help="print run.json-style JSON instead of the report")
    dream.add_argument("--limit", type=int, default=20, help="candidates listed per namespace (default 20)")
    return dream


def dreaming_service_of(runtime: Any) -> DreamingService:
    service = getattr(getattr(runtime, "services", None), "dreaming", None)
    if not isinstance(service, DreamingService):
        raise RuntimeError(
            "dreaming is not wired: Services needs a `dreaming` field built by wiring.local.build_local "
            "(see the dreaming hooks in docs)"
        )
    return service


def run_dream(args: argparse.Namespace, runtime: Any) -> int:
    """Sweep the requested namespaces of `args.tenant`; exit code 0 when every sweep completed."""
    if args.limit < 0:
        raise SystemExit("--limit must be 0 or more")
    dreaming = dreaming_service_of(runtime)
    namespaces = args.namespace or dreaming.namespaces(args.tenant)
    if not namespaces:
        print(f"agent-memory: tenant {args.tenant!r} has no namespace to sweep", file=sys.stderr)
        return 0
    reports = [
        dreaming.run(args.tenant, namespace, day=args.day, dry_run=args.dry_run, force=args.force)
        for namespace in namespaces
    ]
    if args.json:
        print(json.dumps([r.to_dict(limit=args.limit) for r in reports], ensure_ascii=False, indent=2))
        return 0
    for report in reports:
        if report.status == "already_done":
            print(
                f"{report.namespace} {report.day}: already swept by run {report.run_id} "
                f"(use --force to run again; nothing is promoted twice)"
            )
            continue
        print(render_report(report, args.limit))
    return 0
