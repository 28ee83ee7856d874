"""The merge guard's second reading: two statements that say the same thing in other words (issue 27).

`merge_guard.same_statement` merges only statements with the same content words. Paraphrases use other words for the
same thing ("The billing service is owned by Maria", "Port 8080 is where the API gateway listens", "We use
Postgres 16 as the primary database"). `same_meaning` accepts such a pair only when everything that carries a
value is identical and every content word left over is accounted for:

* the same relation between the same arguments: a verb's preposition before one argument ("works *at* Acme" /
  "works *with* Acme"; `phrasal`), checked before everything else, `same_statement` included;
* the same speaker, the same polarity, the same thing negated, the same compared items in the same order;
* the same values (numbers, versions, dates, weekdays, times, states), counted;
* the same names: every name of one statement appears in the other (a name that starts a sentence is written
  like any word, so it is looked up among all the other's terms), in the same roles (`roles.same_roles`): in
  the same order when both or neither are passive ("Maria hired Bob" / "Bob hired Maria" are two facts), and
  starting with another participant when one only is ("The billing service is owned by Maria" / "Maria owns
  the billing service"; "Maria was hired by Bob" is not "Maria hired Bob");
* the content words, folded by word family (`_FAMILIES`: "main" = "primary", "led" = "lead", "utiliza" =
  "use"), agree except for frame words that carry no content ("happen", "where", "go"), category nouns that
  only name the kind of a shared term ("the main *branch*", "the eu-west-1 *region*", "YAML *files*"), and
  words the other statement's form absorbs (`_absorbed`: "use" against a copula, "every" against a habit,
  the comparison's own words, "allowed" under a negation; `_governed`: "under" after a verb against a copula
  statement naming its thing; `_scheduled`: "start at <time>" against "runs at <time>"), the words two
  statements spend on one relation stated with the same arguments (`relation_frames`: "works from" / "is
  based in", "see the dentist" / "dentist appointment"), and a one-letter slip of typing on a word the lexicon
  does not know (`typos`: "hav" / "have");
* who does what to whom: names in the same roles (above), a pronoun in the same case ("I report to Ana" is
  not "Ana reports to me", `roles.same_participants`), and who reports to whom read through its converse
  frame ("Bo is Ana's manager" = "Ana reports to Bo", `relation_frames.converse`).

Opposite polarities are one statement only when a negation and a prefixed antonym flip together ("don't like"
/ "dislike", `negated_antonyms`). Anything else left over on either side ("start" / "end", "want" / "have") refuses the merge. The tables are
of general words, never of values: a missing entry only keeps two memories apart."""

from __future__ import annotations

from collections import Counter

from ..memo import memo
from ..patterns import lazy
from . import acronyms, negated_antonyms, phrasal, relation_frames, typos, value_frames
from .bridges import one_thing
from .merge_guard import MergeCheck, same_statement
from .ports import Lexicon
from .roles import same_participants, same_roles, tense_differs
from .slots import PERMISSIONS, SOFT, Term, negated, ordered_pairs, terms
from .tokens import normalize, speaker, tokens

# Words of one family, folded to the first word's stem. Only words that name the same thing in a statement
# about a fact or a preference; a word absent here keeps two memories apart.
_FAMILY_LINES = (
    "main primary principal",
    "prefer favour favor want wants",
    "lead led leads leading",
    "use run host usa usar usan utiliza utilizar utilizan utilise utiliser benutzt benutzen verwendet verwenden",
    "have habe haben besitze besitzt besitzen poseo posee tengo tiene",
    "finish complete completed finished",
    "have own owns owned",
    "buy purchase bought purchased",
    "need require requires required",
    "choose pick select chose chosen picked selected",
    "fix repair fixed repaired",
    "film movie films movies",
    "mother mom mum",
    "father dad",
    "help assist helps assists",
    "show display shows displays",
    "answer reply respond responds responded",
)


def _fold(word: str) -> str:
    keys = [t.key for t in terms(word)]
    return keys[0] if keys else word


_FAMILIES = {
    form: _fold(line.split()[0])
    for line in _FAMILY_LINES
    for word in line.split()
    for form in (word, _fold(word))
}

_USE = _FAMILIES[_fold("use")]
_WORK = _fold("works")
_PREFER = _FAMILIES[_fold("prefer")]
_FRAME_WORDS_TEXT = """
    happen happens occur occurs take takes place where there go goes have when while
"""
_FRAME_WORDS = frozenset(_fold(word) for word in _FRAME_WORDS_TEXT.split())
"""Verbs and adverbs that only frame a statement: "deploys happen on Fridays" = "we deploy every Friday". Not
"get" ("gets paid" is not "pays") nor "going" ("going to Paris" is a plan). "When" and "while" only join a
circumstance ("when flying, likes to sit by the window" = "prefers window seats on flights")."""

