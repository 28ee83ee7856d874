"""In-process BM25 over one tenant's keyword index: the same scores as SQLite FTS5's `bm25()` on the tenant's
`fts_<tenant>` table, computed with numpy over postings held in memory.

Why: FTS5 computes `bm25()` row by row in its auxiliary-function API. A LoCoMo-like or Zipf-distributed query
at 10k documents matches ~2,000 rows, which cost ~5 ms of a ~11 ms recall (cProfile, bench/recall_latency.py);
here the same scores are a few vectorised gathers (~0.3 ms). SQLite stays the store of record: the cache is
per process, loaded on the tenant's first keyword query and brought up to date from the `seq`/`epoch` pair of
the `tenants` table exactly as the vector cache is (rows whose `seq` is newer; a full reload after a delete).

Parity with FTS5 (`tokenize='ascii'`, one column, `bm25()` with k1 = 1.2, b = 0.75):
* a row's tokens are the stored text split the way the ascii tokenizer splits it (runs of ASCII letters and
  digits and of non-ASCII characters; ASCII upper case folded), its length is their number;
* idf = ln((N - n + 0.5) / (n + 0.5)), clamped to 1e-6 when not positive, N = rows of the table, n = rows
  holding the term; tf-saturation with the row length over the mean row length;
* a query term the tokenizer would split into several tokens (a phrase) or none is not handled here: the
  caller then runs the FTS5 query itself (`search` returns None).
Proven equal on corpora in tests/unit/test_keyword_cache.py.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ...domain.ports import Hit, IndexFilter

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
_TOKEN = re.compile(r"[0-9A-Za-z\u0080-\U0010ffff]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fts5_ascii_tokens(text: str) -> list[str]:
    """The tokens FTS5's `ascii` tokenizer makes of `text`."""
    return _TOKEN.findall(text.translate(_ASCII_LOWER))


