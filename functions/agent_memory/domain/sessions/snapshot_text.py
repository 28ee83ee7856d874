"""Content inside the frozen snapshot cannot end or restructure it.

The snapshot (`sessions.render_snapshot`) wraps the memory files in `<memory-snapshot …>` … `</memory-snapshot>`
with fixed `## ` section headings, `§` entry separators, `(empty)` and `[blocked by safety rule …]` lines.
Entries and skill descriptions are text an agent or a person wrote, so before they go in:

- every tag-like `<` (one followed, past spaces, slashes and invisible marks, by a letter or `!`, `?`, `|`;
  ASCII, full-width `＜` or small `﹤`) becomes `&lt;`, and the `>` that closes it `&gt;`: no content can
  close the wrapper (`</memory-snapshot>`), open another one, or forge a chat-template tag;
- every line that a reader could take for the renderer's structure (a Markdown heading `#`, a setext
  underline `===`/`---`, a `§` line, `(empty)`, `[blocked by safety rule …]`, judged after compatibility
  folding and with invisible characters ignored) gets a leading backslash, Markdown's escape; so does a line
  that already starts with one, so the escape is unambiguous;
- every line break Unicode knows (U+2028, U+2029, NEL, VT, FF, FS/GS/RS, CR) becomes `\n`, so what a
  tokenizer sees as a new line is a line the rules above have checked.

Text without any of these comes out unchanged, so the snapshot of ordinary memory keeps its bytes (and the
prompt cache its hits). `tests/unit/test_snapshot_injection.py` renders every delimiter the renderer emits
inside entries and descriptions and parses the result back (also with hypothesis).
"""

from __future__ import annotations

import unicodedata

from ..patterns import lazy

BACKSLASH = "\\"
_TAG_OPENERS = "<\uff1c\ufe64"
_TAG_CLOSERS = ">\uff1e\ufe65"
_SLASHES = "/\uff0f\u2044\u2215"
_TAG_NAME_START = "!?|_:\uff01\uff1f\uff5c"
"""Besides letters, what may open a tag for a reader: markup declarations and XML's `_` / `:` name starts."""
_SETEXT_RE = lazy(r"[=\-]+\s*")
_STRUCTURAL_PREFIXES = ("#", "§", BACKSLASH)
_STRUCTURAL_PHRASES = ("(empty)", "[blocked by safety rule")


def _ignorable(char: str) -> bool:
    """Characters a reader skips over: white space, format controls (zero-width, bidi, tags) and combining or
    variation marks."""
    return char.isspace() or unicodedata.category(char) in ("Cf", "Mn", "Me", "Cc")


def fold(line: str) -> str:
    """What a reader sees of a line: compatibility forms folded (`＃` is `#`), invisible characters dropped."""
    folded = unicodedata.normalize("NFKC", line)
    return "".join(c for c in folded if not _ignorable(c) or c in " \t")


def _opens_tag(text: str, index: int) -> bool:
    """Whether the `<` at `index` starts a tag as a reader sees it: each following character is judged by its
    compatibility folding (`´` folds to a space and a combining accent, both skipped, so `<´?` reads `< ?`)."""
    for char in text[index + 1 :]:
        for seen in unicodedata.normalize("NFKC", char):
            if _ignorable(seen) or seen in _SLASHES:
                continue
            return seen.isalpha() or seen in _TAG_NAME_START
    return False


def escape_tags(text: str) -> str:
    """Tag-like `<…>` as `&lt;…&gt;`; any other `<` or `>` (`a < b`, `->`) stays."""
    if not any(c in text for c in _TAG_OPENERS):
        return text
    out: list[str] = []
    open_tag = False
    for index, char in enumerate(text):
        if char in _TAG_OPENERS and _opens_tag(text, index):
            out.append("&lt;")
            open_tag = True
        elif char in _TAG_CLOSERS and open_tag:
            out.append("&gt;")
            open_tag = False
        else:
            if char == "\n" or char in _TAG_OPENERS:
                open_tag = False
            out.append(char)
    return "".join(out)


def looks_structural(line: str) -> bool:
    """Whether a reader could take this content line for one of the renderer's own lines."""
    seen = fold(line).strip()
    if not seen:
        return False
    lowered = seen.casefold()
    return (
        seen.startswith(_STRUCTURAL_PREFIXES)
        or lowered.startswith(_STRUCTURAL_PHRASES)
        or bool(_SETEXT_RE.fullmatch(seen))
    )


def neutralise_block(text: str) -> str:
    """A multi-line entry, safe to place between the snapshot's structural lines."""
    lines = escape_tags(text).splitlines() or [""]
    return "\n".join(BACKSLASH + line if looks_structural(line) else line for line in lines)


def neutralise_inline(text: str) -> str:
    """A single-line value (a skill name or description): line breaks of any kind become spaces."""
    return escape_tags(" ".join(text.splitlines()))