_EVERY = frozenset(_fold(word) for word in ["each", "every", "per", "whenever"])
_HABIT_RE = lazy(
    r"\b(?:every|each|per|daily|weekly|nightly|monthly|yearly|always|usually|whenever|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days|weekdays|weekends|mornings|evenings|nights)\b"
)
"""A habit: "on Fridays", "every Friday", "nightly". "Every" is no detail beside one ("on Sunday" is one day)."""

_CATEGORY_NOUNS_TEXT = """
    region zone branch environment env file files format language city country company tool app
    application platform class session lesson appointment
"""
_CATEGORY_NOUNS = frozenset(_fold(word) for word in _CATEGORY_NOUNS_TEXT.split())
"""Nouns that name the kind of the term beside them ("the eu-west-1 region", "the main branch", "yoga class")."""

_COPULA_RE = lazy(r"\b(?:is|are|am|was|were|be)\b|:")
_WORKS_AS_RE = lazy(r"\b(?:work|works|working|worked|serves?|serving|served)\s+as\b")
"""A role told by its work: "Jana works as a nurse" says what "Jana is a nurse" does."""
"""A statement of what something is: "the main database is X" says what "we use X as the main database" does."""


def _key(term: Term) -> str:
    if term.surface in _PLANS:
        return term.surface  # "going to Paris" is a plan, not the frame word "go"
    return _FAMILIES.get(term.surface) or _FAMILIES.get(term.key) or term.key


_PLANS = frozenset(["going", "gonna", "planning", "plan", "plans"])


@memo(maxsize=4096)
def _words(text: str) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]:
    """(content keys in order, entity keys, every term key in order) of `text`."""
    listed = terms(text)
    content = tuple(
        _key(t)
        for t in listed
        if t.kind in ("word", "entity") and t.key not in SOFT and t.surface not in SOFT
    )
    names = frozenset(t.key for t in listed if t.kind == "entity")
    return content, names, tuple(t.key for t in listed)


def _values(text: str) -> Counter[str]:
    return Counter(t.key for t in terms(text) if t.kind == "value")


def _hard_difference(new: str, old: str) -> str | None:
    """What makes the two statements different whatever their words: speaker, polarity, negated thing,
    compared items, values, names."""
    if speaker(new)[0] != speaker(old)[0]:
        return "said by different speakers"
    new_terms, old_terms = terms(new), terms(old)
    if sum(t.kind == "negation" for t in new_terms) % 2 != sum(t.kind == "negation" for t in old_terms) % 2:
        return _OPPOSITE
    if tense_differs(new, old):
        return "another tense (has / had)"
    if negated(new) != negated(old):
        return "a different thing negated"
    if ordered_pairs(new) != ordered_pairs(old):
        return "compared items differ"
    if _values(new) != _values(old):
        return "different values"
    _, new_names, new_keys = _words(new)
    _, old_names, old_keys = _words(old)
    spelled = _spelled_words(new, old) | _spelled_words(old, new)
    missing = (new_names - set(old_keys) - spelled) | (old_names - set(new_keys) - spelled)
    if missing:
        return f"different names ({', '.join(sorted(missing)[:3])})"
    reporting = relation_frames.converse(new, old)
    if reporting is False:
        return "another person reports to another (who manages whom)"
    if reporting is None and not (
        same_roles(new, old, (new_names | old_names) - spelled) and same_participants(new, old)
    ):
        return "names in other roles (who does what to whom)"
    return None


def _spelled_words(text: str, other: str) -> frozenset[str]:
    """The keys of the acronyms of `text` and of the words of `other` that spell them out (`acronyms`: "PO" /
    "product owner", "GH" / "GitHub")."""
    found = acronyms.expanded(text, other)
    return frozenset(_key_of_word(w) for acronym, words in found for w in (acronym, *words))


_COMPARISON_WORDS = frozenset(
    _fold(w) for w in ["prefer", "favour", "like", "likes", "rather", "more", "would"]
)
"""The words of a comparison ("prefers X over Y", "likes X more than Y", "would rather X than Y"): frame words
when both statements compare the same items in the same order."""


def _absorbed(new: str, old: str, other: str) -> frozenset[str]:
    """Keys a statement may hold without a counterpart, given the other statement `other`: "use" against a
    copula ("we use X as the main database" / "the main database is X"), "every" against a habit ("deploys
    happen on Fridays" / "we deploy every Friday"), the comparison's words when both compare the same items,
    "allowed" under a negation ("never deploy" / "deployments are not allowed")."""
    keys: set[str] = set()
    if _COPULA_RE.search(normalize(other)):
        keys.add(_USE)
        if _WORKS_AS_RE.search(normalize(new)):
            keys.add(_WORK)
    if _HABIT_RE.search(normalize(other)):
        keys |= _EVERY
    if ordered_pairs(new):  # equal on both sides (`_hard_difference`)
        keys |= _COMPARISON_WORDS | {_PREFER}
    if negated(new):  # equal on both sides
        keys |= PERMISSIONS
    return frozenset(keys)


