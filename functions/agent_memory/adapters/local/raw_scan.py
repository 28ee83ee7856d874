"""The last step of a local purge and its independent check: the raw bytes of the data directory.

`erase` compacts every SQLite database under the data directory (secure delete on, `VACUUM`, then a
`TRUNCATE` checkpoint), so no free page, stale page version or WAL frame keeps a deleted text. `find` reads
every file under the data directory as bytes, without the stores' code, and searches them for the purged texts
in their normalised forms (NFKC, case and whitespace folded, and as JSON escapes them):

- a plain file (memory files, archives, exports) holding one is a remaining copy when it belongs to the
  purge: under the tenant's folder, within a purged namespace (every namespace of a subject or tenant
  purge), or under no tenant's folder at all;
- a database holding more copies in its bytes than in its live rows has leftovers (free pages, WAL): each
  extra copy counts; and a live row holding one counts when it belongs to the purge (its `tenant` column, or
  a table named for the tenant, and its `namespace` column when it has one).

The purge ledger (`purges.db`) holds the texts while the purge runs: it is left out here and sealed once the
plan has dropped them (`seal`)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from ...domain.erasure.model import STRUCTURAL_KEYS, EraseScope, StoreFinding, texts_of
from ...domain.records import normalize_content

SQLITE_MAGIC = b"SQLite format 3\x00"
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
LEDGER = "purges.db"
FILES_DIR = "files"
TENANT_DIRS = ("files", "archive")
FTS_SHADOWS = ("_content", "_data", "_idx", "_docsize", "_config")
BUSY_TIMEOUT_S = 30.0


def needle_forms(scope: EraseScope) -> list[str]:
    """The purged texts as a normalised haystack shows them: folded, and folded as JSON escapes them."""
    forms: set[str] = set()
    for needle in scope.needles:
        if len(needle.strip()) < 3:
            continue
        forms.add(normalize_content(needle))
        forms.add(normalize_content(json.dumps(needle)[1:-1]))
    return sorted(f for f in forms if f)


def count_in(text: str, forms: list[str]) -> int:
    folded = normalize_content(text)
    return sum(folded.count(form) for form in forms)


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


def compact_database(path: Path) -> None:
    """Rewrite a database without its free pages and empty its WAL (deleted content overwritten)."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def is_database(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


class RawDataScan:
    """The `raw_bytes` store of a local purge (see the module docstring)."""

    name = "raw_bytes"

    def __init__(self, data_dir: Path) -> None:
        self._root = Path(data_dir)

    def _files(self) -> Iterator[Path]:
        for directory, _dirs, names in os.walk(self._root):
            for name in sorted(names):
                yield Path(directory) / name

    def databases(self) -> list[Path]:
        return sorted(p for p in self._files() if p.name != LEDGER and is_database(p))

    def erase(self, scope: EraseScope, *, actor: str, reason: str, plan_id: str) -> int:
        databases = self.databases()
        for path in databases:
            compact_database(path)
        return len(databases)

    def planned(self, scope: EraseScope) -> StoreFinding:
        """What the plan shows: copies in files and live rows of the purge. Free pages and WAL frames are
        not attributable to a tenant before the compaction (they may hold another tenant's old rows, or the
        service's own words): the verification counts what is left of them after it."""
        return self.find(scope, leftovers=False)

    def find(self, scope: EraseScope, *, leftovers: bool = True) -> StoreFinding:
        forms = needle_forms(scope)
        refs: list[str] = []
        if not forms:
            return StoreFinding(store=self.name)
        databases = set(self.databases())
        for path in self._files():
            rel = path.relative_to(self._root).as_posix()
            if path in databases:
                refs.extend(self._database(path, rel, scope, forms, leftovers))
            elif path.name == LEDGER or path.name.endswith(SIDE_SUFFIXES) or is_database(path):
                continue  # the ledger is sealed apart; WAL files are counted with their database
            elif self._plain_in_scope(rel, scope):
                found = count_in(_user_text(rel, _read_text(path)), forms)
                refs.extend([rel] * found)
        return StoreFinding(store=self.name, items=len(refs), refs=refs)

    def _plain_in_scope(self, rel: str, scope: EraseScope) -> bool:
        parts = rel.split("/")
        if parts[0] not in TENANT_DIRS or len(parts) < 3:
            return True  # under no tenant's folder: a copy the purge does not know
        if parts[1] != scope.tenant:
            return False
        if parts[0] != FILES_DIR or scope.whole_tenant or scope.subject is not None:
            return True
        return owner_namespace("/" + "/".join(parts[2:-1]), scope.namespaces) is not None

    def _database(
        self, path: Path, rel: str, scope: EraseScope, forms: list[str], leftovers: bool
    ) -> list[str]:
        live, owned = _live_rows(path, scope, forms)
        refs = [f"{rel}:{table}" for table in owned]
        if not leftovers:
            return refs
        raw = count_in(_read_text(path), forms)
        wal = path.with_name(path.name + "-wal")
        if wal.is_file():
            raw += count_in(_read_text(wal), forms)
        extra = raw - live
        refs.extend([f"{rel}:free-pages-or-wal"] * max(0, extra))
        return refs


