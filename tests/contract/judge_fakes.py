"""Test doubles for the optional LLM write judge: one script (prompt → answer text, or an exception) behind

- `ScriptedJudge`: the `JudgeModel` port itself (the local runtime's explicit model port), and
- `scripted_converse(script)`: a real `bedrock-runtime` client whose Converse calls the script answers. botocore
  still validates the request against the service model and the IAM recorder still sees the call; only the
  HTTP exchange is replaced (a `before-call` handler, the hook botocore's own Stubber uses).

Both record the prompts they were asked and report fixed token usage (INPUT_TOKENS, OUTPUT_TOKENS)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

from agent_memory.domain.memory.write_judge import Completion

Script = Callable[[str], "str | Exception"]
INPUT_TOKENS = 412
OUTPUT_TOKENS = 23


def verdict(action: str, target: str | None, reason: str = "the fact changed") -> str:
    return json.dumps({"action": action, "id": target, "reason": reason})


class ScriptedJudge:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.prompts: list[str] = []

    def complete_with_usage(self, *, system: str, prompt: str, max_tokens: int = 2000) -> Completion:
        self.prompts.append(prompt)
        answer = self.script(prompt)
        if isinstance(answer, Exception):
            raise answer
        return Completion(answer, INPUT_TOKENS, OUTPUT_TOKENS)


def scripted_converse(script: Script, region: str) -> tuple[Any, list[dict[str, Any]]]:
    """A bedrock-runtime client answering Converse from `script`, and the list of the requests it received."""
    client = boto3.client("bedrock-runtime", region_name=region)
    requests: list[dict[str, Any]] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        requests.append(params)

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        prompt = requests[-1]["messages"][0]["content"][0]["text"]
        result = script(prompt)
        if isinstance(result, Exception):
            raise result
        return AWSResponse(None, 200, {}, None), {
            "output": {"message": {"role": "assistant", "content": [{"text": result}]}},
            "stopReason": "end_turn",
            "usage": {
                "inputTokens": INPUT_TOKENS,
                "outputTokens": OUTPUT_TOKENS,
                "totalTokens": INPUT_TOKENS + OUTPUT_TOKENS,
            },
            "metrics": {"latencyMs": 300},
        }

    client.meta.events.register("before-parameter-build.bedrock-runtime.Converse", capture)
    client.meta.events.register("before-call.bedrock-runtime.Converse", answer)
    return client, requests
