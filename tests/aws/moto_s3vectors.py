"""What moto 5.2.5's S3 Vectors backend lacks, added for the tests (and only for the tests).

moto stores buckets, indexes and vectors but has no QueryVectors (an unmocked call would go to the real
network), forgets an index's metadata configuration, lets CreateIndex silently replace an existing index and
checks none of the per-request maxima. `install(monkeypatch)` patches moto's response class and URL table
for the duration of one test so that:

- QueryVectors ranks by the index's distance metric (cosine or euclidean) over the vectors that pass the
  metadata filter (pre-filtering, as an ENHANCED index does), ranks full-text queries by BM25 over
  `textSearchConfigurations` keys, fuses both with reciprocal rank fusion, honours topK (1-100),
  returnMetadata / returnDistance / returnScores;
- the filter language supports $eq $ne $in $nin $exists $gt $gte $lt $lte $and $or and implicit equality;
  anything else, or a filter on a non-filterable key, is a ValidationException, like the service;
- CreateIndex keeps `metadataConfiguration` (GetIndex returns it, text search ACTIVE, mode ENHANCED) and
  refuses an existing name with ConflictException; UpdateIndexMode / UpdateMetadataConfiguration exist;
  CreateIndex and UpdateMetadataConfiguration answer the `indexArn` the service model requires (every answer
  is checked against that model by tests/aws/test_s3vectors_request_shapes.py);
- PutVectors refuses > 500 vectors, > 2 KB filterable or > 40 KB total metadata, zero or non-finite vectors;
  GetVectors refuses > 100 keys, DeleteVectors > 500.

The BM25 analyzer here is a plain "lowercase, split on non-word characters" one; the adapter sends text it
has already tokenized, so the outcome does not depend on the service's analyzer details.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

import pytest
from moto.core.exceptions import ServiceException
from moto.core.responses import ActionResult, EmptyResult
from moto.s3vectors import urls as s3vectors_urls
from moto.s3vectors.exceptions import ValidationError
from moto.s3vectors.responses import S3VectorsResponse

BM25_K1 = 1.2
BM25_B = 0.75
RRF_K = 60
MAX_FILTERABLE = 2048
MAX_TOTAL = 40 * 1024


class ConflictError(ServiceException):
    code = "ConflictException"


def _metadata_config(index: Any) -> dict[str, Any]:
    return getattr(index, "metadataConfiguration", None) or {}


def _non_filterable(index: Any) -> set[str]:
    return set(_metadata_config(index).get("nonFilterableMetadataKeys") or [])


def _searchable(index: Any) -> set[str]:
    return {c["metadataKey"] for c in _metadata_config(index).get("textSearchConfigurations") or []}


# --------------------------------------------------------------------------- filters

_COMPARISONS = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _values(stored: Any) -> list[Any]:
    return stored if isinstance(stored, list) else [stored]


def _match_condition(metadata: dict[str, Any], key: str, condition: Any, non_filterable: set[str]) -> bool:
    if key in non_filterable:
        raise ValidationError(f"Invalid filter: metadata key '{key}' is not filterable")
    present = key in metadata
    stored = metadata.get(key)
    if not isinstance(condition, dict):
        return present and condition in _values(stored)
    if len(condition) != 1:
        raise ValidationError(f"Invalid filter: expected exactly one operator for '{key}'")
    operator, operand = next(iter(condition.items()))
    if operator == "$eq":
        return present and operand in _values(stored)
    if operator == "$ne":
        return not present or operand not in _values(stored)
    if operator in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand:
            raise ValidationError(f"Invalid filter: {operator} needs a non-empty array")
        hit = present and any(v in operand for v in _values(stored))
        return hit if operator == "$in" else not hit
    if operator == "$exists":
        if not isinstance(operand, bool):
            raise ValidationError("Invalid filter: $exists needs a boolean")
        return present == operand
    if operator in _COMPARISONS:
        if not isinstance(operand, (int, float)) or isinstance(operand, bool):
            raise ValidationError(f"Invalid filter: {operator} needs a number")
        return present and isinstance(stored, (int, float)) and _COMPARISONS[operator](stored, operand)
    raise ValidationError(f"Invalid filter: unsupported operator {operator}")


def matches(metadata: dict[str, Any], flt: Any, non_filterable: set[str]) -> bool:
    if flt is None:
        return True
    if not isinstance(flt, dict) or not flt:
        raise ValidationError("Invalid filter: expected a non-empty object")
    results = []
    for key, condition in flt.items():
        if key in ("$and", "$or"):
            if not isinstance(condition, list) or not condition:
                raise ValidationError(f"Invalid filter: {key} needs a non-empty array")
            parts = [matches(metadata, part, non_filterable) for part in condition]
            results.append(all(parts) if key == "$and" else any(parts))
        elif key.startswith("$"):
            raise ValidationError(f"Invalid filter: unsupported operator {key}")
        else:
            results.append(_match_condition(metadata, key, condition, non_filterable))
    return all(results)


# --------------------------------------------------------------------------- ranking

_WORD = re.compile(r"\w+")


def analyze(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _distance(metric: str, a: list[float], b: list[float]) -> float:
    if metric == "euclidean":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - dot / norm


def _bm25(candidates: list[Any], key: str, query: str) -> list[tuple[Any, float]]:
    docs = {v.key: analyze(str((v.metadata or {}).get(key, ""))) for v in candidates}
    docs = {k: terms for k, terms in docs.items() if terms}
    if not docs:
        return []
    avg_len = sum(len(t) for t in docs.values()) / len(docs)
    terms = list(dict.fromkeys(analyze(query)))
    doc_freq = {t: sum(1 for d in docs.values() if t in d) for t in terms}
    scored = []
    by_key = {v.key: v for v in candidates}
    for doc_key, doc_terms in docs.items():
        counts = Counter(doc_terms)
        score = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (len(docs) - doc_freq[term] + 0.5) / (doc_freq[term] + 0.5))
            score += (
                idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * len(doc_terms) / avg_len))
            )
        if score > 0:
            scored.append((by_key[doc_key], score))
    scored.sort(key=lambda pair: -pair[1])
    return scored


# --------------------------------------------------------------------------- patched handlers


def _index(response: S3VectorsResponse) -> Any:
    return response.s3vectors_backend.get_index(
        response._get_param("vectorBucketName"),
        index_name=response._get_param("indexName"),
        index_arn=response._get_param("indexArn"),
    )


def query_vectors(self: S3VectorsResponse) -> ActionResult:
    index = _index(self)
    top_k = self._get_int_param("topK")
    if top_k is None or not 1 <= top_k <= 100:
        raise ValidationError(
            f"1 validation error detected. Value '{top_k}' at 'topK' failed to satisfy constraint: "
            "Member must have value between 1 and 100"
        )
    query_vector = (self._get_param("queryVector") or {}).get("float32")
    query_texts = self._get_param("queryTexts") or []
    if not query_vector and not query_texts:
        raise ValidationError("A request must include queryVector, queryTexts, or both")
    flt = self._get_param("filter")
    non_filterable = _non_filterable(index)
    candidates = [v for v in index.vectors.values() if matches(v.metadata or {}, flt, non_filterable)]

    rankings: list[list[tuple[Any, float]]] = []
    distances: dict[str, float] = {}
    if query_vector:
        if len(query_vector) != index.dimension:
            raise ValidationError(
                f"Query vector has {len(query_vector)} dimensions, the index has {index.dimension}"
            )
        ranked = sorted(
            ((v, _distance(index.distance_metric, query_vector, v.data["float32"])) for v in candidates),
            key=lambda pair: pair[1],
        )
        distances = {v.key: d for v, d in ranked}
        rankings.append(ranked)
    bm25_scores: dict[str, list[dict[str, Any]]] = {}
    for query_text in query_texts:
        key = query_text["metadataKey"]
        if getattr(index, "indexMode", "ENHANCED") != "ENHANCED" or key not in _searchable(index):
            raise ValidationError(f"Metadata key '{key}' is not full-text searchable in an ENHANCED index")
        ranked = _bm25(candidates, key, query_text["text"])
        for vector, score in ranked:
            bm25_scores.setdefault(vector.key, []).append({"metadataKey": key, "score": score})
        rankings.append(ranked)

    if len(rankings) == 1:
        ordered = [v for v, _ in rankings[0]]
        fused: dict[str, float] = {}
    else:
        fused = {}
        for ranking in rankings:
            for rank, (vector, _) in enumerate(ranking):
                fused[vector.key] = fused.get(vector.key, 0.0) + 1.0 / (RRF_K + rank + 1)
        by_key = {v.key: v for ranking in rankings for v, _ in ranking}
        ordered = [by_key[k] for k in sorted(fused, key=lambda k: -fused[k])]

    results = []
    for vector in ordered[:top_k]:
        result: dict[str, Any] = {"key": vector.key}
        if self._get_bool_param("returnDistance", False) and vector.key in distances:
            result["distance"] = distances[vector.key]
        if self._get_bool_param("returnMetadata", False):
            result["metadata"] = vector.metadata
        if self._get_bool_param("returnScores", False) and query_texts:
            scores: dict[str, Any] = {"bm25Scores": bm25_scores.get(vector.key, [])}
            if fused:
                scores["fused"] = fused[vector.key]
                if vector.key in distances:
                    scores["vectorDistance"] = distances[vector.key]
            result["scores"] = scores
        results.append(result)
    return ActionResult({"vectors": results, "distanceMetric": index.distance_metric})


def _patched_create_index(original: Any) -> Any:
    def create_index(self: S3VectorsResponse) -> Any:
        backend = self.s3vectors_backend
        name = self._get_param("indexName")
        try:
            backend.get_index(self._get_param("vectorBucketName"), index_name=name, index_arn=None)
        except ServiceException:
            pass
        else:
            raise ConflictError(f"An index with the name {name} already exists")
        original(self)
        index = _index(self)
        config = json.loads(json.dumps(self._get_param("metadataConfiguration") or {}))
        for text_config in config.get("textSearchConfigurations") or []:
            text_config["status"] = "ACTIVE"
        index.metadataConfiguration = config
        index.indexMode = "ENHANCED"
        return ActionResult({"indexArn": index.index_arn})  # moto answers {}; the service model requires it

    return create_index


def update_index_mode(self: S3VectorsResponse) -> EmptyResult:
    _index(self).indexMode = self._get_param("indexMode")
    return EmptyResult()


def update_metadata_configuration(self: S3VectorsResponse) -> ActionResult:
    index = _index(self)
    if getattr(index, "indexMode", "ENHANCED") != "ENHANCED":
        raise ValidationError("The vector index must be in ENHANCED mode")
    config = dict(_metadata_config(index))
    existing = list(config.get("textSearchConfigurations") or [])
    for added in (self._get_param("add") or {}).get("textSearchConfigurations") or []:
        existing.append({**added, "status": "ACTIVE"})
    config["textSearchConfigurations"] = existing
    index.metadataConfiguration = config
    return ActionResult({"indexArn": index.index_arn})


def _metadata_bytes(metadata: dict[str, Any]) -> int:
    return len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode())


def _patched_put_vectors(original: Any) -> Any:
    def put_vectors(self: S3VectorsResponse) -> Any:
        vectors = self._get_param("vectors") or []
        if len(vectors) > 500:
            raise ValidationError(
                f"1 validation error detected. Value at 'vectors' failed to satisfy constraint: "
                f"Member must have length less than or equal to 500 (got {len(vectors)})"
            )
        index = _index(self)
        non_filterable = _non_filterable(index)
        for vector in vectors:
            data = vector["data"]["float32"]
            if not all(math.isfinite(x) for x in data):
                raise ValidationError(f"Invalid record for key '{vector['key']}': non-finite value")
            if index.distance_metric == "cosine" and not any(data):
                raise ValidationError(f"Invalid record for key '{vector['key']}': zero vector with cosine")
            metadata = vector.get("metadata") or {}
            filterable = {k: v for k, v in metadata.items() if k not in non_filterable}
            if _metadata_bytes(filterable) > MAX_FILTERABLE or _metadata_bytes(metadata) > MAX_TOTAL:
                raise ValidationError(f"Invalid record for key '{vector['key']}': metadata too large")
        return original(self)

    return put_vectors


def _patched_key_limit(original: Any, limit: int, operation: str) -> Any:
    def handler(self: S3VectorsResponse) -> Any:
        keys = self._get_param("keys") or []
        if len(keys) > limit:
            raise ValidationError(f"{operation}: at most {limit} keys per request (got {len(keys)})")
        return original(self)

    return handler


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    for path in ("QueryVectors", "UpdateIndexMode", "UpdateMetadataConfiguration"):
        monkeypatch.setitem(s3vectors_urls.url_paths, "{0}/" + path + "$", S3VectorsResponse.dispatch)
    monkeypatch.setattr(S3VectorsResponse, "query_vectors", query_vectors, raising=False)
    monkeypatch.setattr(S3VectorsResponse, "update_index_mode", update_index_mode, raising=False)
    monkeypatch.setattr(
        S3VectorsResponse, "update_metadata_configuration", update_metadata_configuration, raising=False
    )
    monkeypatch.setattr(
        S3VectorsResponse, "create_index", _patched_create_index(S3VectorsResponse.create_index)
    )
    monkeypatch.setattr(S3VectorsResponse, "put_vectors", _patched_put_vectors(S3VectorsResponse.put_vectors))
    monkeypatch.setattr(
        S3VectorsResponse, "get_vectors", _patched_key_limit(S3VectorsResponse.get_vectors, 100, "GetVectors")
    )
    monkeypatch.setattr(
        S3VectorsResponse,
        "delete_vectors",
        _patched_key_limit(S3VectorsResponse.delete_vectors, 500, "DeleteVectors"),
    )
