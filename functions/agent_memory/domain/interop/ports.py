"""Ports of the interop wing.

- `SourceTree`: a read-only tree of source files (relative POSIX path → text). Adapters: a directory on disk
  (`adapters/posix/source_tree.py`) and an uploaded zip or tar.gz archive, size- and path-checked
  (`adapters/archive_tree.py`).
- `ImportStore`: import reports, what each item became, and the source refs already imported. Adapters:
  SQLite (`adapters/local/import_store.py`) and the memory table in DynamoDB (`adapters/aws/import_store.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .model import ImportReport, ItemOutcome


class SourceTree(Protocol):
    @property
    def label(self) -> str:
        """How the source is named in reports (a directory path or an archive's name)."""
        ...

    def paths(self) -> list[str]:
        """Relative POSIX paths of every regular file, sorted."""
        ...

    def read(self, path: str) -> str:
        """The file's text (UTF-8). Raises `ValidationFailed` when it cannot be read as text."""
        ...


class ImportStore(Protocol):
    def save(self, report: ImportReport) -> None:
        """Create or replace the import's report."""
        ...

    def get(self, tenant: str, import_id: str) -> ImportReport | None: ...

    def seen(self, tenant: str, namespace: str, refs: Sequence[str]) -> set[str]:
        """The refs among `refs` that an earlier import into `namespace` already took."""
        ...

    def add_outcomes(
        self, tenant: str, import_id: str, namespace: str, outcomes: Sequence[ItemOutcome]
    ) -> None:
        """Keep what each item became and mark its ref as imported into `namespace`."""
        ...

    def outcomes(self, tenant: str, import_id: str) -> list[ItemOutcome]: ...

    def release(self, tenant: str, namespace: str, refs: Sequence[str]) -> None:
        """Forget that `refs` were imported (after a rollback, so the source can be imported again)."""
        ...
