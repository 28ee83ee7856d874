"""Bedrock adapters: Titan Text Embeddings v2 behind the `Embedder` port, and a token counter.

Titan v2 (`amazon.titan-embed-text-v2:0`) takes one text per InvokeModel call:
request `{"inputText": str, "dimensions": 256|512|1024, "normalize": bool}`, response
`{"embedding": [float, ...], "inputTextTokenCount": int, ...}`; at most 8,192 tokens / 50,000 characters.
Batches therefore fan out over a small thread pool (boto3 clients are thread-safe), bounded by
`max_concurrency` because Bedrock throttles embedding models by requests per minute.

Retries are ours, not botocore's (`domain.retry`: exponential backoff with full jitter, a random pause in
[0, min(cap, base * 2^attempt)], and a deadline) on ThrottlingException, ServiceUnavailableException, ModelNotReadyException,
ModelTimeoutException, InternalServerException and connection errors, then `UpstreamUnavailable`. Build the
client with `BEDROCK_CLIENT_CONFIG` (botocore retries off) so attempts do not multiply.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from botocore.config import Config
from botocore.exceptions import ClientError

from ...domain.errors import TooLarge, UpstreamUnavailable, ValidationFailed
from ...domain.ports import Vector
from ...domain.records import EmbedderIdentity
from ...domain.retry import BEDROCK, Exhausted, Retry, RetryPolicy
from ._errors import CONNECTION_ERRORS, error_code

logger = logging.getLogger(__name__)

TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
TITAN_V2_MAX_CHARS = 50_000

BEDROCK_CLIENT_CONFIG = Config(
    retries={"total_max_attempts": 1, "mode": "standard"},
    connect_timeout=3,
    read_timeout=60,
)

RETRYABLE_BEDROCK_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "InternalServerException",
    }
)

T = TypeVar("T")


class Backoff:
    """Bedrock's bounded retries: `domain.retry.Retry` (full jitter, attempts and a deadline) on the retryable
    Bedrock codes and connection errors, then one `UpstreamUnavailable` (503). `sleep`, `clock` and `rand` are
    injectable so tests neither wait nor depend on chance."""

    def __init__(
        self,
        *,
        max_attempts: int = BEDROCK.max_attempts,
        base_delay: float = BEDROCK.base_delay,
        max_delay: float = BEDROCK.max_delay,
        deadline: float = BEDROCK.deadline,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        policy = RetryPolicy(max_attempts, base_delay, max_delay, deadline)
        self.max_attempts = max_attempts
        self._retry = Retry(policy, sleep=sleep, clock=clock, rand=rand)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (0-based)."""
        return self._retry.delay(attempt)

    def run(self, call: Callable[[], T], *, what: str) -> T:
        try:
            return self._retry.call(call, retry_on=_retryable, give_up=lambda spent: _gave_up(spent, what))
        except ClientError as error:  # not retryable: the caller's or the deployment's problem
            raise _translate(error, what) from error


def _retryable(error: Exception) -> bool:
    if isinstance(error, ClientError):
        return error_code(error) in RETRYABLE_BEDROCK_CODES
    return isinstance(error, CONNECTION_ERRORS)


def _gave_up(spent: Exhausted, what: str) -> UpstreamUnavailable:
    error = spent.last_error
    code = error_code(error) if isinstance(error, ClientError) else type(error).__name__
    logger.info("%s: %s after %d attempts (%.1fs)", what, code, spent.attempts, spent.elapsed)
    return UpstreamUnavailable(
        f"{what} failed {spent.attempts} times ({code}); Bedrock is throttling or unavailable, retry in a minute",
        attempts=spent.attempts,
        aws_error=code,
        retry_after_seconds=BEDROCK.retry_after,
    )


def _translate(error: ClientError, what: str) -> Exception:
    code = error_code(error)
    message = error.response.get("Error", {}).get("Message", "")
    if code == "ValidationException":
        return ValidationFailed(f"{what} was refused by Bedrock: {message}", aws_error=code)
    if code in ("AccessDeniedException", "ResourceNotFoundException"):
        # Not retryable, and not the caller's fault: model access or IAM is not set up for this model.
        return UpstreamUnavailable(
            f"{what}: Bedrock denied the call ({code}: {message}); enable model access for this model and "
            "allow bedrock:InvokeModel on it",
            aws_error=code,
        )
    return error