_GOVERNED_RE = lazy(r"\b(?P<verb>[\w-]+)\s+(?P<preposition>under|through)\b")
"""A preposition that only attaches a verb's argument ("licensed *under* MIT", "paid *through* Stripe"), unlike
one that places or orders it ("after", "before", "below", "near": content words everywhere)."""


def _governed(text: str, other: str, lexicon: Lexicon | None) -> frozenset[str]:
    """Prepositions of `text` that attach the argument of a word `other` holds too (or, given a lexicon, a word
    of one thing with it: "governed" / "governance"), when `other` is a copula statement naming that word's
    thing ("The project is licensed *under* Apache-2.0" / "Apache License 2.0 is the project's licence")."""
    if not _COPULA_RE.search(normalize(other)):
        return frozenset()
    theirs = set(_words(other)[0])
    written = [s for surfaces in _surfaces(other).values() for s in surfaces]
    return frozenset(
        _fold(match["preposition"])
        for match in _GOVERNED_RE.finditer(normalize(speaker(text)[1]))
        if _key_of_word(match["verb"]) in theirs
        or (lexicon is not None and any(one_thing(lexicon, match["verb"], word) for word in written))
    )


_STARTS_AT_RE = lazy(r"\b(?:starts?|begins?|commences?)(?:\s+[\w:]+){0,2}?\s+at\s+\d")
_RUNS_AT_RE = lazy(r"\b(?:runs?)(?:\s+[\w:]+){0,3}?\s+at\s+\d")
"""A scheduled run told by its start: "backups *run* every night *at* 02:00" / "nightly backups *start at*
02:00" (a time of day after "at"). Not its end or its outcome ("finish", "end", "fail" at 02:00: left over),
nor a run "until" or "for" a time, nor a past one ("the job *started* at 6 am" is an event, not a schedule)."""


def _scheduled(text: str, other: str) -> frozenset[str]:
    """The verb of `text` that names the same scheduled run as `other`'s: "start" against "runs at <time>",
    "run" against "starts at <time>" (the time itself is equal on both sides, `_hard_difference`)."""
    mine, theirs = normalize(speaker(text)[1]), normalize(speaker(other)[1])
    if _STARTS_AT_RE.search(mine) and _RUNS_AT_RE.search(theirs):
        return frozenset({_START})
    if _RUNS_AT_RE.search(mine) and _STARTS_AT_RE.search(theirs):
        return frozenset({_USE})  # "run" is of the family of "use" (`_FAMILY_LINES`)
    return frozenset()


_START = _fold("start")


def _framed(new: str, old: str) -> tuple[frozenset[str], frozenset[str]]:
    """The keys of each statement's words spent on a relation both state alike (`relation_frames`: "works
    from" / "is based in", "see the dentist" / "dentist appointment")."""
    new_words, old_words = relation_frames.shared(new, old)
    return frozenset(map(_key_of_word, new_words)), frozenset(map(_key_of_word, old_words))


def _key_of_word(word: str) -> str:
    listed = terms(word)
    return _key(listed[0]) if listed else word


def _family(word: str) -> str | None:
    """The word family of `word` (`_FAMILIES`), None when it belongs to none."""
    listed = terms(word)
    return (_FAMILIES.get(listed[0].surface) or _FAMILIES.get(listed[0].key)) if listed else None


def _leftover(mine: tuple[str, ...], shared: set[str], absorbed: frozenset[str]) -> list[str]:
    """Content keys of `mine` the other statement does not account for."""
    left: list[str] = []
    for index, key in enumerate(mine):
        if key in shared or key in _FRAME_WORDS or key in absorbed:
            continue
        beside = {mine[i] for i in (index - 1, index + 1) if 0 <= i < len(mine)}
        if key in _CATEGORY_NOUNS and beside & shared:
            continue
        left.append(key)
    return left


