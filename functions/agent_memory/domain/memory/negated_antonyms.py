"""A negation and a negative prefix that flip together (issue 27): "I don't like long meetings" says what "I
dislike long meetings" does, "the API is not available on Sundays" what "the API is unavailable on Sundays"
does. The merge guard (`paraphrase.same_meaning`) compares two statements of opposite polarity only through
this reading: the statement with fewer negations is rewritten, one word at a time, with a word that is written
as a negative prefix on another word *and* is that word's antonym in the lexicon ("dislike" is "like"'s
antonym, "unavailable" "available"'s) spelled as a negation of it ("not like", "not available"). The rewritten
pair must then pass the whole guard: the same values, names, roles, tense, negated thing and words.

Only prefixed antonyms: those deny the word ("unavailable" = "not available"). Antonyms of another stem are
often contraries, not denials ("not hot" is not "cold", "not big" is not "small"; "private" / "not public"
stays apart too, a missed merge rather than a wrong one). A prefix without the antonym ("discover" / "cover",
"invest" / "vest", "uncle") rewrites nothing."""

from __future__ import annotations

from ..patterns import lazy
from .ports import Lexicon
from .slots import negations

_PREFIXES = ("dis", "non", "un", "in", "im", "il", "ir")
_WORD_RE = lazy(r"(?<![\w'’-])(?:dis|non|un|in|im|il|ir)-?[a-z]{3,}\b")
"""A lower-case word that starts like a negative prefix ("dislikes", "unavailable", "non-blocking")."""


def rewritten(new: str, old: str, lexicon: Lexicon) -> list[tuple[str, str]]:
    """(new, old) with the statement of fewer negations rewritten at one prefixed antonym ("dislikes" → "not
    likes"), one pair for each such word; none when the polarities agree or no word is a prefixed antonym."""
    new_count, old_count = negations(new), negations(old)
    if new_count % 2 == old_count % 2:
        return []
    if new_count < old_count:
        return [(text, old) for text in _denials(new, lexicon)]
    return [(new, text) for text in _denials(old, lexicon)]


def _denials(text: str, lexicon: Lexicon) -> list[str]:
    """`text` with one prefixed antonym spelled as a negation of the word it denies, for each such word: "is
    unavailable" → "is not available" after a copula, else as a verb in the word's own tense ("dislikes" →
    "does not like", "disliked" → "did not like"), so the guard still compares tenses."""
    found: list[str] = []
    for match in _WORD_RE.finditer(text):
        word = match.group(0)
        denied = _denied(word, lexicon)
        if denied is None:
            continue
        if _COPULA_BEFORE_RE.search(text[: match.start()]):
            spelled = f"not {word[len(word) - len(denied[1]) :]}"
        else:
            spelled = f"{_auxiliary(word)} not {denied[0]}"
        found.append(f"{text[: match.start()]}{spelled}{text[match.end() :]}")
    return found


_COPULA_BEFORE_RE = lazy(
    r"(?i)\b(?:is|are|am|was|were|be|been|being|seems?|seemed|stays?|remains?|feels?|felt|'s|'re|'m)\s+"
    r"(?:\w+ly\s+)?$"
)


def _auxiliary(word: str) -> str:
    return "did" if word.endswith("ed") else "does" if word.endswith("s") else "do"


def _denied(word: str, lexicon: Lexicon) -> tuple[str, str] | None:
    """(base form, written form) of the word `word` denies ("dislikes" → ("like", "likes")), when the base
    form of `word` is that word's antonym in the lexicon; else None."""
    for prefix in _PREFIXES:
        if not word.startswith(prefix):
            continue
        rest = word[len(prefix) :].lstrip("-")
        if len(rest) < 3:
            continue
        mine = lexicon.base_forms(word)
        base = next((b for b in sorted(lexicon.base_forms(rest)) if mine & lexicon.antonyms(b)), None)
        if base is not None:
            return base, rest
    return None
