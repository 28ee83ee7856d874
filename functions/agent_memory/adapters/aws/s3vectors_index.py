"""`SearchIndex` on Amazon S3 Vectors: one vector index per tenant, `mem-<tenant>`, holding both halves of
hybrid recall.

- Vector half: `QueryVectors` with `queryVector` on a cosine, float32 index; the service returns cosine
  *distance*, the port wants similarity, so `score = 1 - distance`.
- Keyword half: S3 Vectors' own full-text search. The index is created with `text` as a non-filterable,
  full-text searchable key (`textSearchConfigurations`, needs index mode ENHANCED, the default for vector
  buckets created since 30 Sep 2026) and `QueryVectors` with `queryTexts` ranks by BM25. So no lexical
  companion index (`kw-<tenant>`) is needed. `text` holds the record's terms as `domain.text.index_terms`
  produces them (stemmed), joined by spaces, and queries go through the same function: the AWS and the local runtime
  agree on what a term is (stopwords, CJK bigrams, snake_case splitting), whatever analyzer the service runs.
- Filterable metadata per vector: `namespace`, `type`, `status`, `embedder` (the identity key). Content is
  never filterable metadata.
- Embedder identity: a sentinel vector (key `__embedder__`, no namespace, so no query ever returns it)
  records which identity wrote the index; `ensure_tenant`, `upsert` and `query_vector` refuse another one
  with `EmbedderMismatch`, and vector queries also filter on `embedder`.

Service limits that botocore does not check are enforced here: PutVectors <= 500 vectors (and <= 16 MiB per
request, under the service's 20 MiB), GetVectors <= 100 keys, DeleteVectors <= 500 keys, topK <= 100,
filterable metadata <= 2 KB (refused with `TooLarge`), total metadata <= 40 KB (`text` is cut at a UTF-8
character and then at a whole term, so keyword search sees the first ~39 KB of terms of a huge record),
query text <= 1,024 characters (cut at a whole term).

Retries: build the client with `S3VECTORS_CLIENT_CONFIG` (botocore "adaptive" mode, 8 attempts: exponential
backoff with jitter on TooManyRequests/ServiceUnavailable/5xx plus client-side rate limiting, which suits
bulk backfills near the per-index write limit). What still fails becomes `UpstreamUnavailable`.

IAM: besides Put/Get/Delete/Query/ListVectors, `ensure_tenant` needs s3vectors:GetIndex and, when it manages
indexes (`manage_indexes=True`, default), CreateIndex, UpdateIndexMode and UpdateMetadataConfiguration on
`index/mem-<tenant>`. Filtered queries need GetVectors as well as QueryVectors (service rule).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

from ...domain.errors import Conflict, EmbedderMismatch, NotFound, ValidationFailed
from ...domain.ports import Hit, IndexEntry, IndexFilter, Vector
from ...domain.records import EmbedderIdentity, Status, is_valid_tenant
from ...domain.text import index_query_terms
from ._errors import error_code, upstream_errors
from .s3vectors_payloads import (
    MAX_DELETE_KEYS,
    MAX_GET_KEYS,
    MAX_LIST_VECTORS,
    MAX_TOP_K,
    MAX_TOTAL_METADATA_BYTES,
    SENTINEL_KEY,
    TEXT_KEY,
    chunks,
    float32_text,
    keyword_hits,
    keyword_query_text,
    put_batches,
    query_filter,
    text_config,
    text_search_active,
    vector_payload,
)

__all__ = [
    "INDEX_PREFIX",
    "MAX_TOTAL_METADATA_BYTES",
    "S3VECTORS_CLIENT_CONFIG",
    "SENTINEL_KEY",
    "TEXT_KEY",
    "S3VectorsIndex",
    "index_name_for",
]

logger = logging.getLogger(__name__)

S3VECTORS_CLIENT_CONFIG = Config(
    retries={"mode": "adaptive", "max_attempts": 8},
    connect_timeout=3,
    read_timeout=30,
)

INDEX_PREFIX = "mem-"
TEXT_SEARCH_RECHECK_SECONDS = 60.0

_INDEX_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")

S3VectorsClientFactory = Callable[[str], Any]
"""tenant -> boto3 `s3vectors` client (tenant-scoped credentials in production, a moto client in tests)."""


def index_name_for(tenant: str, prefix: str = INDEX_PREFIX, suffix: str = "") -> str:
    """`mem-<tenant>` (`mem-<tenant><suffix>`, e.g. `mem-acme.e1`, for an embedding migration's target),
    validated against S3 Vectors' index-name rules (3-63 chars: lowercase letters, digits, hyphens and dots,
    starting and ending with a letter or digit)."""
    if not is_valid_tenant(tenant):
        raise ValidationFailed(f"invalid tenant id {tenant!r}")
    name = f"{prefix}{tenant}{suffix}"
    if not _INDEX_NAME_RE.match(name):
        raise ValidationFailed(
            f"vector index name {name!r} breaks S3 Vectors naming rules (3-63 lowercase letters, digits, "
            "hyphens, dots)"
        )
    return name


@dataclass
class _IndexState:
    """What this process knows about one tenant's index (refreshed on a new container)."""

    exists: bool
    identity_key: str | None = None
    text_search_ready: bool = False
    checked_at: float = 0.0
    """time.monotonic() of the last GetIndex, to re-check a building text index at most once a minute."""


