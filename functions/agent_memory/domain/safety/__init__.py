"""Content safety scan for text that will later be injected into an agent's prompt (records, memory files).

Memory is a persistence channel for prompt injection: a line written today is replayed into every future
session. The scan therefore looks for five things, each a stable rule name that appears in errors, audit
records and metrics:

- `invisible_unicode`: zero-width, word-joiner, invisible-operator, BOM, tag and variation-selector characters
  used to hide text from the human reviewing a memory while the model still reads it;
- `bidi_control`: bidirectional embedding/override/isolate controls ("Trojan Source" reordering);
- `prompt_injection`: attempts to replace the agent's instructions or forge chat-template role markers;
- `agent_directive`: orders aimed at the agent instead of facts about the world (conceal from the user,
  pipe remote scripts into a shell, send data to a URL, "from now on you must");
- `secret`: credentials that must never be persisted in memory.

Severity `block` means the content must not be stored as-is; `quarantine` means it is plausible but
suspicious (e.g. "always respond with …" can be a genuine preference), so it may be kept for human review but
never recalled. The caller decides what to do with each severity.

Every pattern is precompiled, anchored on literal words and uses only bounded repetition, so a scan is linear
in the text length (no catastrophic backtracking) — important because content comes from untrusted agents.
English, Chinese, German, French, Spanish, Italian and Portuguese phrasings are covered, and look-alike
letters (Cyrillic "І" for Latin "I") are folded to the letters they imitate before the text rules read them.
Known limit: paraphrased injections are not detected; this is a tripwire, not a guarantee.

The package, by responsibility: `findings` (rules, severities, detectors), `hidden` (invisible and bidi
characters), `injection` and `directives` (the English and Chinese text rules), `languages` (the European
phrasings), `secrets`, `obfuscation` (spelled-out words, leetspeak, look-alike letters), `encoded` (base64),
`fields` (every text field of a write, one decision).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from . import lookalikes
from .directives import _DIRECTIVE_PATTERNS, _scan_patterns
from .encoded import _scan_encoded
from .findings import (
    AGENT_DIRECTIVE,
    BASE64_DETECTOR,
    BIDI_CONTROL,
    DETECTORS,
    INVISIBLE_UNICODE,
    LOOKALIKE_DETECTOR,
    MARKDOWN_IMAGE_DETECTOR,
    OBFUSCATION_DETECTOR,
    PATTERN_DETECTOR,
    PROMPT_INJECTION,
    RULES,
    SECRET,
    SECRET_PATTERN_DETECTOR,
    UNICODE_DETECTOR,
    SafetyFinding,
    Severity,
)
from .hidden import _BOM, _scan_bidi, _scan_invisible, _visible
from .injection import _INJECTION_PATTERNS
from .obfuscation import _scan_obfuscated
from .secrets import _scan_secrets

__all__ = [
    "AGENT_DIRECTIVE",
    "BASE64_DETECTOR",
    "BIDI_CONTROL",
    "DETECTORS",
    "INVISIBLE_UNICODE",
    "LOOKALIKE_DETECTOR",
    "MARKDOWN_IMAGE_DETECTOR",
    "OBFUSCATION_DETECTOR",
    "PATTERN_DETECTOR",
    "PROMPT_INJECTION",
    "RULES",
    "SECRET",
    "SECRET_PATTERN_DETECTOR",
    "UNICODE_DETECTOR",
    "ContentScreen",
    "SafetyFinding",
    "Severity",
    "first_rule",
    "first_rule_with",
    "normalise",
    "refusing_rule",
    "scan",
]


def _rescan(decoded: str, depth: int) -> list[SafetyFinding]:
    return _scan_text(_visible(decoded), depth)


def _scan_lookalikes(visible: str, depth: int) -> Iterator[SafetyFinding]:
    """The text rules on `visible` with look-alike letters folded to the Latin ones they imitate. Hiding a
    phrase that way is the tell, so whatever the folded text trips blocks."""
    folded = lookalikes.fold(visible)
    if folded == visible:
        return
    for finding in _scan_text(folded, depth):
        yield SafetyFinding(
            finding.rule, f"look-alike letters: {finding.detail}", "block", LOOKALIKE_DETECTOR
        )


def _scan_text(visible: str, depth: int) -> list[SafetyFinding]:
    """The text rules on what a reader sees, then on the obfuscated and encoded forms it may hide, each only
    for rules the plain text does not already block."""
    findings = [
        *_scan_patterns(visible, _INJECTION_PATTERNS),
        *_scan_patterns(visible, _DIRECTIVE_PATTERNS),
        *_scan_secrets(visible),
    ]
    extras = (
        _scan_obfuscated(visible),
        _scan_lookalikes(visible, depth),
        _scan_encoded(visible, depth, _rescan),
    )
    for extra in extras:
        blocking = {f.rule for f in findings if f.severity == "block"}
        findings.extend(f for f in extra if f.rule not in blocking)
    return findings


def scan(text: str) -> list[SafetyFinding]:
    """All findings for `text`, grouped by rule in `RULES` order. An empty list means nothing was found."""
    if not text:
        return []
    findings: list[SafetyFinding] = [*_scan_invisible(text), *_scan_bidi(text)]
    findings.extend(_scan_text(_visible(text), 0))
    findings.sort(key=lambda finding: RULES.index(finding.rule))
    # A weaker pattern of a rule that already blocks adds nothing but noise to the audit record.
    blocking = {finding.rule for finding in findings if finding.severity == "block"}
    return [f for f in findings if f.severity == "block" or f.rule not in blocking]


def normalise(text: str) -> str:
    """`text` as it should be stored: without leading byte-order marks (an editor's encoding marker, invisible
    and meaningless inside a note). Everything else invisible is left for `scan` to refuse: tag characters,
    zero-width characters inside words and runs of variation selectors carry hidden text."""
    return text.lstrip(_BOM)


def first_rule(text: str) -> str | None:
    """Name of the first rule that blocks `text`, or None. Findings of severity `quarantine` do not count:
    memory files have no quarantine, and those phrasings ("always respond with …") are legitimate notes there."""
    for finding in scan(text):
        if finding.severity == "block":
            return finding.rule
    return None


def refusing_rule(text: str) -> str | None:
    """Name of the first rule with any finding in `text`, quarantine ones included, or None: the check for
    writes that have no quarantine state (memory-file entries, the daily log, skills, reasons, notes, imports
    into files). What a memory would quarantine ("Always respond with 'APPROVED'") is refused there, so it
    cannot reach a session snapshot by another door (`fields` module)."""
    findings = scan(text)
    return findings[0].rule if findings else None


# --------------------------------------------------------------------------- an optional second opinion


class ContentScreen(Protocol):
    """A managed classifier consulted after the scan on text that reaches memory files, and through them every
    later session's snapshot: in AWS, opt-in, Amazon Bedrock Guardrails (`adapters/aws/guardrails.py`).

    `screen` returns a blocking finding (rule `prompt_injection` for a prompt attack, `secret` for sensitive
    information) or None. When it cannot answer it raises `UpstreamUnavailable`: the write is refused with a
    503 and may be retried, never let through unscreened."""

    def screen(self, text: str) -> SafetyFinding | None: ...


def first_rule_with(
    screen: ContentScreen | None, rule_of: Callable[[str], str | None] | None = None
) -> Callable[[str], str | None]:
    """`rule_of` (`first_rule` unless given), then (only for text it lets through) the screen's verdict."""
    first = rule_of or first_rule
    if screen is None:
        return first

    def scan_then_screen(text: str) -> str | None:
        rule = first(text)
        if rule is not None:
            return rule
        finding = screen.screen(text)
        return finding.rule if finding is not None and finding.severity == "block" else None

    return scan_then_screen
