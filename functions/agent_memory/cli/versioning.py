"""`agent-memory export`, `import-bundle` and `snapshot …` on the local data directory.

agent-memory export [--namespace N ...] [--no-children] [--out PATH]   (PATH ending .tar.gz: one file; else a
                                                                        directory)
agent-memory import-bundle PATH [--dry-run]                  (a bundle directory or .tar.gz)
agent-memory snapshot create NAME -n NS [--no-children] [--note TEXT]
agent-memory snapshot list -n NS [--no-children]
agent-memory snapshot diff FROM [TO] -n NS [--no-children]   (TO omitted: to the current state)
agent-memory snapshot diff --since TIME [--until TIME] -n NS (two points in time, from the change log)
agent-memory snapshot restore NAME -n NS [--no-children] [--dry-run]

A namespace is a tree: `-n /me` covers /me and every namespace below it (/me/users/u-1, ...) unless
--no-children is given. A result that holds nothing says so and where the data is, and exits 1.
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
from ..domain.memory.service import MemoryService
from ..domain.ports import RecordQuery
from ..domain.records import Status
from ..domain.versioning.diff import Diff
from ..domain.versioning.service import VersioningService
from ..domain.versioning.tree import Scope, TreeVersioning

ACTOR = "cli"
NO_CHILDREN = "only the namespace itself, not the namespaces below it (/me but not /me/users/...)"


def zoned_datetime(text: str) -> datetime:
    """--as-of, --since, --until: an ISO 8601 date-time with a time zone; a naive one is refused, as the API refuses it."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date-time: {text!r}") from error
    if value.utcoffset() is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no time zone: add 'Z' (UTC) or a UTC offset, e.g. 2030-01-01T00:00:00Z"
        )
    return value


def add_versioning_parsers(commands: Any) -> None:
    export = commands.add_parser("export", help="export records (with history and links) and memory files")
    export.add_argument(
        "--namespace",
        "-n",
        action="append",
        help="a namespace and the namespaces below it (repeatable; default: all of the tenant's)",
    )
    export.add_argument("--no-children", action="store_true", help=NO_CHILDREN)
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
    diff.add_argument("--since", type=zoned_datetime, help="a point in time instead of a snapshot")
    diff.add_argument("--until", type=zoned_datetime, help="with --since: the later point (default: now)")
    diff.add_argument("--json", action="store_true", help="print the whole diff as JSON")
    restore = sub.add_parser("restore", help="restore the namespace to a snapshot (as new versions)")
    restore.add_argument("name", help="the snapshot to restore")
    restore.add_argument("--dry-run", action="store_true", help="list the actions, change nothing")
    for parser in (create, sub.choices["list"], diff):
        parser.add_argument(
            "--namespace", "-n", required=True, help="the namespace (and, by default, those below it)"
        )
        parser.add_argument("--no-children", action="store_true", help=NO_CHILDREN)
    restore.add_argument(
        "--namespace", "-n", required=True, help="the namespace (and, by default, those below it)"
    )
    restore.add_argument("--no-children", action="store_true", help=NO_CHILDREN)


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


def list_memories(
    args: argparse.Namespace, memory: MemoryService, versioning: VersioningService, tenant: str
) -> None:
    """`agent-memory list -n NS`: the memories of NS and of the namespaces below it (each line names its
    namespace when there are several); an empty listing says where memories are when the tenant holds any."""
    tree = TreeVersioning(versioning)
    below = () if args.no_children else (args.namespace,)
    page = memory.list(
        tenant,
        RecordQuery(
            namespaces=(args.namespace,),
            namespaces_below=below,  # one query (an index range), not one per namespace
            statuses=(Status(args.status),) if args.status else (),
            limit=args.limit,
        ),
    )
    several = any(record.namespace != args.namespace for record in page.items)
    for record in page.items:
        where = f"{record.namespace}  " if several else ""
        print(f"{where}{record.id}  {record.status.value:<10} [{record.type.value}] {record.content}")
    if page.skipped:
        print(
            f"-- {page.skipped} stored memories could not be read and were skipped; "
            "see `agent-memory repair --dry-run`",
            file=sys.stderr,
        )
    if not page.items and not page.skipped and versioning.namespaces(tenant):
        scope = tree.scope(tenant, args.namespace, include_children=not args.no_children)
        print(f"agent-memory: no memories listed: {tree.empty_note(tenant, scope)}", file=sys.stderr)


