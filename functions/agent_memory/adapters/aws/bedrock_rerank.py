"""`Reranker` on Amazon Bedrock's Rerank API (bedrock-agent-runtime `Rerank`): recall's optional second stage.

Request (botocore's bedrock-agent-runtime 2023-07-26 model, the pinned botocore 1.44.8):
`rerank(queries=[{"type": "TEXT", "textQuery": {"text": q}}], sources=[{"type": "INLINE",
"inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": d}}}, ...], rerankingConfiguration={"type":
"BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {"numberOfResults": n, "modelConfiguration":
{"modelArn": arn}}})`: exactly one query, 1-1,000 sources, each text ≤ 32,000 characters, numberOfResults
1-1,000. Answer: `results=[{"index": i, "relevanceScore": s}, ...]`, most relevant first.

IAM: `bedrock:Rerank` (the Service Authorization Reference gives it no resource type: `*`) and
`bedrock:InvokeModel` on the model's foundation-model ARN; the function's own role (model calls carry no
tenant data access). Models: `amazon.rerank-v1:0` (Amazon Rerank 1.0) and `cohere.rerank-v3-5:0` (Cohere
Rerank 3.5); Regions: docs/reference/recall.md.

Bounded: `RERANK_CLIENT_CONFIG` (no retry, 1 s to connect, 2 s per read). Recall then keeps its hybrid order
on any failure rather than wait or fail: throttling, 5xx and timeouts become `UpstreamUnavailable`, every other
refusal `UpstreamFailed` (domain/memory/reranking.py turns either into a marked fallback)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ...domain.errors import UpstreamFailed, UpstreamUnavailable
from ...domain.memory.ports import RerankedDocument
from ._errors import CONNECTION_ERRORS, error_code, is_retryable

RERANK_MODELS = ("amazon.rerank-v1:0", "cohere.rerank-v3-5:0")
MAX_SOURCES = 1000
MAX_TEXT_CHARS = 32_000

RERANK_CLIENT_CONFIG = Config(
    retries={"total_max_attempts": 1, "mode": "standard"},
    connect_timeout=1,
    read_timeout=2,
)
"""No retry and short timeouts: a reranker that is slow or throttled costs a recall at most ~3 s before the
hybrid order is kept (a retry would only add its wait to an answer that is already good)."""


class BedrockReranker:
    name = "bedrock"

    def __init__(self, client: Any, model_id: str) -> None:
        if not model_id:
            raise ValueError(f"a Bedrock rerank model id is required (one of {list(RERANK_MODELS)})")
        self._client = client
        self.model = model_id
        self.model_arn = (
            model_id
            if model_id.startswith("arn:")
            else f"arn:{client.meta.partition}:bedrock:{client.meta.region_name}::foundation-model/{model_id}"
        )

    def rerank(self, query: str, documents: Sequence[str]) -> list[RerankedDocument]:
        if not documents:
            return []
        if len(documents) > MAX_SOURCES:
            raise ValueError(f"the Rerank API takes at most {MAX_SOURCES} documents; got {len(documents)}")
        try:
            response = self._client.rerank(**self.request(query, documents))
        except (ClientError, *CONNECTION_ERRORS) as error:
            code = error_code(error) if isinstance(error, ClientError) else type(error).__name__
            kind = UpstreamUnavailable if is_retryable(error) else UpstreamFailed
            raise kind(
                f"Bedrock Rerank with {self.model} failed ({code})", model_id=self.model, aws_error=code
            ) from error
        except (
            BotoCoreError
        ) as error:  # a request botocore refuses to send, a credentials or endpoint problem
            raise UpstreamFailed(
                f"Bedrock Rerank with {self.model} could not be sent ({type(error).__name__})",
                model_id=self.model,
            ) from error
        results = [
            RerankedDocument(int(item["index"]), float(item["relevanceScore"]))
            for item in response["results"]
        ]
        return sorted(results, key=lambda item: -item.score)

    def request(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        return {
            "queries": [{"type": "TEXT", "textQuery": {"text": query[:MAX_TEXT_CHARS]}}],
            "sources": [
                {
                    "type": "INLINE",
                    "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text[:MAX_TEXT_CHARS]}},
                }
                for text in documents
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": len(documents),
                    "modelConfiguration": {"modelArn": self.model_arn},
                },
            },
        }