class TenantKeywords:
    """One tenant's postings (term → {row: term frequency}), row lengths and filter codes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seq = -1
        self.epoch = -1
        self.reset()

    def reset(self) -> None:
        self.size = 0
        self.total_tokens = 0
        self.row_of: dict[str, int] = {}
        self.ids: list[str] = []
        self.row_terms: list[Counter[str]] = []
        self.postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.lengths = np.zeros(0, dtype=np.float64)
        self.codes: dict[str, dict[str, int]] = {"namespace": {}, "type": {}, "status": {}}
        self.columns = {kind: np.zeros(0, dtype=np.int32) for kind in self.codes}

    # ------------------------------------------------------------------ sync

    def sync(self, conn: sqlite3.Connection, docs: str, fts: str, *, seq: int, epoch: int) -> None:
        """Bring the cache to (seq, epoch), reading inside the caller's read transaction."""
        if self.seq == seq and self.epoch == epoch:
            return
        columns = (
            f"SELECT d.record_id, d.namespace, d.type, d.status, f.tokens FROM {docs} AS d "
            f"JOIN {fts} AS f ON f.rowid = d.rowid"
        )
        if self.epoch != epoch:
            self.reset()
            rows = conn.execute(columns).fetchall()
        else:
            rows = conn.execute(f"{columns} WHERE d.seq > ?", (self.seq,)).fetchall()
        self.apply(rows)
        self.seq, self.epoch = seq, epoch

    def apply(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """Insert or overwrite rows (record_id, namespace, type, status, indexed tokens text)."""
        if self.size == 0:
            self._load(rows)
            return
        fresh = sum(1 for row in rows if row[0] not in self.row_of)
        self._reserve(self.size + fresh)
        for record_id, namespace, kind, status, text in rows:
            row = self.row_of.get(record_id)
            terms = Counter(fts5_ascii_tokens(text or ""))
            if row is None:
                row = self.size
                self.row_of[record_id] = row
                self.ids.append(record_id)
                self.row_terms.append(Counter())
                self.size += 1
            self._set_terms(row, terms)
            for name, value in (("namespace", namespace), ("type", kind), ("status", status)):
                table = self.codes[name]
                self.columns[name][row] = table.setdefault(value, len(table))

    def _load(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """Bulk load into an empty cache (a process's first keyword query of the tenant): no per-row diffing."""
        self._reserve(len(rows))
        postings = self.postings
        lengths = self.lengths
        row_of, ids, row_terms = self.row_of, self.ids, self.row_terms
        fields: dict[str, list[str]] = {name: [] for name in self.codes}
        total = 0
        for row, (record_id, namespace, kind, status, text) in enumerate(rows):
            terms = Counter(_TOKEN.findall((text or "").translate(_ASCII_LOWER)))
            for term, count in terms.items():
                found = postings.get(term)
                if found is None:
                    postings[term] = {row: count}
                else:
                    found[row] = count
            length = sum(terms.values())
            lengths[row] = length
            total += length
            row_of[record_id] = row
            ids.append(record_id)
            row_terms.append(terms)
            fields["namespace"].append(namespace)
            fields["type"].append(kind)
            fields["status"].append(status)
        for name, values in fields.items():
            table = self.codes[name]
            self.columns[name][: len(rows)] = [table.setdefault(value, len(table)) for value in values]
        self.size = len(rows)
        self.total_tokens = total

    def _reserve(self, needed: int) -> None:
        capacity = self.lengths.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity + capacity // 4, 64)
        lengths = np.zeros(new_capacity, dtype=np.float64)
        lengths[: self.size] = self.lengths[: self.size]
        self.lengths = lengths
        for name, column in self.columns.items():
            grown = np.zeros(new_capacity, dtype=np.int32)
            grown[: self.size] = column[: self.size]
            self.columns[name] = grown

    def _set_terms(self, row: int, terms: Counter[str]) -> None:
        old = self.row_terms[row]
        if old == terms:
            return
        for term in old.keys() - terms.keys():
            del self.postings[term][row]
            if not self.postings[term]:
                del self.postings[term]
            self._arrays.pop(term, None)
        for term, count in terms.items():
            if old.get(term) != count:
                self.postings.setdefault(term, {})[row] = count
                self._arrays.pop(term, None)
        length = sum(terms.values())
        self.total_tokens += length - int(self.lengths[row])
        self.lengths[row] = length
        self.row_terms[row] = terms

    # ------------------------------------------------------------------ queries

    def document_frequency(self, term: str) -> int:
        return len(self.postings.get(term, ()))

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        arrays = self._arrays.get(term)
        if arrays is None:
            found = self.postings.get(term)
            if not found:
                return None
            arrays = (
                np.fromiter(found.keys(), dtype=np.int64, count=len(found)),
                np.fromiter(found.values(), dtype=np.float64, count=len(found)),
            )
            self._arrays[term] = arrays
        return arrays

    def search(self, terms: Sequence[str], k: int, where: IndexFilter) -> list[Hit] | None:
        """The k best rows by FTS5's BM25 among those matching any term and passing `where`; None when a term
        is not a single ascii-tokenizer token (the caller asks FTS5)."""
        if any(len(fts5_ascii_tokens(term)) != 1 for term in terms):
            return None
        n = self.size
        if n == 0 or self.total_tokens == 0:
            return []
        average = self.total_tokens / n
        scores = np.zeros(n, dtype=np.float64)
        matched = False
        for term in (fts5_ascii_tokens(term)[0] for term in terms):  # as FTS5: one phrase per query term
            arrays = self._postings(term)
            if arrays is None:
                continue
            rows, frequencies = arrays
            idf = math.log((n - rows.size + 0.5) / (rows.size + 0.5))
            idf = idf if idf > 0.0 else MIN_IDF
            norm = K1 * (1.0 - B + B * self.lengths[rows] / average)
            scores[rows] += idf * (frequencies * (K1 + 1.0)) / (frequencies + norm)
            matched = True
        if not matched:
            return []
        candidates = np.flatnonzero(scores)
        for name, values in (
            ("namespace", where.namespaces),
            ("type", tuple(v.value for v in where.types)),
            ("status", tuple(v.value for v in where.statuses)),
        ):
            if not values or candidates.size == 0:
                continue
            wanted = [self.codes[name][v] for v in values if v in self.codes[name]]
            if not wanted:
                return []
            column = self.columns[name][candidates]
            keep = column == wanted[0] if len(wanted) == 1 else np.isin(column, wanted)
            candidates = candidates[keep]
        if candidates.size == 0:
            return []
        found = scores[candidates]
        top = min(k, candidates.size)
        best = np.argpartition(-found, top - 1)[:top] if top < candidates.size else np.arange(top)
        best = best[np.lexsort((candidates[best], -found[best]))]
        ids = self.ids
        return [
            Hit(record_id=ids[row], score=value)
            for row, value in zip(candidates[best].tolist(), found[best].tolist(), strict=True)
        ]
