"""`agent-memory export`, `import-bundle` and `snapshot …` on the local data directory.

agent-memory export [--namespace N ...] [--out PATH]       (PATH ending .tar.gz: one file; else a directory)
agent-memory import-bundle PATH [--dry-run]                  (a bundle directory or .tar.gz)
agent-memory snapshot create NAME -n NS [--note TEXT]
agent-memory snapshot list -n NS
agent-memory snapshot diff FROM [TO] -n NS                   (TO omitted: to the current state)
agent-memory snapshot diff --since TIME [--until TIME] -n NS (two points in time, from the change log)
agent-memory snapshot restore NAME -n NS [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from ..domain.errors import ValidationFailed
from ..domain.interop import bundle as bundles
from ..domain.versioning.diff import Diff
from ..domain.versioning.service import VersioningService

ACTOR = "cli"


def _time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date-time: {text!r}") from error
    if value.utcoffset() is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone: add 'Z' (UTC) or a UTC offset")
    return value


def add_versioning_parsers(commands: Any) -> None:
    export = commands.add_parser("export", help="export records (with history and links) and memory files")
    export.add_argument("--namespace", "-n", action="append", help="a namespace (repeatable; default: all)")
    export.add_argument(
        "--out", help="a directory, or a file ending .tar.gz (default: agent-memory-<time>.tar.gz)"
    )

    load = commands.add_parser("import-bundle", help="import an export bundle (directory or .tar.gz)")
    load.add_argument("path", help="the bundle: a directory or a .tar.gz file")
    load.add_argument("--dry-run", action="store_true", help="report what would be imported, write nothing")

    snapshot = commands.add_parser(
        "snapshot", help="named snapshots of a namespace: create, list, diff, restore"
    )
    sub = snapshot.add_subparsers(dest="snapshot_command", required=True)
    create = sub.add_parser("create", help="take a snapshot")
    create.add_argument("name", help="the snapshot's name (letters, digits, . _ -; never reused)")
    create.add_argument("--note", default="", help="why the snapshot was taken")
    sub.add_parser("list", help="list the namespace's snapshots")
    diff = sub.add_parser("diff", help="what changed between two snapshots, a snapshot and now, or two times")
    diff.add_argument("source", nargs="?", help="snapshot to diff from")
    diff.add_argument("target", nargs="?", help="snapshot to diff to (default: the current state)")
    diff.add_argument("--since", type=_time, help="a point in time instead of a snapshot")
    diff.add_argument("--until", type=_time, help="with --since: the later point (default: now)")
    diff.add_argument("--json", action="store_true", help="print the whole diff as JSON")
    restore = sub.add_parser("restore", help="restore the namespace to a snapshot (as new versions)")
    restore.add_argument("name", help="the snapshot to restore")
    restore.add_argument("--dry-run", action="store_true", help="list the actions, change nothing")
    for parser in (create, sub.choices["list"], diff, restore):
        parser.add_argument("--namespace", "-n", required=True, help="the namespace")


def _print(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def write_bundle(bundle: bundles.Bundle, out: Path) -> None:
    if out.name.endswith(".tar.gz"):
        out.write_bytes(bundles.pack_tar(bundle))
        return
    if out.exists() and any(out.iterdir()):
        raise ValidationFailed(f"{out} exists and is not empty: choose a new directory")
    for name, data in bundles.to_members(bundle).items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def read_bundle(path: Path) -> bundles.Bundle:
    if path.is_file():
        return bundles.unpack_tar(path.read_bytes())
    if not path.is_dir():
        raise ValidationFailed(f"{path} is neither a bundle directory nor a .tar.gz file")
    members: dict[str, bytes] = {}
    for file in sorted(path.rglob("*")):
        if file.is_symlink():
            raise ValidationFailed(f"{file} is a symbolic link; a bundle holds regular files only")
        if file.is_file():
            members[file.relative_to(path).as_posix()] = file.read_bytes()
    return bundles.from_members(members)


def _diff_lines(diff: Diff) -> list[str]:
    lines = [", ".join(f"{count} {kind}" for kind, count in diff.counts().items())]
    for item in diff.records:
        record = item.after or item.before or {}
        lines.append(f"{item.kind:9} {item.id}  {str(record.get('content', ''))[:80]}")
        for change in item.changes:
            reason = f" ({change.get('reason')})" if change.get("reason") else ""
            lines.append(
                f"            {change.get('at')} {change.get('operation')} by {change.get('actor')}{reason}"
            )
    for file in diff.files or []:
        lines.append(f"{'file ' + file.kind:9} {file.namespace}:{file.path}")
        lines += [f"            + {entry[:80]}" for entry in file.entries_added]
        lines += [f"            - {entry[:80]}" for entry in file.entries_removed]
    return lines


def run_versioning(
    args: argparse.Namespace, versioning: VersioningService, tenant: str, now: datetime
) -> int:
    if args.command == "export":
        bundle = versioning.export(tenant, args.namespace)
        out = Path(args.out or f"agent-memory-{now.strftime('%Y%m%dT%H%M%SZ')}.tar.gz")
        write_bundle(bundle, out)
        _print({"out": str(out), "namespaces": bundle.namespaces, "counts": bundle.counts()})
        return 0
    if args.command == "import-bundle":
        report = versioning.import_bundle(
            tenant, read_bundle(Path(args.path)), actor=ACTOR, dry_run=args.dry_run
        )
        _print({"counts": report.counts(), **report.__dict__})
        return 1 if report.conflicts or report.rejected or report.file_conflicts else 0
    command = args.snapshot_command
    if command == "create":
        _print(
            versioning.create_snapshot(
                tenant, args.namespace, args.name, actor=ACTOR, note=args.note
            ).model_dump(mode="json")
        )
    elif command == "list":
        for meta in versioning.list_snapshots(tenant, args.namespace):
            print(f"{meta.name}  {meta.created_at.isoformat()}  {meta.counts}  {meta.note}")
    elif command == "diff":
        if args.since is not None:
            if args.source or args.target:
                print("agent-memory: give two snapshots or --since, not both", file=sys.stderr)
                return 2
            diff = versioning.diff_times(tenant, args.namespace, args.since, args.until)
        elif args.source:
            diff = versioning.diff_snapshots(tenant, args.namespace, args.source, args.target)
        else:
            print("agent-memory: name a snapshot to diff from, or --since TIME", file=sys.stderr)
            return 2
        if args.json:
            _print(
                {
                    "counts": diff.counts(),
                    "records": [item.__dict__ for item in diff.records],
                    "files": None if diff.files is None else [f.__dict__ for f in diff.files],
                }
            )
        else:
            print("\n".join(_diff_lines(diff)))
    else:
        restored = versioning.restore_snapshot(
            tenant, args.namespace, args.name, actor=ACTOR, dry_run=args.dry_run
        )
        _print({"counts": restored.counts(), **restored.__dict__})
    return 0