class TitanEmbedder:
    """`Embedder` on Bedrock Titan Text Embeddings (v2 request/response shapes)."""

    def __init__(
        self,
        client: Any,
        model_id: str = TITAN_V2_MODEL_ID,
        dimensions: int = 1024,
        normalize: bool = True,
        max_concurrency: int = 4,
        *,
        backoff: Backoff | None = None,
    ) -> None:
        if model_id.startswith("amazon.titan-embed-text-v2") and dimensions not in TITAN_V2_DIMENSIONS:
            raise ValueError(
                f"Titan Text Embeddings v2 supports {TITAN_V2_DIMENSIONS} dimensions, not {dimensions}"
            )
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._client = client
        self._model_id = model_id
        self._dimensions = dimensions
        self._normalize = normalize
        self._max_concurrency = max_concurrency
        self._backoff = backoff or Backoff()
        self._identity = EmbedderIdentity(name=model_id, dimensions=dimensions, normalized=normalize)

    @property
    def identity(self) -> EmbedderIdentity:
        return self._identity

    def embed_query(self, text: str) -> Vector:
        return self._embed(text)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        for text in texts:
            self._check(text)
        if len(texts) <= 1:
            return [self._embed(text) for text in texts]
        with ThreadPoolExecutor(max_workers=min(self._max_concurrency, len(texts))) as pool:
            return list(pool.map(self._embed, texts))  # map keeps the input order

    def _check(self, text: str) -> None:
        if not text.strip():
            raise ValidationFailed("cannot embed empty text")
        if len(text) > TITAN_V2_MAX_CHARS:
            raise TooLarge(
                f"text of {len(text)} characters exceeds the embedding model's {TITAN_V2_MAX_CHARS}",
                chars=len(text),
                limit=TITAN_V2_MAX_CHARS,
            )

    def _embed(self, text: str) -> Vector:
        self._check(text)
        body = json.dumps({"inputText": text, "dimensions": self._dimensions, "normalize": self._normalize})

        def invoke() -> dict[str, Any]:
            response = self._client.invoke_model(
                modelId=self._model_id, body=body, contentType="application/json", accept="application/json"
            )
            payload: dict[str, Any] = json.loads(response["body"].read())
            return payload

        payload = self._backoff.run(invoke, what=f"embedding with {self._model_id}")
        embedding = payload.get("embedding")
        if not isinstance(embedding, list) or len(embedding) != self._dimensions:
            got = len(embedding) if isinstance(embedding, list) else "no"
            raise UpstreamUnavailable(
                f"{self._model_id} returned {got} dimensions instead of {self._dimensions}",
                model_id=self._model_id,
            )
        return [float(x) for x in embedding]


class BedrockTokenCounter:
    """Exact input-token count of a Converse request, from Bedrock Runtime `CountTokens` (free of charge,
    supported by some model families only, e.g. Anthropic Claude; others answer ValidationException)."""

    def __init__(self, client: Any, model_id: str, *, backoff: Backoff | None = None) -> None:
        self._client = client
        self._model_id = model_id
        self._backoff = backoff or Backoff(max_attempts=3)

    def count(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Sequence[Mapping[str, Any]] | None = None,
        tool_config: Mapping[str, Any] | None = None,
    ) -> int:
        """Tokens of Converse-shaped input: `messages` like `[{"role": "user", "content": [{"text": ...}]}]`,
        optional `system` blocks (`[{"text": ...}, {"cachePoint": {"type": "default"}}]`)."""
        converse: dict[str, Any] = {"messages": [dict(m) for m in messages]}
        if system:
            converse["system"] = [dict(block) for block in system]
        if tool_config:
            converse["toolConfig"] = dict(tool_config)

        def call() -> dict[str, Any]:
            response: dict[str, Any] = self._client.count_tokens(
                modelId=self._model_id, input={"converse": converse}
            )
            return response

        response = self._backoff.run(call, what=f"counting tokens with {self._model_id}")
        return int(response["inputTokens"])
