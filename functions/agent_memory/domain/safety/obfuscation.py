"""Obfuscated text: words spelled out ("i g n o r e") or written with look-alike digits ("1gn0re"), read again
with the spelling undone."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..patterns import lazy
from .directives import _DIRECTIVE_PATTERNS, _scan_patterns
from .findings import OBFUSCATION_DETECTOR, PROMPT_INJECTION, SafetyFinding, _snippet
from .injection import _INJECTION_PATTERNS

# Text that spells words out ("i g n o r e", "i.g.n.o.r.e") or swaps letters for look-alike digits and
# symbols ("1gn0re pr3vious"). Only such text gets the extra views below, and a match in the letters-only
# view counts only where the original is itself obfuscated, so ordinary prose is never re-read.
_SPACED_RUN_RE = lazy(r"(?<![^\W_])(?:[^\W_][ \t._*~·•-]){2,}[^\W_](?![^\W_])")
# Bounded runs and anchored starts keep both linear (an unbounded `[0-9]+[A-Za-z]` is quadratic on digits).
_LEET_WORD_RE = lazy(
    r"[A-Za-z][0-9@$!|]{1,3}[A-Za-z]|(?<![0-9@$|])[0-9@$|]{1,3}[A-Za-z]{2}|[A-Za-z]{2}[0-9@$|]{1,3}(?![0-9])"
)
_LEET_TOKEN_RE = lazy(r"(?<![A-Za-z0-9@$!|])[A-Za-z0-9@$!|]+")
_LEET_I = str.maketrans("013457@$!|8", "oieastasilb")
_LEET_L = str.maketrans("013457@$!|8", "oleastasllb")
_SQUASHED_RE = lazy(
    r"(?:ignore|disregard|forget|override|bypass)(?:all|any|the|your|my|of|these|those|every){0,4}"
    r"(?:previous|prior|above|earlier|preceding|initial|original|system|developer)"
    r"(?:and|or|all|the|your|system|safety){0,2}"
    r"(?:instructions?|prompts?|directions|directives?|rules|guidelines|guardrails|context|commands)"
    r"|(?:ignore|disregard)(?:allof)?theabove|(?:reveal|print|show|leak|dump)(?:me)?(?:your|the)systemprompt"
    r"|newsystem(?:prompt|instructions?)|youarenow(?:dan|unrestricted|unfiltered|uncensored|jailbroken|evil)"
    r"|(?:donot|dont|never)(?:tell|inform|alert)(?:the)?user|jailbreakmode|doanythingnow"
)


def _obfuscated(text: str) -> bool:
    return bool(_SPACED_RUN_RE.search(text) or _LEET_WORD_RE.search(text))


def _despaced(text: str, leet: dict[int, int]) -> str:
    """Spelled-out runs joined ("i g n o r e" → "ignore"), look-alike characters inside words mapped back."""
    joined = _SPACED_RUN_RE.sub(lambda m: re.sub(r"[ \t._*~·•-]", "", m.group()), text)
    return _LEET_TOKEN_RE.sub(
        lambda m: (
            m.group().translate(leet)
            if len(m.group()) <= 64 and _LEET_WORD_RE.search(m.group())
            else m.group()
        ),
        joined,
    )


def _squashed(text: str, leet: dict[int, int]) -> tuple[str, list[int]]:
    """Letters only, lower case, look-alikes mapped; with the original offset of every kept letter."""
    letters: list[str] = []
    offsets: list[int] = []
    for index, char in enumerate(text.lower().translate(leet)):
        if "a" <= char <= "z":
            letters.append(char)
            offsets.append(index)
    return "".join(letters), offsets


def _scan_obfuscated(text: str) -> Iterator[SafetyFinding]:
    if not _obfuscated(text):
        return
    maps = (_LEET_I, _LEET_L) if "1" in text or "|" in text else (_LEET_I,)
    seen: set[str] = set()
    found_injection = False
    for leet in maps:
        view = _despaced(text, leet)
        if view != text:
            for patterns in (_INJECTION_PATTERNS, _DIRECTIVE_PATTERNS):
                for finding in _scan_patterns(
                    view, patterns, label_suffix=" (obfuscated)", detector=OBFUSCATION_DETECTOR
                ):
                    if finding.detail not in seen:
                        seen.add(finding.detail)
                        found_injection = found_injection or finding.rule == PROMPT_INJECTION
                        yield finding
        if found_injection:
            continue
        squashed, offsets = _squashed(text, leet)
        for match in _SQUASHED_RE.finditer(squashed):
            original = text[offsets[match.start()] : offsets[match.end() - 1] + 1]
            if _obfuscated(original):
                detail = f"instruction override (obfuscated): '{_snippet(original)}'"
                if detail not in seen:
                    seen.add(detail)
                    yield SafetyFinding(PROMPT_INJECTION, detail, "block", OBFUSCATION_DETECTOR)
                break
