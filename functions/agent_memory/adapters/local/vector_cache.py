"""One tenant's vectors in process memory for the local search index (search_index.py): a growable float32
matrix with parallel integer-code columns for the filterable fields, brought up to date from SQLite by the
index (rows whose `seq` is newer; a full reload after a delete) and searched with vectorised numpy, never a
Python loop over rows."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ...domain.ports import Hit, IndexFilter

FLOAT32 = np.dtype("<f4")
"""How vectors are stored in SQLite (little-endian float32 BLOBs) and held here."""

# Below this many matrix elements (16 MB of float32) numpy's own single-threaded loop computes the product;
# above it, BLAS. A threaded BLAS gemv wakes its thread pool even for small matrices, which on a busy 2-core
# host costs several milliseconds more than the product itself (measured: 10k x 384 took 0.6 ms with einsum,
# 8 ms with matmul while other processes used the cores).
_BLAS_MIN_ELEMENTS = 4_000_000


def _similarities(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    if matrix.size < _BLAS_MIN_ELEMENTS:
        return np.einsum("ij,j->i", matrix, query)
    return matrix @ query


def _member(codes: np.ndarray, wanted: list[int]) -> np.ndarray:
    if len(wanted) == 1:
        return codes == wanted[0]
    return np.isin(codes, wanted)


@dataclass
class TenantVectors:
    """One tenant's vectors in memory: a growable float32 matrix plus parallel code arrays for the filterable
    fields, so a filter is a few vectorised comparisons and never a Python loop over rows."""

    dims: int
    identity: str
    seq: int = -1
    epoch: int = -1
    size: int = 0
    matrix: np.ndarray = field(init=False)
    namespace: np.ndarray = field(init=False)
    type: np.ndarray = field(init=False)
    status: np.ndarray = field(init=False)
    ids: list[str] = field(default_factory=list)
    row_of: dict[str, int] = field(default_factory=dict)
    codes: dict[str, dict[str, int]] = field(
        default_factory=lambda: {"namespace": {}, "type": {}, "status": {}}
    )
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._allocate(0)

    def _allocate(self, capacity: int) -> None:
        self.matrix = np.zeros((capacity, self.dims), dtype=np.float32)
        self.namespace = np.zeros(capacity, dtype=np.int32)
        self.type = np.zeros(capacity, dtype=np.int32)
        self.status = np.zeros(capacity, dtype=np.int32)

    def reset(self) -> None:
        self.size = 0
        self.ids = []
        self.row_of = {}
        self._allocate(0)

    def _reserve(self, extra: int) -> None:
        needed = self.size + extra
        capacity = self.matrix.shape[0]
        if needed <= capacity:
            return
        # 25 % headroom: amortises copies without doubling the memory of a large tenant.
        new_capacity = max(needed, capacity + capacity // 4, 64)
        old = (self.matrix, self.namespace, self.type, self.status)
        self._allocate(new_capacity)
        for target, source in zip((self.matrix, self.namespace, self.type, self.status), old, strict=True):
            target[: self.size] = source[: self.size]

    def apply(self, rows: list[tuple[str, str, str, str, bytes]]) -> None:
        """Insert or overwrite rows (record_id, namespace, type, status, vector bytes). Per-row work is limited
        to dict look-ups, so a cold load of 100k rows stays well under a second."""
        if not rows:
            return
        if self.size == 0:
            self._load(rows)
            return
        row_of = self.row_of
        fresh = [row[0] for row in rows if row[0] not in row_of]
        self._reserve(len(fresh))
        for record_id in fresh:
            row_of[record_id] = self.size
            self.ids.append(record_id)
            self.size += 1
        count = len(rows)
        positions = np.fromiter((row_of[row[0]] for row in rows), dtype=np.int64, count=count)
        self.matrix[positions] = np.frombuffer(b"".join(row[4] for row in rows), dtype=FLOAT32).reshape(
            count, self.dims
        )
        self.namespace[positions] = self._encode("namespace", rows, 1)
        self.type[positions] = self._encode("type", rows, 2)
        self.status[positions] = self._encode("status", rows, 3)

    def _encode(
        self, kind: str, rows: list[tuple[str, str, str, str, bytes]], field_index: Literal[1, 2, 3]
    ) -> np.ndarray:
        """Small integer codes for one filterable field of `rows` (new values get the next free code)."""
        table = self.codes[kind]
        return np.fromiter(
            (table.setdefault(row[field_index], len(table)) for row in rows), dtype=np.int32, count=len(rows)
        )

    def _load(self, rows: list[tuple[str, str, str, str, bytes]]) -> None:
        """Bulk load into an empty cache: the joined bytes become the matrix without a second copy (a
        bytearray, so the array stays writable for later in-place updates)."""
        count = len(rows)
        buffer = bytearray().join(row[4] for row in rows)
        self.matrix = np.frombuffer(buffer, dtype=FLOAT32).reshape(count, self.dims)
        self.ids = [row[0] for row in rows]
        self.row_of = {record_id: i for i, record_id in enumerate(self.ids)}
        self.size = count
        self.codes = {"namespace": {}, "type": {}, "status": {}}
        self.namespace = self._encode("namespace", rows, 1)
        self.type = self._encode("type", rows, 2)
        self.status = self._encode("status", rows, 3)

    def search(self, query: np.ndarray, k: int, where: IndexFilter) -> list[Hit]:
        n = self.size
        if n == 0:
            return []
        mask: np.ndarray | None = None
        for kind, column, values in (
            ("namespace", self.namespace, where.namespaces),
            ("type", self.type, tuple(v.value for v in where.types)),
            ("status", self.status, tuple(v.value for v in where.statuses)),
        ):
            if not values:
                continue
            wanted = [self.codes[kind][v] for v in values if v in self.codes[kind]]
            if not wanted:
                return []
            member = _member(column[:n], wanted)
            mask = member if mask is None else mask & member
        if mask is None:  # no filter at all: every row is a candidate
            return self._top(_similarities(self.matrix[:n], query), np.arange(n), k)
        candidates = np.flatnonzero(mask)
        if candidates.size == 0:
            return []
        # A narrow filter gathers its rows first; a wide one multiplies the whole matrix once, which is
        # cheaper than copying most of it.
        if candidates.size * 2 < n:
            scores = _similarities(self.matrix[candidates], query)
        else:
            scores = _similarities(self.matrix[:n], query)[candidates]
        return self._top(scores, candidates, k)

    def _top(self, scores: np.ndarray, candidates: np.ndarray, k: int) -> list[Hit]:
        """The k best of `scores` (aligned with row numbers `candidates`), best first."""
        top = min(k, candidates.size)
        best = np.argpartition(-scores, top - 1)[:top] if top < candidates.size else np.arange(top)
        best = best[np.argsort(-scores[best], kind="stable")]
        # One vectorised clip and plain Python numbers: np.clip per hit cost ~15 µs each, 1.5 ms at k=100.
        ids, rows, values = self.ids, candidates[best].tolist(), np.clip(scores[best], -1.0, 1.0).tolist()
        return [Hit(record_id=ids[row], score=value) for row, value in zip(rows, values, strict=True)]
