"""What every detector of the safety scan reports: rule names, severities, detector names, the finding, and the
pattern record the text rules are written in."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from .. import credentials
from ..patterns import LazyPattern, lazy

Severity = Literal["block", "quarantine"]

INVISIBLE_UNICODE = "invisible_unicode"
BIDI_CONTROL = "bidi_control"
PROMPT_INJECTION = "prompt_injection"
AGENT_DIRECTIVE = "agent_directive"
SECRET = "secret"

RULES: tuple[str, ...] = (INVISIBLE_UNICODE, BIDI_CONTROL, PROMPT_INJECTION, AGENT_DIRECTIVE, SECRET)
"""Every rule name the scan can report, in the order findings are returned."""


@dataclass(frozen=True)
class SafetyFinding:
    rule: str
    detail: str
    severity: Severity
    detector: str = field(default="", compare=False)
    """Which detector found it (`DETECTORS`): what `bench/safety_scan.py` reports precision and recall by."""


UNICODE_DETECTOR = "unicode"
PATTERN_DETECTOR = "patterns"
OBFUSCATION_DETECTOR = "obfuscation"
BASE64_DETECTOR = "base64"
MARKDOWN_IMAGE_DETECTOR = "markdown image"
SECRET_PATTERN_DETECTOR = "secret patterns"
LOOKALIKE_DETECTOR = "look-alikes"
DETECTORS: tuple[str, ...] = (
    UNICODE_DETECTOR,
    PATTERN_DETECTOR,
    OBFUSCATION_DETECTOR,
    BASE64_DETECTOR,
    MARKDOWN_IMAGE_DETECTOR,
    SECRET_PATTERN_DETECTOR,
    LOOKALIKE_DETECTOR,
    credentials.DETECT_SECRETS,
    credentials.URL_CREDENTIALS,
    credentials.PASSWORD_STATEMENT,
    credentials.PAYMENT_CARD,
)

# --------------------------------------------------------------------------- text rules


@dataclass(frozen=True)
class _Pattern:
    rule: str
    label: str
    regex: LazyPattern
    severity: Severity
    detector: str = PATTERN_DETECTOR


def _p(
    rule: str,
    label: str,
    pattern: str,
    severity: Severity = "block",
    flags: int = 0,
    detector: str = PATTERN_DETECTOR,
) -> _Pattern:
    return _Pattern(rule, label, lazy(pattern, re.IGNORECASE | flags), severity, detector)


def _snippet(matched: str, limit: int = 60) -> str:
    flat = " ".join(matched.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
