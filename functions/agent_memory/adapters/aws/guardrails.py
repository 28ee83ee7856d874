"""`ContentScreen` on Amazon Bedrock Guardrails (`bedrock-runtime` ApplyGuardrail), the opt-in second opinion
on text that reaches memory files (and so every later session's snapshot).

Request (botocore's bedrock-runtime model): `guardrailIdentifier`, `guardrailVersion`, `source="INPUT"`,
`content=[{"text": {"text": …}}]`, `outputScope="INTERVENTIONS"`. Response: `action` is
`GUARDRAIL_INTERVENED` or `NONE`; `assessments[]` says which policy intervened: `contentPolicy.filters[]`
(`type` PROMPT_ATTACK, …, `action` BLOCKED), `sensitiveInformationPolicy.piiEntities[]` / `.regexes[]`
(`type`, `action` BLOCKED or ANONYMIZED), `topicPolicy`, `wordPolicy`.

Mapping: sensitive information → rule `secret` (never stored); a prompt attack or any other intervention →
rule `prompt_injection`. The finding names the policy and type, never the matched text (it may be the
secret). The stack's guardrail (infra/constructs/content_guardrail.py) blocks prompt attacks and credential
or payment PII; a guardrail configured elsewhere is read the same way.

Retries: `bedrock.Backoff` (full jitter) on throttling and 5xx, then `UpstreamUnavailable`: the write is
refused with 503, never let through unscreened. Access denied or an unknown guardrail is a deployment error:
`UpstreamUnavailable` with what to fix; a ValidationException (e.g. text over the service's limit) is
`ValidationFailed`.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import UpstreamUnavailable, ValidationFailed
from ...domain.safety import PROMPT_INJECTION, SECRET, SafetyFinding
from ._errors import error_code
from .bedrock import RETRYABLE_BEDROCK_CODES, Backoff

DETECTOR = "bedrock guardrail"


class BedrockGuardrailScreen:
    def __init__(
        self, client: Any, guardrail_id: str, version: str, *, backoff: Backoff | None = None
    ) -> None:
        if not guardrail_id:
            raise ValueError("a guardrail id is required")
        self._client = client
        self._id = guardrail_id
        self._version = version
        self._backoff = backoff or Backoff()

    def screen(self, text: str) -> SafetyFinding | None:
        if not text.strip():
            return None
        response = self._backoff.run(lambda: self._apply(text), what=f"Bedrock guardrail {self._id}")
        if response.get("action") != "GUARDRAIL_INTERVENED":
            return None
        return _finding(response.get("assessments") or [], response.get("actionReason") or "")

    def _apply(self, text: str) -> dict[str, Any]:
        try:
            response: dict[str, Any] = self._client.apply_guardrail(
                guardrailIdentifier=self._id,
                guardrailVersion=self._version,
                source="INPUT",
                content=[{"text": {"text": text}}],
                outputScope="INTERVENTIONS",
            )
        except ClientError as error:
            code = error_code(error)
            if code in RETRYABLE_BEDROCK_CODES:
                raise  # Backoff retries these
            message = error.response.get("Error", {}).get("Message", "")
            if code == "ValidationException":
                raise ValidationFailed(
                    f"the Bedrock guardrail refused to assess the text: {message}", aws_error=code
                ) from error
            raise UpstreamUnavailable(
                f"Bedrock guardrail {self._id} (version {self._version}) cannot be applied ({code}: {message}); "
                "check AGENT_MEMORY_GUARDRAIL_ID/_VERSION and that the function's role may call "
                "bedrock:ApplyGuardrail on it",
                aws_error=code,
            ) from error
        return response


def _finding(assessments: list[dict[str, Any]], reason: str) -> SafetyFinding:
    sensitive: list[str] = []
    other: list[str] = []
    for assessment in assessments:
        policy = assessment.get("sensitiveInformationPolicy") or {}
        for entity in policy.get("piiEntities", []):
            if entity.get("action") in ("BLOCKED", "ANONYMIZED"):
                sensitive.append(str(entity.get("type")))
        for regex in policy.get("regexes", []):
            if regex.get("action") in ("BLOCKED", "ANONYMIZED"):
                sensitive.append(f"regex {regex.get('name', '')}".strip())
        for item in (assessment.get("contentPolicy") or {}).get("filters", []):
            if item.get("action") == "BLOCKED":
                other.append(f"{item.get('type')} ({item.get('confidence', '?')} confidence)")
        for topic in (assessment.get("topicPolicy") or {}).get("topics", []):
            if topic.get("action") == "BLOCKED":
                other.append(f"denied topic {topic.get('name')}")
        words = assessment.get("wordPolicy") or {}
        if any(
            w.get("action") == "BLOCKED"
            for w in words.get("customWords", []) + words.get("managedWordLists", [])
        ):
            other.append("word filter")
    if sensitive:
        kinds = ", ".join(sorted(set(sensitive)))
        return SafetyFinding(SECRET, f"Bedrock guardrail: sensitive information ({kinds})", "block", DETECTOR)
    what = ", ".join(other) or reason or "intervened"
    return SafetyFinding(PROMPT_INJECTION, f"Bedrock guardrail: {what}", "block", DETECTOR)