class S3VectorsIndex:
    """Vector + BM25 search over one S3 Vectors index per tenant (see the module docstring)."""

    def __init__(
        self,
        vector_bucket: str,
        client_factory: S3VectorsClientFactory,
        *,
        index_prefix: str = INDEX_PREFIX,
        text_language: str | None = None,
        manage_indexes: bool = True,
        kms_key_arn: str | None = None,
        index_suffix: str = "",
    ) -> None:
        self._suffix = index_suffix
        self._bucket = vector_bucket
        self._client_factory = client_factory
        self._prefix = index_prefix
        self._language = text_language
        self._manage = manage_indexes
        self._kms_key_arn = kms_key_arn
        self._states: dict[str, _IndexState] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ plumbing

    def index_name(self, tenant: str) -> str:
        return index_name_for(tenant, self._prefix, self._suffix)

    def _call(self, tenant: str, operation: str, **params: Any) -> dict[str, Any]:
        client = self._client_factory(tenant)
        method = getattr(client, re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower())
        with upstream_errors("S3 Vectors", operation):
            response: dict[str, Any] = method(
                vectorBucketName=self._bucket, indexName=self.index_name(tenant), **params
            )
        return response

    def _state(self, tenant: str) -> _IndexState | None:
        with self._lock:
            return self._states.get(tenant)

    def _remember(self, tenant: str, state: _IndexState) -> _IndexState:
        with self._lock:
            self._states[tenant] = state
        return state

    def _describe(self, tenant: str) -> dict[str, Any] | None:
        try:
            return self._call(tenant, "GetIndex")["index"]
        except ClientError as error:
            if error_code(error) == "NotFoundException":
                return None
            raise

    def _read_identity(self, tenant: str) -> str | None:
        try:
            vectors = self._call(tenant, "GetVectors", keys=[SENTINEL_KEY], returnMetadata=True)["vectors"]
        except ClientError as error:
            if error_code(error) == "NotFoundException":
                return None
            raise
        return str(vectors[0].get("metadata", {}).get("embedder")) if vectors else None

    def _load_state(self, tenant: str) -> _IndexState:
        """The cached state, or what the service says (one GetIndex + one GetVectors per container)."""
        state = self._state(tenant)
        if state is not None and state.exists:
            return state
        info = self._describe(tenant)
        if info is None:
            return _IndexState(exists=False)  # not cached: the index may be created by another process
        return self._remember(
            tenant,
            _IndexState(
                exists=True,
                identity_key=self._read_identity(tenant),
                text_search_ready=text_search_active(info),
                checked_at=time.monotonic(),
            ),
        )

    @staticmethod
    def _mismatch(tenant: str, stored: str, wanted: EmbedderIdentity) -> EmbedderMismatch:
        return EmbedderMismatch(
            f"the vector index of tenant {tenant!r} holds vectors of {stored}, but this request uses "
            f"{wanted.key}; vectors of different embedders are never mixed (migrate the embedding model "
            "instead)",
            tenant=tenant,
            stored=stored,
            requested=wanted.key,
        )

    # ------------------------------------------------------------------ tenant set-up

    def ensure_tenant(self, tenant: str, identity: EmbedderIdentity) -> None:
        state = self._state(tenant)
        if state is not None and state.exists and state.identity_key == identity.key:
            return  # the fast path of every request after the first in this container
        info = self._describe(tenant)
        if info is None:
            info = self._create_index(tenant, identity)
        self._check_shape(tenant, info, identity)
        if self._manage:
            info = self._enable_text_search(tenant, info)
        stored = self._read_identity(tenant)
        if stored is None:
            self._write_sentinel(tenant, identity)
            stored = identity.key
        elif stored != identity.key:
            raise self._mismatch(tenant, stored, identity)
        self._remember(
            tenant,
            _IndexState(
                exists=True,
                identity_key=stored,
                text_search_ready=text_search_active(info),
                checked_at=time.monotonic(),
            ),
        )

    def _create_index(self, tenant: str, identity: EmbedderIdentity) -> dict[str, Any]:
        name = self.index_name(tenant)
        if not self._manage:
            raise NotFound(
                f"tenant {tenant!r} has no vector index {name!r} and this deployment does not create "
                "indexes; onboard the tenant first",
                tenant=tenant,
            )
        params: dict[str, Any] = {
            "dataType": "float32",
            "dimension": identity.dimensions,
            "distanceMetric": "cosine",
            "metadataConfiguration": {
                "nonFilterableMetadataKeys": [TEXT_KEY],
                "textSearchConfigurations": [text_config(self._language)],
            },
        }
        if self._kms_key_arn:
            params["encryptionConfiguration"] = {"sseType": "aws:kms", "kmsKeyArn": self._kms_key_arn}
        try:
            self._call(tenant, "CreateIndex", **params)
            logger.info("created vector index %s (%d dims)", name, identity.dimensions)
        except ClientError as error:
            if error_code(error) != "ConflictException":
                raise
            # Another request created it a moment ago: fine, use theirs (its shape is checked next).
        info = self._describe(tenant)
        if info is None:
            raise NotFound(f"vector index {name!r} vanished right after it was created; retry", tenant=tenant)
        return info

    def _check_shape(self, tenant: str, info: dict[str, Any], identity: EmbedderIdentity) -> None:
        dimension = int(info.get("dimension", 0))
        if dimension != identity.dimensions:
            stored = self._read_identity(tenant) or f"a {dimension}-dimension model"
            raise EmbedderMismatch(
                f"the vector index of tenant {tenant!r} has {dimension} dimensions ({stored}), but this "
                f"request uses {identity.key}; vectors of different embedders are never mixed",
                tenant=tenant,
                stored=stored,
                requested=identity.key,
            )
        metric = info.get("distanceMetric")
        if metric != "cosine":
            raise Conflict(
                f"the vector index of tenant {tenant!r} uses the {metric} metric; this service needs cosine "
                "(recreate the index)",
                tenant=tenant,
            )

    def _enable_text_search(self, tenant: str, info: dict[str, Any]) -> dict[str, Any]:
        """Indexes created elsewhere (e.g. by CloudFormation, which cannot set text search) are upgraded in
        place: ENHANCED mode, then `text` made full-text searchable. The service backfills; until the
        configuration is ACTIVE keyword queries return nothing and a warning is logged."""
        changed = False
        if info.get("indexMode") == "CLASSIC":
            self._call(tenant, "UpdateIndexMode", indexMode="ENHANCED")
            changed = True
        configs = (info.get("metadataConfiguration") or {}).get("textSearchConfigurations") or []
        if not any(c.get("metadataKey") == TEXT_KEY for c in configs):
            add = {"textSearchConfigurations": [text_config(self._language)]}
            self._call(tenant, "UpdateMetadataConfiguration", add=add)
            changed = True
        if changed:
            logger.warning("enabled full-text search on the vector index of tenant %s", tenant)
            return self._describe(tenant) or info
        return info

    def _write_sentinel(self, tenant: str, identity: EmbedderIdentity) -> None:
        unit = [1.0] + [0.0] * (identity.dimensions - 1)  # cosine forbids the zero vector
        self._call(
            tenant,
            "PutVectors",
            vectors=[
                {"key": SENTINEL_KEY, "data": {"float32": unit}, "metadata": {"embedder": identity.key}}
            ],
        )

    def _require_identity(self, tenant: str, identity: EmbedderIdentity) -> _IndexState:
        state = self._load_state(tenant)
        if state.exists and state.identity_key is not None and state.identity_key != identity.key:
            raise self._mismatch(tenant, state.identity_key, identity)
        return state

    # ------------------------------------------------------------------ writes

    def upsert(self, tenant: str, identity: EmbedderIdentity, entries: Sequence[IndexEntry]) -> None:
        if not entries:
            return
        vectors = [vector_payload(entry, identity) for entry in entries]
        self.ensure_tenant(tenant, identity)
        self._put(tenant, vectors)

    def _put(self, tenant: str, vectors: Sequence[dict[str, Any]]) -> None:
        for batch in put_batches(vectors):
            self._call(tenant, "PutVectors", vectors=list(batch))

    def set_status(self, tenant: str, record_ids: Sequence[str], status: Status) -> None:
        ids = [i for i in dict.fromkeys(record_ids) if i != SENTINEL_KEY]
        if not ids or not self._load_state(tenant).exists:
            return
        changed: list[dict[str, Any]] = []
        for chunk in chunks(ids, MAX_GET_KEYS):
            found = self._call(tenant, "GetVectors", keys=list(chunk), returnData=True, returnMetadata=True)
            for vector in found["vectors"]:
                metadata = dict(vector.get("metadata") or {})
                if metadata.get("status") == status.value:
                    continue
                metadata["status"] = status.value
                changed.append({"key": vector["key"], "data": vector["data"], "metadata": metadata})
        # Read-modify-write: a concurrent upsert of the same record in between would be overwritten with the
        # older vector; the record store (versioned) is the source of truth and `reindex` repairs the index.
        self._put(tenant, changed)

    def delete(self, tenant: str, record_ids: Sequence[str]) -> None:
        ids = [i for i in dict.fromkeys(record_ids) if i != SENTINEL_KEY]
        if not ids:
            return
        for chunk in chunks(ids, MAX_DELETE_KEYS):
            try:
                self._call(tenant, "DeleteVectors", keys=list(chunk))
            except ClientError as error:
                if error_code(error) == "NotFoundException":
                    return  # no index, nothing to delete
                raise

    # ------------------------------------------------------------------ queries

    def _query(self, tenant: str, **params: Any) -> list[dict[str, Any]]:
        try:
            return list(self._call(tenant, "QueryVectors", **params)["vectors"])
        except ClientError as error:
            if error_code(error) == "NotFoundException":
                return []  # the tenant has no index yet: nothing was remembered
            raise

    def query_vector(
        self, tenant: str, identity: EmbedderIdentity, vector: Vector, *, k: int, where: IndexFilter
    ) -> list[Hit]:
        if len(vector) != identity.dimensions:
            raise ValidationFailed(
                f"query vector has {len(vector)} dimensions, the embedder {identity.name} produces "
                f"{identity.dimensions}"
            )
        if k < 1:
            return []
        state = self._require_identity(tenant, identity)
        if not state.exists:
            return []
        results = self._query(
            tenant,
            topK=min(MAX_TOP_K, k),
            queryVector={"float32": float32_text(vector)},
            filter=query_filter(where, identity.key),
            returnDistance=True,
        )
        # Cosine distance = 1 - cosine similarity.
        return [Hit(record_id=r["key"], score=1.0 - float(r["distance"])) for r in results]

    def query_keyword(self, tenant: str, text: str, *, k: int, where: IndexFilter) -> list[Hit]:
        terms = index_query_terms(text)
        if not terms or k < 1:
            return []
        state = self._load_state(tenant)
        if not state.exists:
            return []
        if not state.text_search_ready:
            if time.monotonic() - state.checked_at >= TEXT_SEARCH_RECHECK_SECONDS:
                state = self._remember(tenant, self._refresh_text_search(tenant, state))
            if not state.text_search_ready:
                logger.warning("keyword search of tenant %s is not ready (text index building)", tenant)
                return []
        results = self._query(
            tenant,
            topK=min(MAX_TOP_K, k),
            queryTexts=[{"text": keyword_query_text(terms), "metadataKey": TEXT_KEY}],
            filter=query_filter(where, None),
            returnScores=True,
        )
        return keyword_hits(results)

    def _refresh_text_search(self, tenant: str, state: _IndexState) -> _IndexState:
        info = self._describe(tenant)
        if info is None:
            return _IndexState(exists=False)
        return _IndexState(
            exists=True,
            identity_key=state.identity_key,
            text_search_ready=text_search_active(info),
            checked_at=time.monotonic(),
        )

    # ------------------------------------------------------------------ administration (embedding migration)

    def iter_vectors(self, tenant: str, *, with_data: bool) -> Iterator[dict[str, Any]]:
        """Every vector of the tenant's index but the sentinel, a ListVectors page (<= 1,000) at a time.
        `with_data` also returns data and metadata (the service then requires GetVectors as well)."""
        token: str | None = None
        while True:
            params: dict[str, Any] = {"maxResults": MAX_LIST_VECTORS}
            if with_data:
                params.update(returnData=True, returnMetadata=True)
            if token:
                params["nextToken"] = token
            try:
                page = self._call(tenant, "ListVectors", **params)
            except ClientError as error:
                if error_code(error) == "NotFoundException":
                    return
                raise
            for vector in page.get("vectors", []):
                if vector.get("key") != SENTINEL_KEY:
                    yield vector
            token = page.get("nextToken")
            if not token:
                return

    def count(self, tenant: str) -> int:
        """Vectors in the tenant's index, the sentinel left out (0 when there is no index)."""
        return sum(1 for _ in self.iter_vectors(tenant, with_data=False))

    def drop_index(self, tenant: str) -> None:
        """DeleteIndex (its vectors go with it); an index that is already gone is fine."""
        try:
            self._call(tenant, "DeleteIndex")
        except ClientError as error:
            if error_code(error) != "NotFoundException":
                raise
        with self._lock:
            self._states.pop(tenant, None)