OWN_DIRS = ("memory", "skills", ".dreams", ".curator")


def owner_namespace(directory: str, namespaces: tuple[str, ...]) -> str | None:
    """Which of `namespaces` a directory of the file tree belongs to: the namespace's own directory or one of
    its own folders (`memory/`, `skills/`, ...), never a child namespace's directory."""
    for namespace in namespaces:
        if directory == namespace:
            return namespace
        below = directory[len(namespace) + 1 :].split("/")[0]
        if directory.startswith(namespace + "/") and below in OWN_DIRS:
            return namespace
    return None


def _live_rows(path: Path, scope: EraseScope, forms: list[str]) -> tuple[int, list[str]]:
    """(copies in the live rows of every table, the tables whose rows of the purge hold one — once per
    copy)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    live = 0
    owned: list[str] = []
    try:
        tables = [
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not row[0].startswith("sqlite_")
        ]
        for table in tables:
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                cells = dict(zip(columns, row, strict=False))
                live += sum(count_in(_cell(value), forms) for value in row)
                if _owned(table, cells, scope):
                    owned.extend([table] * _row_copies(cells, forms))
    except sqlite3.DatabaseError:
        return 0, []  # an FTS table whose tokenizer is not loaded here: its raw bytes are still counted
    finally:
        conn.close()
    return live, owned


def _row_copies(cells: dict[str, object], forms: list[str]) -> int:
    """Copies in the texts of a row: JSON documents' text values (not the service's vocabulary: statuses,
    types, tenant) and plain cells other than keys and identifiers."""
    found = 0
    for column, value in cells.items():
        if column in STRUCTURAL_KEYS or column in _KEY_COLUMNS:
            continue
        text = _cell(value)
        found += count_in(" \n ".join(_texts(text)), forms)
    return found


_KEY_COLUMNS = frozenset(
    {"id", "record_id", "import_id", "seq", "hash", "fingerprint", "key", "name", "body_sha"}
)


def _texts(text: str) -> list[str]:
    try:
        document = json.loads(text)
    except ValueError:
        return [text]
    return list(texts_of(document)) if isinstance(document, dict | list) else [text]


def _user_text(rel: str, text: str) -> str:
    """What a user wrote in a file: a JSON file's text values, a skill's body and free-text fields (not its
    name, status or times), any other file whole."""
    if rel.endswith(".json"):
        return " \n ".join(_texts(text))
    if "/skills/" in rel and text.startswith("---"):
        head, _, body = text[3:].partition("\n---")
        kept = [
            line for line in head.split("\n") if line.split(":", 1)[0].strip() in ("description", "author")
        ]
        return "\n".join([*kept, body])
    return text


def _cell(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


def _owned(table: str, cells: dict[str, object], scope: EraseScope) -> bool:
    """Whether a live row belongs to the purge (so a copy in it is a remaining copy)."""
    tenant_table = scope.tenant.replace("-", "_")
    if table.endswith(FTS_SHADOWS) and not table.endswith("_content"):
        return False
    if "tenant" in cells:
        if cells["tenant"] != scope.tenant:
            return False
    elif f"_{tenant_table}" not in table:
        return False  # no tenant in the row or the table name: another store's check
    namespace = cells.get("namespace")
    if not isinstance(namespace, str) or scope.whole_tenant or scope.subject is not None:
        return True
    return namespace in scope.namespaces


class LedgerSeal:
    """Seals the purge ledger once a completed plan has dropped its texts: compacts `purges.db` and searches
    its bytes for them."""

    name = "ledger"

    def __init__(self, path: Path) -> None:
        self._path = Path(path)

    def seal(self, scope: EraseScope) -> StoreFinding:
        if not self._path.is_file():
            return StoreFinding(store=self.name)
        compact_database(self._path)
        forms = needle_forms(EraseScope(scope.tenant, scope.kind, (), scope.needles, scope.namespaces))
        text = _read_text(self._path)
        wal = self._path.with_name(self._path.name + "-wal")
        if wal.is_file():
            text += _read_text(wal)
        found = count_in(text, forms)
        return StoreFinding(store=self.name, items=found, refs=[self._path.name] * found)
