"""`memory_save` / `memory_search`: the two-tool shape agent frameworks expect, as a thin wrapper over `Client`.

The service's design has no separate contract for this shape: it is the common pair of memory tools
(save a fact, search for facts) that agent frameworks expose to a model. Each call is one API call
(`POST /v1/memories`, `POST /v1/recall`); what comes back is trimmed to what a model needs. The write
discipline still decides (a transient or unsafe item is not stored: `stored` is False and `reason` says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._operations import MemoryType
from .client import Client
from .errors import UnsafeContent


def memory_save(
    client: Client,
    content: str,
    namespace: str,
    *,
    type: MemoryType | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """Save one memory: `{"id", "decision", "reason", "stored"}` (`id` is None when nothing was stored).

    Content the safety scan refuses (a credential, an injection) is not an exception here but an answer the
    model can read: `{"stored": False, "decision": "refused", "reason": <why>}`. Other errors raise."""
    try:
        result = client.remember(
            content, namespace, type=type, metadata=metadata, idempotency_key=idempotency_key
        )
    except UnsafeContent as refused:
        return {"id": None, "decision": "refused", "reason": refused.message, "stored": False}
    memory = result.get("memory") or {}
    return {
        "id": memory.get("id"),
        "decision": result.get("decision"),
        "reason": result.get("reason", ""),
        "stored": memory.get("id") is not None and result.get("decision") != "rejected",
    }


def memory_search(
    client: Client,
    query: str,
    namespaces: Sequence[str],
    *,
    k: int = 5,
    min_score: float | None = None,
) -> list[dict[str, Any]]:
    """Search memories: the best `k` as `{"id", "content", "type", "namespace", "score"}`, best first."""
    response = client.recall(query, namespaces, k=k, min_score=min_score)
    return [
        {
            "id": hit["memory"].get("id"),
            "content": hit["memory"].get("content"),
            "type": hit["memory"].get("type"),
            "namespace": hit["memory"].get("namespace"),
            "score": hit.get("score"),
        }
        for hit in response.get("results", [])
    ]


@dataclass
class MemoryTools:
    """`memory_save` / `memory_search` bound to a client and a namespace, to hand to an agent as tools."""

    client: Client
    namespace: str

    def memory_save(self, content: str, type: MemoryType | None = None) -> dict[str, Any]:
        return memory_save(self.client, content, self.namespace, type=type)

    def memory_search(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        return memory_search(self.client, query, [self.namespace], k=k)
