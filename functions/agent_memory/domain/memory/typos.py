"""A word with one letter dropped or two letters swapped, read as the word the other statement writes (issue
27): "i *hav* 2 kids" / "I have two children".

Only for words the merge guard has left over on both sides after every other reading, so a typo can never
stand for a value, a name, a negation or a tense (those are compared before, on the words as written), and
only when the lexicon knows the other side's word and not the typo: "hav" is no word, "have" is. One letter
*dropped* or two *swapped* (the commonest slips of typing), not one letter changed: a changed letter turns
one real word into another too easily ("had" / "has" / "hat"). The pairing must be one to one: a typo that
could be either of two leftover words of the other side stays unpaired, and so does a word of fewer than
three letters. The word it stands for may be any word of the other statement, a frame word included ("hav" /
"have"), but only one; the dictionary form a word only extends counts as written ("mornin" / "mornings")."""

from __future__ import annotations

from .ports import Lexicon

_MIN_LENGTH = 3


def slip_of(typo: str, word: str) -> bool:
    """Whether `typo` is `word` with one letter dropped or two neighbouring letters swapped."""
    if len(typo) < _MIN_LENGTH or not typo.isalpha() or not word.isalpha() or typo == word:
        return False
    if len(word) == len(typo) + 1:
        return any(word[:i] + word[i + 1 :] == typo for i in range(len(word)))
    if len(word) == len(typo):
        differ = [i for i in range(len(word)) if word[i] != typo[i]]
        return (
            len(differ) == 2
            and differ[1] == differ[0] + 1
            and typo[differ[0]] == word[differ[1]]
            and (typo[differ[1]] == word[differ[0]])
        )
    return False


def _unknown(word: str, lexicon: Lexicon) -> bool:
    return not lexicon.base_forms(word)


def _forms(word: str, lexicon: Lexicon) -> set[str]:
    """`word` when the lexicon knows it, with its dictionary forms that it only extends ("mornings" →
    "morning"), never an irregular one ("had" → "have": a tense the typo must not erase)."""
    forms = lexicon.base_forms(word)
    return {word, *(form for form in forms if word.startswith(form))} if forms else set()


def _pair_one_way(
    mine: dict[str, list[str]],
    theirs: dict[str, list[str]],
    my_left: list[str],
    their_left: list[str],
    lexicon: Lexicon,
) -> tuple[list[str], list[str]]:
    kept: list[str] = []
    unpaired = list(their_left)
    for key in my_left:
        typos = [s for s in mine.get(key, [key]) if _unknown(s, lexicon)]
        matches = [
            other
            for other in theirs
            if any(
                slip_of(typo, form)
                for typo in typos
                for word in theirs.get(other, [other])
                for form in _forms(word, lexicon)
            )
        ]
        if len(matches) == 1:
            if matches[0] in unpaired:
                unpaired.remove(matches[0])
        else:
            kept.append(key)
    return kept, unpaired


def paired(
    new_words: dict[str, list[str]],
    old_words: dict[str, list[str]],
    new_left: list[str],
    old_left: list[str],
    lexicon: Lexicon,
) -> tuple[list[str], list[str]]:
    """The leftover keys of each side less the typos paired one to one with a leftover word of the other
    side (`new_words` / `old_words`: each key with the words written for it)."""
    new_left, old_left = _pair_one_way(new_words, old_words, new_left, old_left, lexicon)
    old_left, new_left = _pair_one_way(old_words, new_words, old_left, new_left, lexicon)
    return new_left, old_left
