"""`agent-memory import`: bring another agent tool's memory in (hooked into cli/main.py; domain/interop).

    agent-memory import <format> <path> [--namespace N] [--dry-run] [--report out.json] [--quiet]
    agent-memory import rollback <import-id> [--force]
    agent-memory import show <import-id>

<format>: auto, openclaw, hermes, claude-code, mem0, jsonl (`bundle` is read by the export bundle's reader).
<path>: a directory (a workspace, `~/.hermes`, a project or `~/.claude`), a single `.json`/`.jsonl` file, or a
`.zip`/`.tar.gz` archive. The Markdown report goes to stdout; `--report out.json` also writes the JSON report
(and `out.md` beside it). The progress bar (items, rate, ETA) is drawn on stderr when it is a terminal: a
dozen lines of our own rather than a new dependency, the same as `migrate start`'s."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ..domain.interop.formats import RESERVED_FORMATS, Format
from ..domain.interop.service import ImportService, render_markdown

VERBS = ("rollback", "show")
FORMATS = ("auto", *(f.value for f in Format))


def add_import_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "import",
        help="import memory from OpenClaw, Hermes, Claude Code, Mem0 or JSONL chat logs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("format", help=f"one of {', '.join(FORMATS)}; or `rollback` / `show` <import-id>")
    parser.add_argument(
        "path", help="directory, file or .zip/.tar.gz archive (the import id for rollback/show)"
    )
    parser.add_argument("--namespace", "-n", help="target namespace (default /imported/<format>)")
    parser.add_argument(
        "--dry-run", action="store_true", help="inventory only: list what is found, write nothing"
    )
    parser.add_argument(
        "--report", type=Path, help="also write the JSON report here (and the Markdown beside it)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--force", action="store_true", help="rollback: also an import left `running` by a process that died"
    )
    parser.add_argument(
        "--progress", action="store_true", help="draw the progress bar even when not a terminal"
    )
    return parser


class ProgressBar:
    """`[#######.............]  120/1000 items  45.1/s  ETA 19s` redrawn in place."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self._stream = stream
        self._width = width
        self._start = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        elapsed = max(time.monotonic() - self._start, 1e-9)
        rate = done / elapsed
        eta = (total - done) / rate if rate > 0 else float("nan")
        filled = int(self._width * done / total) if total else self._width
        bar = "#" * filled + "." * (self._width - filled)
        self._stream.write(f"\r[{bar}] {done:>6}/{total} items  {rate:7.1f}/s  ETA {eta:5.0f}s")
        if done >= total:
            self._stream.write("\n")
        self._stream.flush()


def run_import(args: argparse.Namespace, runtime: Any) -> int:
    service: ImportService | None = runtime.services.imports
    if service is None:
        print("agent-memory: imports are not wired on this runtime", file=sys.stderr)
        return 1
    tenant, verb = args.tenant, args.format
    if verb in VERBS:
        if verb == "rollback":
            report = service.rollback(tenant, args.path, actor="cli", force=args.force)
        else:
            report = service.report(tenant, args.path)
        _emit(report, args.report)
        return 0
    if verb in RESERVED_FORMATS:
        print(
            f"agent-memory: format {verb!r} is read by the export bundle's importer, not wired here",
            file=sys.stderr,
        )
        return 2
    if verb not in FORMATS:
        print(f"agent-memory: unknown format {verb!r}: use one of {', '.join(FORMATS)}", file=sys.stderr)
        return 2
    tree = open_source(Path(args.path))
    namespace = args.namespace or f"/imported/{verb if verb != 'auto' else service.inventory(tree).format}"
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    report = service.run(
        tenant,
        tree,
        namespace,
        fmt=verb,
        actor="cli",
        dry_run=args.dry_run,
        progress=ProgressBar(sys.stderr) if show else None,
    )
    _emit(report, args.report)
    return 0


def open_source(path: Path) -> Any:
    """A directory or file on disk, or an archive (by its name): the importer's `SourceTree`."""
    from ..wiring.local import open_source_tree

    return open_source_tree(path)


def _emit(report: Any, target: Path | None) -> None:
    markdown = render_markdown(report)
    if target is not None:
        target.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        target.with_suffix(".md").write_text(markdown, encoding="utf-8")
    print(markdown, end="")