def _empty(note: str) -> int:
    print(f"agent-memory: nothing found: {note}", file=sys.stderr)
    return 1


def _export(args: argparse.Namespace, versioning: VersioningService, tenant: str, now: datetime) -> int:
    tree = TreeVersioning(versioning)
    if args.namespace:
        scopes = [tree.scope(tenant, ns, include_children=not args.no_children) for ns in args.namespace]
        chosen = sorted({name for scope in scopes for name in tree.exported(scope)})
    else:
        scopes, chosen = [], versioning.namespaces(tenant)
    bundle = versioning.export(tenant, chosen) if chosen else None
    if bundle is None or not (bundle.records or bundle.files):
        notes = [tree.empty_note(tenant, scope) for scope in scopes] or [
            "this tenant holds no records or files"
        ]
        return _empty("; ".join(notes))
    out = Path(args.out or f"agent-memory-{now.strftime('%Y%m%dT%H%M%SZ')}.tar.gz")
    write_bundle(bundle, out)
    _print({"out": str(out), "namespaces": bundle.namespaces, "counts": bundle.counts()})
    return 0


def _snapshot(args: argparse.Namespace, versioning: VersioningService, tenant: str) -> int:
    tree = TreeVersioning(versioning)
    scope: Scope = tree.scope(tenant, args.namespace, include_children=not args.no_children)
    command = args.snapshot_command
    if command == "create":
        metas = tree.create_snapshot(tenant, scope, args.name, actor=ACTOR, note=args.note)
        _print([meta.model_dump(mode="json") for meta in metas])
        if not any(meta.counts.get("records") or meta.counts.get("files") for meta in metas):
            print(f"agent-memory: the snapshot is empty: {tree.empty_note(tenant, scope)}", file=sys.stderr)
        return 0
    if command == "list":
        found = tree.list_snapshots(tenant, scope)
        if not found:
            where = " or below it" if scope.include_children else ""
            return _empty(f"no snapshot of {scope.parent}{where}")
        for meta in found:
            print(f"{meta.namespace}  {meta.name}  {meta.created_at.isoformat()}  {meta.counts}  {meta.note}")
        return 0
    if args.since is not None:
        if args.source or args.target:
            print("agent-memory: give two snapshots or --since, not both", file=sys.stderr)
            return 2
        diff = tree.diff_times(tenant, scope, args.since, args.until)
    elif args.source:
        diff = tree.diff_snapshots(tenant, scope, args.source, args.target)
    else:
        print("agent-memory: name a snapshot to diff from, or --since TIME", file=sys.stderr)
        return 2
    if args.json:
        _print(
            {
                "namespaces": scope.namespaces,
                "counts": diff.counts(),
                "records": [item.__dict__ for item in diff.records],
                "files": None if diff.files is None else [f.__dict__ for f in diff.files],
            }
        )
    else:
        print(f"namespaces: {', '.join(scope.namespaces)}")
        print("\n".join(_diff_lines(diff)))
    return 0


def run_versioning(
    args: argparse.Namespace, versioning: VersioningService, tenant: str, now: datetime
) -> int:
    if args.command == "export":
        return _export(args, versioning, tenant, now)
    if args.command == "import-bundle":
        report = versioning.import_bundle(
            tenant, read_bundle(Path(args.path)), actor=ACTOR, dry_run=args.dry_run
        )
        _print({"counts": report.counts(), **report.__dict__})
        return 1 if report.conflicts or report.rejected or report.file_conflicts else 0
    if args.snapshot_command != "restore":
        return _snapshot(args, versioning, tenant)
    tree = TreeVersioning(versioning)
    scope = tree.scope(tenant, args.namespace, include_children=not args.no_children)
    reports, untouched = tree.restore_snapshot(tenant, scope, args.name, actor=ACTOR, dry_run=args.dry_run)
    parent, *children = [{"counts": r.counts(), **r.__dict__} for r in reports]
    _print({**parent, "children": children, "untouched": untouched})
    return 0