def same_meaning(new: str, old: str, lexicon: Lexicon | None = None) -> MergeCheck:
    """Whether merging `new` into `old` loses nothing: `same_statement`, or the same values, names, polarity
    and order with the content words agreeing up to word families, frame words, category nouns and, given a
    `lexicon`, words that name one thing ("cilantro" / "coriander")."""
    other_relation = phrasal.relation_differs(new, old, _family)
    if other_relation is not None:
        return MergeCheck(False, other_relation)
    strict = same_statement(new, old)
    if strict.allowed:
        return strict
    hard = _hard_difference(new, old)
    if hard == _OPPOSITE and lexicon is not None:
        return _denied(new, old, lexicon)
    if hard is not None:
        return MergeCheck(False, hard)
    new_content, _, _ = _words(new)
    old_content, _, _ = _words(old)
    shared = set(new_content) & set(old_content)
    new_framed, old_framed = _framed(new, old)
    spelled = _spelled_words(new, old) | _spelled_words(old, new)
    new_framed, old_framed = new_framed | spelled, old_framed | spelled
    new_left = _leftover(
        new_content,
        shared,
        _absorbed(new, old, old) | _governed(new, old, lexicon) | _scheduled(new, old) | new_framed,
    )
    old_left = _leftover(
        old_content,
        shared,
        _absorbed(new, old, new) | _governed(old, new, lexicon) | _scheduled(old, new) | old_framed,
    )
    paired = bool(spelled)
    if lexicon is not None:
        new_left = _inflections_dropped(new, old, new_left, lexicon)
        old_left = _inflections_dropped(old, new, old_left, lexicon)
    if lexicon is not None and new_left and old_left:
        before = len(new_left)
        new_left, old_left = _synonyms_paired(new, old, new_left, old_left, lexicon)
        paired = len(new_left) < before
    if lexicon is not None and (new_left or old_left):
        before = len(new_left) + len(old_left)
        new_left, old_left = typos.paired(_all_words(new), _all_words(old), new_left, old_left, lexicon)
        paired = paired or len(new_left) + len(old_left) < before
    if lexicon is not None and (new_left or old_left):
        before = len(new_left) + len(old_left)
        keys = _both_surfaces(new, old)
        new_left, old_left = value_frames.accounted(new, old, new_left, old_left, lexicon, keys)
        paired = paired or len(new_left) + len(old_left) < before
    left = new_left + old_left
    if left or not (shared or paired):
        return MergeCheck(False, f"different words ({', '.join(sorted(set(left))[:4])})")
    return MergeCheck(True, "the same values, names and polarity in other words")


_OPPOSITE = "opposite polarity"


def _denied(new: str, old: str, lexicon: Lexicon) -> MergeCheck:
    """Two statements of opposite polarity: the same statement only when a negation on one side and a
    prefixed antonym on the other flip together ("don't like" / "dislike"; `negated_antonyms`)."""
    for rewritten_new, rewritten_old in negated_antonyms.rewritten(new, old, lexicon):
        check = same_meaning(rewritten_new, rewritten_old, lexicon)
        if check.allowed:
            return MergeCheck(True, f"a negation said by a prefixed antonym; {check.reason}")
    return MergeCheck(False, _OPPOSITE)


def _surfaces(text: str) -> dict[str, list[str]]:
    """Each content key of `text` with the words written for it."""
    found: dict[str, list[str]] = {}
    for term in terms(text):
        if term.kind in ("word", "entity"):
            found.setdefault(_key(term), []).append(term.surface)
    return found


def _all_words(text: str) -> dict[str, list[str]]:
    """`_surfaces`, and every other word of `text` (function words too) under its own spelling."""
    found = _surfaces(text)
    written = {s for surfaces in found.values() for s in surfaces}
    for token in tokens(normalize(speaker(text)[1])):
        if token.surface not in written:
            found.setdefault(token.surface, []).append(token.surface)
    return found


def _both_surfaces(new: str, old: str) -> dict[str, list[str]]:
    """Each content key of either statement with the words written for it on both sides."""
    found: dict[str, list[str]] = {}
    for side in (_surfaces(new), _surfaces(old)):
        for key, written in side.items():
            found.setdefault(key, []).extend(written)
    return found


def _inflections_dropped(text: str, other: str, left: list[str], lexicon: Lexicon) -> list[str]:
    """The leftover keys of `text` less those written as another form of a word of `other` (the light stemmer
    folds "meetings" to "meeting" but "meeting" to "meet"; the lexicon's base forms agree)."""
    theirs = {
        form for surfaces in _surfaces(other).values() for s in surfaces for form in lexicon.base_forms(s)
    }
    mine = _surfaces(text)
    return [key for key in left if not any(lexicon.base_forms(s) & theirs for s in mine.get(key, [key]))]


def _synonyms_paired(
    new: str, old: str, new_left: list[str], old_left: list[str], lexicon: Lexicon
) -> tuple[list[str], list[str]]:
    """The leftover keys of each side less those paired one to one with a leftover of the other side that
    names the same thing (`Lexicon.same_sense`: a shared first sense, never two things of one kind)."""
    new_words, old_words = _surfaces(new), _surfaces(old)
    unpaired = list(old_left)
    kept: list[str] = []
    for key in new_left:
        match = next(
            (
                other
                for other in unpaired
                if any(
                    one_thing(lexicon, mine, theirs)
                    for mine in new_words.get(key, [key])
                    for theirs in old_words.get(other, [other])
                )
            ),
            None,
        )
        if match is None:
            kept.append(key)
        else:
            unpaired.remove(match)
    return kept, unpaired
