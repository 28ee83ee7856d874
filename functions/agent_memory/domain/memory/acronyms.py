"""An acronym and the words it stands for, read as one name by the merge guard (issue 27): "Checkout's *PO* is
Ines Duarte" / "Ines Duarte is the *product owner* for checkout", "*GH* Actions" / "*GitHub* Actions".

General, with no table: an acronym written in capitals (two to five letters, "PO", "SLA", "TTL") stands for
the words of the other statement whose initials spell it, in order and next to each other ("service level
agreement"; "time to live": a short function word counts by its initial too), or for one word whose capitals
spell it ("GitHub" → "GH"). Only initials are compared, never a guess at what an acronym may mean: "PM" is not
"product owner", "CTO" is not "chief executive officer". The acronym and its words are then one name on both
sides; every value, negation and other name is still compared as written (`paraphrase._hard_difference`)."""

from __future__ import annotations

from ..memo import memo
from ..patterns import lazy
from .tokens import speaker

_ACRONYM_RE = lazy(r"(?<![\w'’-])([A-Z]{2,5})(?:s)?(?![\w'’-])")
_WORD_RE = lazy(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


@memo(maxsize=4096)
def expanded(text: str, other: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each acronym of `text` (casefolded) with the words of `other` it stands for (as written), for the
    acronyms `other` does not write itself and spells out exactly once."""
    body, other_body = speaker(text)[1], speaker(other)[1]
    written = {word.casefold() for word in _WORD_RE.findall(other_body)}
    words = _WORD_RE.findall(other_body)
    found: list[tuple[str, tuple[str, ...]]] = []
    for match in _ACRONYM_RE.finditer(body):
        acronym = match.group(1)
        if acronym.casefold() in written or any(a == acronym.casefold() for a, _ in found):
            continue
        spelled = _spelled_out(acronym, words)
        if len(spelled) == 1:
            found.append((acronym.casefold(), spelled[0]))
    return tuple(found)


def _spelled_out(acronym: str, words: list[str]) -> list[tuple[str, ...]]:
    """Every run of `words` that spells `acronym`: consecutive words by their initials, or one word by its
    capitals."""
    letters = acronym.casefold()
    runs = [
        tuple(words[start : start + len(letters)])
        for start in range(len(words) - len(letters) + 1)
        if "".join(w[0] for w in words[start : start + len(letters)]).casefold() == letters
        and any(len(w) > 3 for w in words[start : start + len(letters)])
    ]
    runs += [
        (word,)
        for word in words
        if word[0].isupper() and "".join(c for c in word if c.isupper()).casefold() == letters
    ]
    return runs
