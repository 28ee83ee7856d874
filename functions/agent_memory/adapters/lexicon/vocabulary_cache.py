"""The lexicon's caches, which keep only WordNet's own words.

The lexicon lives as long as its process and is asked about words taken from memories. A cache keyed by those
words would keep a purged memory's names ("Okafor") and codenames for the process's life, beyond the purge
(docs/reference/erasure.md). So a cache of the lexicon keeps an entry only when its key is public data: every
word in it is in WordNet's vocabulary (a lemma of an index file, or a form WordNet's own morphology reduces
to one, as `WordNetLexicon._known` decides), and every other argument is a WordNet identifier (a part of
speech, an eight-digit synset offset). A key with any other word is not stored: it is computed again at each
question. Within one question (the outermost cached call, on one thread) it is computed once: one question
asks about its words through many cached methods, and a word WordNet does not know costs a few binary searches
of the index (~40 µs) each time; that scope is dropped when the question returns, so nothing of the word
outlives the call that was given it.

Hand-written because `functools` has no conditional cache: `lru_cache` stores every key it is given. Each
cache is a dict on its instance (one lexicon per process), bounded by `maxsize`, the oldest entry dropped
first; the functions cached are pure, so a cache changes no result, whatever another thread does to it at the
same moment. `tests/unit/test_lexicon_cache.py` fails on any other cache in this package."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import update_wrapper
from typing import Any, TypeVar, cast

from ...domain.memo import drop_oldest

F = TypeVar("F", bound=Callable[..., Any])

_MISSING = object()
_PARTS = frozenset({"noun", "verb", "adj", "adv"})
_QUESTION = threading.local()
"""Per thread, what the question being answered computed for keys that are not WordNet's (`entries`, None
between questions)."""
_PREFIX = "_vocabulary_cache_"
"""The instance attribute holding a cache's entries: this and the method's name."""


def vocabulary_cache(
    maxsize: int, *, words: tuple[int, ...] = (), found_only: bool = False
) -> Callable[[F], F]:
    """Cache a method of positional arguments, keeping an entry only when its key is WordNet's own data: the
    arguments at the positions `words` (after `self`) are words of WordNet's vocabulary, as the instance's
    `_known(word)` says, and the others are WordNet identifiers. With `found_only` the value itself is the
    evidence instead (a look-up that found the word in WordNet's index): the entry is kept when it is truthy."""
    if maxsize < 1:
        raise ValueError("a cache holds at least one entry")

    def decorate(function: F) -> F:
        attribute = _PREFIX + function.__name__

        def cached(self: Any, *args: Any) -> Any:
            entries: dict[tuple[Any, ...], Any] | None = self.__dict__.get(attribute)
            if entries is None:
                entries = self.__dict__.setdefault(attribute, {})
            value = entries.get(args, _MISSING)
            if value is not _MISSING:
                return value
            question: dict[tuple[Any, ...], Any] | None = getattr(_QUESTION, "entries", None)
            if question is None:  # the outermost cached call: the question's scope opens and closes with it
                _QUESTION.entries = {}
                try:
                    return cached(self, *args)
                finally:
                    _QUESTION.entries = None
            key = (id(self), attribute, args)
            value = question.get(key, _MISSING)
            if value is _MISSING:
                value = function(self, *args)
                if not _public(self, args, words, value, found_only):
                    question[key] = value
                    return value
                if len(entries) >= maxsize:
                    drop_oldest(entries)
                entries[args] = value
            return value

        update_wrapper(cached, function)
        cached.vocabulary_cache = True  # type: ignore[attr-defined]
        return cast(F, cached)

    return decorate


def _public(owner: Any, args: tuple[Any, ...], words: tuple[int, ...], value: Any, found_only: bool) -> bool:
    """Whether the key is WordNet's own data (see `vocabulary_cache`)."""
    for position, argument in enumerate(args):
        if position in words:
            if not (value if found_only else owner._known(argument)):
                return False
        elif not _identifier(argument):
            return False
    return True


def _identifier(argument: object) -> bool:
    """A part of speech or a synset offset: the only other arguments the lexicon's cached methods take."""
    return isinstance(argument, str) and (
        argument in _PARTS or (len(argument) == 8 and argument.isascii() and argument.isdigit())
    )


def cached_keys(owner: object) -> dict[str, list[tuple[Any, ...]]]:
    """Every key each vocabulary cache of `owner` holds, by the cached method's name (what tests inspect)."""
    return {
        attribute.removeprefix(_PREFIX): list(entries)
        for attribute, entries in list(vars(owner).items())
        if attribute.startswith(_PREFIX)
    }


def clear_caches(owner: object) -> None:
    """Empty every vocabulary cache of `owner`."""
    for attribute in [name for name in vars(owner) if name.startswith(_PREFIX)]:
        vars(owner).pop(attribute, None)
