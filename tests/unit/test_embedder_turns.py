"""A packaged model embeds documents a few at a time and lets a waiting query go between two chunks (issue 29:
a recall's query embedding no longer waits for a whole 100-item batch of another tenant)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from agent_memory.adapters.local.embedders import _PackagedModel
from agent_memory.domain.records import EmbedderIdentity


class RecordingEngine(_PackagedModel):
    """The engine's calls, in order; the first document chunk waits until the test lets it go."""

    def __init__(self) -> None:
        super().__init__(EmbedderIdentity(name="recording", dimensions=4, normalized=True))
        self.calls: list[str] = []
        self.first_chunk_started = threading.Event()
        self.release_first_chunk = threading.Event()

    def _create(self) -> Any:
        return object()

    def _documents(self, model: Any, texts: list[str]) -> Any:
        if not self.calls:
            self.first_chunk_started.set()
            assert self.release_first_chunk.wait(10)
        self.calls.append(f"documents:{len(texts)}")
        return np.ones((len(texts), 4), dtype=np.float32)

    def _query(self, model: Any, text: str) -> Any:
        self.calls.append("query")
        return np.ones(4, dtype=np.float32)


def test_a_query_goes_between_two_document_chunks() -> None:
    engine = RecordingEngine()
    texts = [f"memory {n}" for n in range(3 * engine.DOCUMENT_CHUNK)]
    vectors: list[Any] = []
    writer = threading.Thread(target=lambda: vectors.extend(engine.embed_documents(texts)))
    writer.start()
    assert engine.first_chunk_started.wait(10)
    answers: list[Any] = []
    reader = threading.Thread(target=lambda: answers.append(engine.embed_query("what is billed?")))
    reader.start()
    while not engine._queries_waiting:  # the query is waiting for the engine
        threading.Event().wait(0.001)
    engine.release_first_chunk.set()
    writer.join(10)
    reader.join(10)
    chunk = f"documents:{engine.DOCUMENT_CHUNK}"
    assert engine.calls == [chunk, "query", chunk, chunk]
    assert len(vectors) == len(texts) and len(answers) == 1
