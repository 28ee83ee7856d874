"""Hidden characters: invisible (zero-width, tag, variation-selector smuggling) and bidirectional controls,
and the `visible` view of a text the text rules read (compatibility forms folded, hidden characters removed)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from ..patterns import lazy
from .findings import BIDI_CONTROL, INVISIBLE_UNICODE, UNICODE_DETECTOR, SafetyFinding

_ZWNJ, _ZWJ, _LRM, _RLM, _BOM = "\u200c", "\u200d", "\u200e", "\u200f", "\ufeff"

_INVISIBLE_RE = lazy(
    "[\u200b-\u200f\u2060-\u2064\ufeff\U000e0000-\U000e007f\ufe00-\ufe0f\U000e0100-\U000e01ef]"
)
_VARIATION_SELECTOR_RE = lazy("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
# The only legitimate use of tag characters: emoji subdivision flags (🏴 + lowercase tag letters + CANCEL TAG).
_TAG_FLAG_RE = lazy("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,8}\U000e007f")
_BIDI_RE = lazy("[\u202a-\u202e\u2066-\u2069]")
# Right-to-left letters: LRM/RLM are ordinary punctuation-like marks in Hebrew and Arabic text.
_RTL_LETTER_RE = lazy("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
# Everything the text rules should not be fooled by ("ig\u200bnore previous instructions").
_STRIP_RE = lazy(
    "[\u00ad\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069"
    "\U000e0000-\U000e007f\ufe00-\ufe0f\U000e0100-\U000e01ef]"
)


def _is_emoji(char: str) -> bool:
    code = ord(char)
    return code >= 0x1F000 or 0x2600 <= code <= 0x27BF or 0x2190 <= code <= 0x21FF or 0x2B00 <= code <= 0x2BFF


def _is_joining_script_letter(char: str) -> bool:
    """Letters/marks of scripts where ZWJ/ZWNJ shape words (Arabic, Persian, Indic, …): not Latin, not CJK."""
    code = ord(char)
    if code < 0x0370 or 0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF:
        return False
    return unicodedata.category(char)[0] in ("L", "M")


def _allowed_invisible(text: str, index: int, flag_tags: set[int], has_rtl: bool) -> bool:
    """Whether the invisible character at `index` has its ordinary typographic use there."""
    char = text[index]
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if char == _BOM:
        return index == 0
    if char == _ZWJ:
        if (
            before
            and after
            and (_is_emoji(before) or _VARIATION_SELECTOR_RE.match(before))
            and _is_emoji(after)
        ):
            return True
        return bool(
            before and after and _is_joining_script_letter(before) and _is_joining_script_letter(after)
        )
    if char == _ZWNJ:
        return bool(
            before and after and _is_joining_script_letter(before) and _is_joining_script_letter(after)
        )
    if char in (_LRM, _RLM):
        return has_rtl
    if index in flag_tags:
        return True
    if _VARIATION_SELECTOR_RE.match(char):
        # One selector right after a visible base character picks a glyph (emoji vs text style, CJK variants).
        # A run of selectors, or one with no base, is the "variation selector smuggling" encoding; so is one
        # selector after each of many Latin letters (each carries a hidden byte), hence the base check.
        return (
            bool(before)
            and not before.isspace()
            and not _VARIATION_SELECTOR_RE.match(before)
            and not (after and _VARIATION_SELECTOR_RE.match(after))
            and _selector_fits_base(char, before)
        )
    return False


def _selector_fits_base(selector: str, base: str) -> bool:
    """Whether Unicode defines variation sequences of this kind for this base: VS15/VS16 (text/emoji style)
    after symbols, emoji and digits; VS1-VS14 after CJK ideographs, Mongolian, Myanmar, Phags-pa and math
    symbols; the supplementary selectors (ideographic variation sequences) after CJK ideographs only."""
    code, base_code = ord(selector), ord(base)
    cjk = 0x3400 <= base_code <= 0x9FFF or 0xF900 <= base_code <= 0xFAFF or 0x20000 <= base_code <= 0x3FFFF
    if code >= 0xE0100:
        return cjk
    if code in (0xFE0E, 0xFE0F):
        return not base.isalpha() or cjk
    return (
        cjk
        or 0x1000 <= base_code <= 0x109F
        or 0x1800 <= base_code <= 0x18AF
        or 0xA840 <= base_code <= 0xA877
        or unicodedata.category(base) == "Sm"
    )


def _char_label(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')}"


def _scan_invisible(text: str) -> Iterator[SafetyFinding]:
    if not _INVISIBLE_RE.search(text):
        return
    flag_tags = {i for m in _TAG_FLAG_RE.finditer(text) for i in range(m.start() + 1, m.end())}
    has_rtl = bool(_RTL_LETTER_RE.search(text))
    hidden: dict[str, int] = {}
    first = -1
    for match in _INVISIBLE_RE.finditer(text):
        index = match.start()
        if _allowed_invisible(text, index, flag_tags, has_rtl):
            continue
        if first < 0:
            first = index
        hidden[text[index]] = hidden.get(text[index], 0) + 1
    if hidden:
        yield SafetyFinding(
            INVISIBLE_UNICODE, _summarise("invisible", hidden, first), "block", UNICODE_DETECTOR
        )


def _scan_bidi(text: str) -> Iterator[SafetyFinding]:
    found: dict[str, int] = {}
    first = -1
    for match in _BIDI_RE.finditer(text):
        if first < 0:
            first = match.start()
        found[match.group()] = found.get(match.group(), 0) + 1
    if found:
        yield SafetyFinding(
            BIDI_CONTROL, _summarise("bidirectional control", found, first), "block", UNICODE_DETECTOR
        )


def _summarise(what: str, counts: dict[str, int], first: int) -> str:
    total = sum(counts.values())
    kinds = ", ".join(_char_label(c) for c in list(counts)[:4]) + (", …" if len(counts) > 4 else "")
    return f"{total} {what} character(s) ({kinds}), first at offset {first}"


def _visible(text: str) -> str:
    """What a reader sees: compatibility forms folded (full-width letters), hidden characters removed."""
    return _STRIP_RE.sub("", unicodedata.normalize("NFKC", text))
