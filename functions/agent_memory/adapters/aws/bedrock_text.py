"""`TextModel` on Bedrock Runtime Converse: the chat model behind dreaming's LLM extraction strategies and the
optional write judge (`JudgeModel`: `complete_with_usage` also returns Converse's token usage).

Request: `converse(modelId, system=[{"text": ...}], messages=[{"role": "user", "content": [{"text": ...}]}],
inferenceConfig={"maxTokens", "temperature": 0})`; the answer is the text blocks of `output.message.content`.
Retries (throttling, model not ready, 5xx, connection errors) use the same bounded full-jitter `Backoff` as the
embedder, then `UpstreamUnavailable`; build the client with `BEDROCK_CLIENT_CONFIG` (botocore retries off).
"""

from __future__ import annotations

from typing import Any

from ...domain.errors import UpstreamUnavailable
from ...domain.memory.write_judge import Completion
from .bedrock import Backoff


class BedrockTextModel:
    def __init__(self, client: Any, model_id: str, *, backoff: Backoff | None = None) -> None:
        if not model_id:
            raise ValueError("a Bedrock model id is required (e.g. anthropic.claude-3-5-haiku-20241022-v1:0)")
        self._client = client
        self._model_id = model_id
        self._backoff = backoff or Backoff(max_attempts=4)

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2000) -> str:
        return self.complete_with_usage(system=system, prompt=prompt, max_tokens=max_tokens).text

    def complete_with_usage(self, *, system: str, prompt: str, max_tokens: int = 2000) -> Completion:
        """The answer and Converse's `usage` (input and output tokens), for the write judge's cost figures."""

        def call() -> dict[str, Any]:
            response: dict[str, Any] = self._client.converse(
                modelId=self._model_id,
                system=[{"text": system}],
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                inferenceConfig={"maxTokens": max_tokens, "temperature": 0.0},
            )
            return response

        response = self._backoff.run(call, what=f"extraction with {self._model_id}")
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        text = "".join(block.get("text", "") for block in blocks if isinstance(block, dict))
        if not text and response.get("stopReason") not in ("end_turn", "stop_sequence", "max_tokens"):
            raise UpstreamUnavailable(
                f"{self._model_id} returned no text (stopReason {response.get('stopReason')!r})",
                model_id=self._model_id,
            )
        usage = response.get("usage") or {}
        return Completion(
            text=text,
            input_tokens=int(usage.get("inputTokens") or 0),
            output_tokens=int(usage.get("outputTokens") or 0),
        )
