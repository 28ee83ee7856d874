"""The shape of S3 Vectors requests and responses, without the client: the service limits botocore does not
check, a record's vector payload (its metadata within the byte budgets), PutVectors batches, query filters,
the keyword query text and the BM25 scores of a keyword query's results.

`s3vectors_index.S3VectorsIndex` sends what these build; they are pure functions, so the limits are tested
without a client (see that module's docstring for the limits themselves).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Sequence
from typing import Any

from ...domain.errors import TooLarge, ValidationFailed
from ...domain.ports import Hit, IndexEntry, IndexFilter
from ...domain.records import EmbedderIdentity
from ...domain.text import index_terms

logger = logging.getLogger(__name__)

TEXT_KEY = "text"
SENTINEL_KEY = "__embedder__"

MAX_PUT_VECTORS = 500
MAX_GET_KEYS = 100
MAX_DELETE_KEYS = 500
MAX_LIST_VECTORS = 1000
"""ListVectors maxResults (1-1,000 in the service model)."""
MAX_TOP_K = 100
MAX_FILTERABLE_METADATA_BYTES = 2048
MAX_TOTAL_METADATA_BYTES = 40_000
"""The service allows 40 KB of metadata per vector; we stay a little under 40 x 1024 because the service's
exact byte accounting is not published (we count compact JSON in UTF-8)."""
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_QUERY_TEXT_CHARS = 1024


def json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def cut_terms(terms: str, max_bytes: int) -> str:
    """At most `max_bytes` of UTF-8, cut at a character boundary and then back to a whole term."""
    encoded = terms.encode()
    if len(encoded) <= max_bytes:
        return terms
    cut = encoded[:max_bytes].decode("utf-8", errors="ignore")
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def float32_text(values: Sequence[float]) -> list[float]:
    """Values rounded to 9 significant digits, enough to round-trip float32 (the service stores float32):
    nothing is lost and requests shrink by ~30% (measured: 500 x 1024-d, 12.7 MB -> 9.0 MB)."""
    return [float(f"{x:.9g}") for x in values]


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _check_vector(entry: IndexEntry, identity: EmbedderIdentity) -> None:
    if entry.record_id == SENTINEL_KEY or not entry.record_id:
        raise ValidationFailed(f"{entry.record_id!r} is not a usable record id")
    if len(entry.vector) != identity.dimensions:
        raise ValidationFailed(
            f"record {entry.record_id}: vector has {len(entry.vector)} dimensions, the embedder "
            f"{identity.name} produces {identity.dimensions}",
            record_id=entry.record_id,
        )
    if not all(math.isfinite(x) for x in entry.vector):
        raise ValidationFailed(f"record {entry.record_id}: vector contains NaN or infinity")
    if not any(entry.vector):
        raise ValidationFailed(f"record {entry.record_id}: the zero vector has no cosine direction")


def _keyword_text(record_id: str, text: str, filterable: dict[str, Any]) -> str:
    """The record's index terms, cut so that the whole metadata object stays within the total budget."""
    overhead = json_bytes({**filterable, TEXT_KEY: ""})
    terms = " ".join(index_terms(text))
    # JSON escaping can add bytes (quotes, backslashes), so shrink until the whole object fits.
    budget = MAX_TOTAL_METADATA_BYTES - overhead
    cut = cut_terms(terms, budget)
    while json_bytes({**filterable, TEXT_KEY: cut}) > MAX_TOTAL_METADATA_BYTES:
        budget -= 1024
        cut = cut_terms(terms, max(budget, 0))
    if len(cut) < len(terms):
        logger.warning("record %s: keyword text cut to %d bytes", record_id, len(cut.encode()))
    return cut


