"""Words that say one thing about a statement without being synonyms (issue 27): "pediatric" / "for children",
"drives" / "car", "mom" / "kids", "prefers" / "likes". The merge guard (`paraphrase.same_meaning`) pairs a
content word left over on one side with one left over on the other side when they name one thing
(`Lexicon.same_sense`) or when one is *defined by* the other through the lexicon's definitions (a bridge):

* the definition of one word names the other word, a synonym of it, or the specific kind its own definition
  gives it: "pediatric" is "of or relating to the medical care of *children*" (kid = child); "drive" is
  "operate or control a *vehicle*" and a car is "a motor *vehicle* ..."; "prefer" is "*like* better";
* a word derived from the other ("flight" / "fly", "seat" / "sit").

Never two things of one kind (`Lexicon.one_kind`: "afternoon" / "evening" share the kind "day" and the one's
definition names the other; "car" / "bike"): those are two values of one attribute. Every other value (numbers,
dates, names, polarity, compared items) is checked before any word is paired (`paraphrase._hard_difference`),
so a bridge can only account for a word, never for a value."""

from __future__ import annotations

from .ports import Lexicon


def bridged(lexicon: Lexicon, first: str, second: str) -> bool:
    """Whether the definition of one word names the other (or its kind), and they are neither two things of
    one kind nor antonyms. The definitions are read first: most pairs end there."""
    if not (lexicon.defines(first, second) or lexicon.defines(second, first)):
        return False
    opposite = second in lexicon.antonyms(first) or first in lexicon.antonyms(second)
    return not (opposite or lexicon.one_kind(first, second))


def one_thing(lexicon: Lexicon, first: str, second: str) -> bool:
    """Whether the two words may stand for each other in a paraphrase: a shared first sense or a bridge."""
    return lexicon.same_sense(first, second) or bridged(lexicon, first, second)
