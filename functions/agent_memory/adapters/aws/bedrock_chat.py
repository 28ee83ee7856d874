"""`ChatModel` on Bedrock Runtime Converse.

The request goes out exactly as the domain built it (`system` with its `cachePoint`, `messages`, `toolConfig`,
`inferenceConfig`): the adapter adds nothing to the prefix, so the prompt cache sees the same bytes on every
turn. Retries are ours (`bedrock.Backoff`: exponential backoff with full jitter on ThrottlingException,
ServiceUnavailableException, ModelNotReadyException, ModelTimeoutException, InternalServerException and
connection errors; build the client with `bedrock.BEDROCK_CLIENT_CONFIG` so botocore does not retry too).

| failure | domain error | HTTP |
|---|---|---|
| still throttled/unavailable after the last attempt | `UpstreamUnavailable` | 503 |
| ValidationException, ModelErrorException, AccessDenied, ResourceNotFound, other model errors | `UpstreamFailed` | 502 |

Only `text` and `toolUse` blocks of the reply are kept: they are what the session history stores (JSON) and
sends back on the next call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import UpstreamFailed
from ...domain.sessions.ports import Message, ModelReply, SystemBlock, Usage
from ._errors import error_code
from .bedrock import RETRYABLE_BEDROCK_CODES, Backoff

_HINTS = {
    "ValidationException": "the model refused the conversation as sent",
    "ModelErrorException": "the model failed while processing the request",
    "AccessDeniedException": "enable model access for this model and allow bedrock:InvokeModel on it and its "
    "inference profile",
    "ResourceNotFoundException": "check the configured model or inference-profile id and region",
    "ServiceQuotaExceededException": "a Bedrock quota is exhausted for this account and region",
}


class BedrockChatModel:
    def __init__(self, client: Any, model_id: str, *, backoff: Backoff | None = None) -> None:
        self._client = client
        self._model_id = model_id
        self._backoff = backoff or Backoff()

    @property
    def model_id(self) -> str:
        return self._model_id

    def converse(
        self,
        *,
        system: Sequence[SystemBlock],
        messages: Sequence[Message],
        tool_config: Mapping[str, Any] | None,
        inference_config: Mapping[str, Any],
    ) -> ModelReply:
        request: dict[str, Any] = {
            "modelId": self._model_id,
            "system": list(system),
            "messages": list(messages),
            "inferenceConfig": dict(inference_config),
        }
        if tool_config:
            request["toolConfig"] = dict(tool_config)
        what = f"Converse with {self._model_id}"

        def call() -> dict[str, Any]:
            try:
                response: dict[str, Any] = self._client.converse(**request)
            except ClientError as error:
                code = error_code(error)
                if code in RETRYABLE_BEDROCK_CODES:
                    raise  # Backoff retries these, then answers UpstreamUnavailable
                message = error.response.get("Error", {}).get("Message", "")
                hint = _HINTS.get(code, "the model call failed")
                raise UpstreamFailed(f"{what} failed: {hint} ({code}: {message})", aws_error=code) from error
            return response

        response = self._backoff.run(call, what=what)
        content = response.get("output", {}).get("message", {}).get("content", []) or []
        kept = [
            {"text": block["text"]} if "text" in block else {"toolUse": block["toolUse"]}
            for block in content
            if "text" in block or "toolUse" in block
        ]
        return ModelReply(
            content=kept,
            stop_reason=str(response.get("stopReason", "")),
            usage=Usage.from_bedrock(response.get("usage", {})),
        )