def vector_payload(entry: IndexEntry, identity: EmbedderIdentity) -> dict[str, Any]:
    """One PutVectors item for a record: its float32 vector, filterable metadata and keyword text."""
    _check_vector(entry, identity)
    filterable = {
        "namespace": entry.namespace,
        "type": entry.type.value,
        "status": entry.status.value,
        "embedder": identity.key,
    }
    filterable_bytes = json_bytes(filterable)
    if filterable_bytes > MAX_FILTERABLE_METADATA_BYTES:
        raise TooLarge(
            f"record {entry.record_id}: {filterable_bytes} bytes of filterable metadata, S3 Vectors "
            f"allows {MAX_FILTERABLE_METADATA_BYTES} (shorten the namespace or the embedder name)",
            record_id=entry.record_id,
        )
    return {
        "key": entry.record_id,
        "data": {"float32": float32_text(entry.vector)},
        "metadata": {**filterable, TEXT_KEY: _keyword_text(entry.record_id, entry.text, filterable)},
    }


def put_batches(vectors: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """At most 500 vectors and about 16 MiB per PutVectors request."""
    batch: list[dict[str, Any]] = []
    size = 0
    for vector in vectors:
        # A 9-digit float takes at most 17 bytes in JSON ("-1.23456789e-05, "), plus key and metadata:
        # a cheap upper bound of the serialised size.
        estimate = (
            17 * len(vector["data"]["float32"]) + json_bytes(vector["metadata"]) + len(vector["key"]) + 64
        )
        if batch and (len(batch) == MAX_PUT_VECTORS or size + estimate > MAX_REQUEST_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(vector)
        size += estimate
    if batch:
        yield batch


def _one_of(values: Sequence[str]) -> dict[str, Any]:
    unique = list(dict.fromkeys(values))
    return {"$eq": unique[0]} if len(unique) == 1 else {"$in": unique}


def query_filter(where: IndexFilter, embedder: str | None) -> dict[str, Any]:
    """A QueryVectors metadata filter for the port's filter (and, for vector queries, the embedder)."""
    clauses: list[dict[str, Any]] = [
        # The sentinel has no namespace, so even an "any namespace" query never returns it.
        {"namespace": _one_of(where.namespaces) if where.namespaces else {"$exists": True}}
    ]
    if where.types:
        clauses.append({"type": _one_of([t.value for t in where.types])})
    if where.statuses:
        clauses.append({"status": _one_of([s.value for s in where.statuses])})
    if embedder is not None:
        clauses.append({"embedder": {"$eq": embedder}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def keyword_query_text(terms: Sequence[str]) -> str:
    """The query's distinct terms joined by spaces, cut at a whole term to the service's 1,024 characters."""
    query = " ".join(dict.fromkeys(terms))
    if len(query) > MAX_QUERY_TEXT_CHARS:
        query = query[:MAX_QUERY_TEXT_CHARS].rsplit(" ", 1)[0]
    return query


def keyword_hits(results: Sequence[dict[str, Any]]) -> list[Hit]:
    """A keyword query's results as hits scored by their BM25 score on `text`."""
    hits = []
    for rank, result in enumerate(results):
        bm25 = [
            s["score"]
            for s in (result.get("scores") or {}).get("bm25Scores", [])
            if s["metadataKey"] == TEXT_KEY
        ]
        # Scores are requested; if the service omits them, keep its order with a decreasing stand-in.
        hits.append(Hit(record_id=result["key"], score=float(bm25[0]) if bm25 else 1.0 / (rank + 1)))
    return hits


def text_config(language: str | None) -> dict[str, Any]:
    """The full-text search configuration of `text` (the service's default analyzer unless a language)."""
    config: dict[str, Any] = {"metadataKey": TEXT_KEY}
    if language:
        config["language"] = language
    return config


def text_search_active(info: dict[str, Any]) -> bool:
    """Whether GetIndex's answer shows `text` full-text searchable and ACTIVE on an ENHANCED index."""
    configs = (info.get("metadataConfiguration") or {}).get("textSearchConfigurations") or []
    return info.get("indexMode", "ENHANCED") == "ENHANCED" and any(
        c.get("metadataKey") == TEXT_KEY and c.get("status", "ACTIVE") == "ACTIVE" for c in configs
    )
