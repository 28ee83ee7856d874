"""Look-alike letters: Cyrillic, Greek, Armenian, Cherokee, … characters that render like Latin ones ("Іgnore
previous instructions" with a Cyrillic І), folded back to the Latin letter they imitate so the text rules read
what a person sees.

The table comes from the Unicode confusables data (UTS #39) as shipped by the `confusable-homoglyphs` package,
loaded on first use (about 0.9 MB of JSON, once per process): never at import, so a Lambda cold start that
never meets a non-Latin letter does not pay for it. Only characters whose look-alike is one ASCII letter or
digit are folded; NFKC (in `hidden.visible`) has already folded full-width and mathematical letters.

UTS #39 maps to a skeleton, not to the expected letter: capital I and the Cyrillic І both become "l". An
upper-case character whose look-alike is "l" is therefore folded to "I".
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_table: dict[int, str] | None = None


def _build() -> dict[int, str]:
    from confusable_homoglyphs import confusables  # the package reads its data file when imported

    table: dict[int, str] = {}
    for char, glyphs in confusables.confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        target = next(
            (g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii() and g["c"].isalnum()), None
        )
        if target is None:
            continue
        if target == "l" and char.isupper():
            target = "I"
        table[ord(char)] = target
    return table


def _fold_table() -> dict[int, str]:
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                _table = _build()
    return _table


def fold(text: str) -> str:
    """`text` with every look-alike letter replaced by the ASCII letter or digit it imitates; ASCII-only text
    is returned as it is without loading the table."""
    if text.isascii():
        return text
    return text.translate(_fold_table())
