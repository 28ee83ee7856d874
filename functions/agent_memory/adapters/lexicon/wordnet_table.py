"""The bridge table: what `WordNetLexicon.defines` and `one_kind` read from WordNet 3.0's definitions and
pointers, precomputed for the Lambda layer's trimmed WordNet (issue 27).

The layer keeps WordNet's index files and only the synsets that have an antonym (infra/bundling.py
`trim_wordnet`): definitions, hypernyms, lexicographer files and derivation pointers would add ~13 MB to a
layer near its 50 MB budget. This table holds, computed by the adapter's own code over the whole data at
layer build time (deterministic, from the pinned `wn` package; nothing is read or downloaded at run time):

* for the first sense of every lemma and each of its direct hypernyms: the lexicographer file, the direct
  hypernyms, the content words of the definition that are lemmas (no other word can be a synset's member),
  and for a noun the kinds its definition names (`_genus`);
* for every lemma with derivation pointers: the forms it derives (`_lemma_derivations`);
* the first noun senses that are a kind of relative, "relative, relation" among all their hypernyms (`_kin`,
  for `kin_through`);
* for each first noun sense that is a named instance, the words of its kinds (`_name_kinds`, for
  `kinds_of_name`: instance hypernyms and part holonyms and one level above them, deep enough in the
  hierarchy), each distinct word set stored once.

Members of a synset are not stored: the index lists every synset of each lemma, so "is one of these words a
member of this synset" is asked of the index. The file is a short header line (format, and a fingerprint of
the two modules that compute the table: a table built by other code is refused as stale) and a zlib-packed
body, unpacked whole on first use (~3 MB in memory); a sense is decoded from its block of 32 on demand, the
kin and the names' kinds whole on their first question."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import sys
import threading
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .vocabulary_cache import vocabulary_cache

if TYPE_CHECKING:
    from .wordnet import WordNetLexicon

TABLE_NAME = "bridges.table"
_MAGIC = b"agent-memory wordnet bridge table\n"
_FORMAT = 2
_BLOCK = 32
_PART_CODES = {"noun": 0, "verb": 1, "adj": 2, "adv": 3}
_SECTIONS = ("words", "blocks", "senses", "derivations", "kin", "names")


def builder_fingerprint() -> str:
    """sha256 of the source of the modules that decide what the table holds (this one and wordnet.py)."""
    digest = hashlib.sha256()
    for name in ("wordnet.py", "wordnet_table.py"):
        digest.update((Path(__file__).with_name(name)).read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Sense:
    """What the bridges read of one synset (offsets are the synset's part of speech)."""

    lexfile: str = ""
    hypernyms: tuple[str, ...] = ()
    definition: frozenset[str] = frozenset()
    genus: tuple[str, ...] = ()


_NOTHING = Sense()


class _Body(NamedTuple):
    words: list[str]
    blocks: array[int]
    senses: bytes
    derivations: dict[str, str]
    kin: bytes
    names: bytes


class BridgeTable:
    """Reads a table written by `build_table`. The header is checked when the table is opened, so a stale or
    foreign file fails the lexicon's construction (a function's cold start), never a write."""

    def __init__(self, path: Path) -> None:
        self._path = path
        with path.open("rb") as file:
            magic, header = file.readline(), file.readline()
        if magic != _MAGIC:
            raise RuntimeError(f"{path} is not a WordNet bridge table")
        fields = json.loads(header)
        if fields.get("format") != _FORMAT or fields.get("builder") != builder_fingerprint():
            raise RuntimeError(
                f"{path} was built by other code than this adapter's (stale): rebuild it with "
                "infra/bundling.trim_wordnet (the layer build does)"
            )
        self._lengths: list[int] = fields["sections"]
        self._body: _Body | None = None
        self._kin: frozenset[int] | None = None
        self._names: dict[int, frozenset[str]] | None = None
        self._lock = threading.Lock()

    def _load(self) -> _Body:
        with self._lock:
            if self._body is None:
                raw = self._path.read_bytes()
                body = zlib.decompress(raw[raw.index(b"\n", len(_MAGIC)) + 1 :])
                parts, at = [], 0
                for length in self._lengths:
                    parts.append(body[at : at + length])
                    at += length
                blocks = array("I")
                blocks.frombytes(parts[1])
                if sys.byteorder != "little":
                    blocks.byteswap()
                words = parts[0].decode("utf-8").split("\n")
                self._body = _Body(words, blocks, parts[2], _derivations(parts[3]), parts[4], parts[5])
            return self._body

    @vocabulary_cache(32768)  # keyed by WordNet identifiers only (part of speech, offset)
    def sense(self, part: str, offset: str) -> Sense:
        """The synset's entry; an empty one for a synset the table does not hold (no bridge reaches it)."""
        words, blocks, senses = self._load()[:3]
        key = _PART_CODES[part] << 24 | int(offset)
        low, high = 0, len(blocks) // 2
        while low < high:  # the last block whose first key is at most `key`
            middle = (low + high) // 2
            if blocks[2 * middle] <= key:
                low = middle + 1
            else:
                high = middle
        for position, found, at in self._records(low - 1) if low else ():
            if found == key:
                return _decode(senses, at, words, functools.partial(self._offset, position))
        return _NOTHING

    def _records(self, block: int) -> Iterator[tuple[int, int, int]]:
        """(position, key, where its fields start) of each synset of one block."""
        _, blocks, senses = self._load()[:3]
        key, at = blocks[2 * block], blocks[2 * block + 1]
        end = blocks[2 * block + 3] if 2 * block + 3 < len(blocks) else len(senses)
        position = block * _BLOCK
        while at < end:
            delta, at = _varint(senses, at)
            key += delta
            yield position, key, at
            at = _skip(senses, at)
            position += 1

    def _offset(self, own: int, reference: int) -> str:
        """The synset offset a reference of the synset at position `own` names."""
        if reference & 1:
            return f"{reference >> 1:08d}"
        zigzag = reference >> 1
        target = own + (zigzag >> 1 if not zigzag & 1 else -((zigzag + 1) >> 1))
        for position, key, _ in self._records(target // _BLOCK):
            if position == target:
                return f"{key & 0xFFFFFF:08d}"
        raise RuntimeError(f"{self._path}: a reference to synset {target} beyond the table")

    def derivations(self, part: str, lemma: str) -> frozenset[str]:
        forms = self._load().derivations.get(f"{part} {lemma}")
        return frozenset(forms.split("\t")) if forms else frozenset()

    def kin(self, offset: str) -> bool:
        """Whether the noun synset is a first sense that is a kind of relative."""
        if self._kin is None:
            body = self._load()
            with self._lock:
                self._kin = frozenset(_sums(_all_varints(body.kin)))
        return int(offset) in self._kin

    def name_kinds(self, offset: str) -> frozenset[str]:
        """The words of the kinds of a noun first sense that is a named instance; empty for any other."""
        if self._names is None:
            body = self._load()
            with self._lock:
                self._names = _names(body.names, body.words)
        return self._names.get(int(offset), frozenset())


def _names(data: bytes, words: list[str]) -> dict[int, frozenset[str]]:
    """Offset → its kinds' words, from: the count of distinct word sets, each as its length and its sorted
    word ids' differences; then each instance as its offset's difference from the previous one and its set."""
    values = _all_varints(data)
    sets: list[frozenset[str]] = []
    at = 1
    for _ in range(values[0]):
        length = values[at]
        sets.append(frozenset(words[i] for i in _sums(values[at + 1 : at + 1 + length])))
        at += 1 + length
    offsets = _sums(values[at::2])
    return {offset: sets[index] for offset, index in zip(offsets, values[at + 1 :: 2], strict=True)}


def _all_varints(data: bytes) -> list[int]:
    values, at = [], 0
    while at < len(data):
        value, at = _varint(data, at)
        values.append(value)
    return values


def _sums(differences: list[int]) -> list[int]:
    return list(itertools.accumulate(differences))


def _derivations(text: bytes) -> dict[str, str]:
    """`part lemma` → the forms it derives, tab-separated (made a set when asked: most are never asked)."""
    return dict(line.split("\t", 1) for line in text.decode("utf-8").splitlines())


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _skip(data: bytes, at: int) -> int:
    """Where the next synset starts, past the fields starting at `at`."""
    at += 1
    for _ in range(3):
        count, at = _varint(data, at)
        for _ in range(count):
            _, at = _varint(data, at)
    return at


def _decode(data: bytes, at: int, words: list[str], resolve: Callable[[int], str]) -> Sense:
    lexfile = data[at]
    at += 1
    lists: list[list[int]] = []
    for _ in range(3):
        count, at = _varint(data, at)
        values = []
        for _ in range(count):
            value, at = _varint(data, at)
            values.append(value)
        lists.append(values)
    hypernyms, genus, ids = lists
    for i in range(1, len(ids)):
        ids[i] += ids[i - 1]  # sorted ids, stored as differences
    sense = Sense(
        lexfile=f"{lexfile:02d}",
        hypernyms=tuple(resolve(reference) for reference in hypernyms),
        definition=frozenset(words[i] for i in ids),
        genus=tuple(resolve(reference) for reference in genus),
    )
    return sense


# ------------------------------------------------------------------------------------------------ building


def build_table(directory: Path) -> bytes:
    """The table of the whole WordNet 3.0 in `directory`, computed by the adapter's own methods over the
    files read whole (a few seconds' work for the layer build, not a per-look-up binary search)."""
    from .wordnet import WordNetLexicon

    lexicon = WordNetLexicon(directory)
    lexicon._table = None  # the whole data, even beside a table built before
    lemmas = _whole(lexicon, directory)
    firsts = {(part, lexicon._offsets(part, lemma)[0]) for part, lemma in lemmas}
    synsets, read = set(firsts), set(firsts)
    for part, offset in firsts:  # one level up: what `one_kind` compares two levels up from a first sense
        own = lexicon._definition(part, offset)
        for upper_part, upper in lexicon._hypernyms(part, offset):
            if upper_part != part:
                raise ValueError(f"a hypernym across parts of speech: {part} {offset}, {upper_part} {upper}")
            synsets.add((part, upper))
            if lexicon._names(part, upper, own):
                read.add((part, upper))  # a definition naming its hypernym reads the hypernym's too
    known = {lemma for _, lemma in lemmas}
    definitions = {key: sorted(lexicon._definition(*key) & known) if key in read else [] for key in synsets}
    nouns = sorted(int(offset) for part, offset in firsts if part == "noun")
    kin = [offset for offset in nouns if lexicon._kin(f"{offset:08d}")]
    named = {offset: kinds for offset in nouns if (kinds := lexicon._name_kinds(f"{offset:08d}"))}
    counts = Counter(word for words in definitions.values() for word in words)
    counts.update(word for words in set(named.values()) for word in words)
    vocabulary = [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    ids = {word: i for i, word in enumerate(vocabulary)}
    order = sorted(synsets, key=lambda key: (_PART_CODES[key[0]], int(key[1])))
    position = {key: n for n, key in enumerate(order)}
    blocks, senses = array("I"), bytearray()
    previous = 0
    for n, (part, offset) in enumerate(order):
        key = _PART_CODES[part] << 24 | int(offset)
        if n % _BLOCK == 0:
            blocks.extend((key, len(senses)))
            previous = key
        genus = sorted(lexicon._genus(offset)) if part == "noun" else []  # one order whatever the hash seed
        uppers = sorted(int(upper) for _, upper in lexicon._hypernyms(part, offset))
        hypernyms = [_reference(n, position.get((part, f"{upper:08d}")), upper) for upper in uppers]
        genera = [_reference(n, position.get((part, target)), int(target)) for target in genus]
        word_ids = sorted(ids[word] for word in definitions[(part, offset)])
        senses += _varints([key - previous])
        senses.append(int(lexicon._lexfile(part, offset)))
        for values in (hypernyms, genera, _differences(word_ids)):
            senses += _varints([len(values), *values])
        previous = key
    if sys.byteorder != "little":
        blocks.byteswap()
    derivations = "".join(
        f"{part} {lemma}\t" + "\t".join(sorted(forms)) + "\n"
        for part, lemma in sorted(lemmas)
        if (forms := lexicon._lemma_derivations(part, lemma))
    )
    sections = [
        "\n".join(vocabulary).encode(),
        blocks.tobytes(),
        bytes(senses),
        derivations.encode(),
        _varints(_differences(kin)),
        _names_section(named, ids),
    ]
    header = {"format": _FORMAT, "builder": builder_fingerprint(), "sections": [len(s) for s in sections]}
    return _MAGIC + json.dumps(header).encode() + b"\n" + zlib.compress(b"".join(sections), 9)


def _names_section(named: dict[int, frozenset[str]], ids: dict[str, int]) -> bytes:
    """What `_names` reads: the distinct word sets, then each offset (ascending) with its set's index."""
    distinct = sorted({tuple(sorted(ids[word] for word in words)) for words in named.values()})
    index = {words: i for i, words in enumerate(distinct)}
    values = [len(distinct)]
    for word_ids in distinct:
        values += [len(word_ids), *_differences(list(word_ids))]
    previous = 0
    for offset in sorted(named):
        values += [offset - previous, index[tuple(sorted(ids[word] for word in named[offset]))]]
        previous = offset
    return _varints(values)


def _whole(lexicon: WordNetLexicon, directory: Path) -> list[tuple[str, str]]:
    """Point the lexicon at the files read whole, with unbounded memos; return every (part, lemma)."""
    from .wordnet import _PARTS

    lemmas: list[tuple[str, str]] = []
    for part in _PARTS:
        lexicon._index[part] = _WholeFile(directory / f"index.{part}")  # type: ignore[assignment]
        lexicon._data[part] = _WholeFile(directory / f"data.{part}")  # type: ignore[assignment]
        lemmas += [(part, key.decode("utf-8")) for key in lexicon._index[part].lines]  # type: ignore[attr-defined]
    for name in (
        "_offsets",
        "_synset",
        "_hypernyms",
        "_depth",
        "_definition",
        "_definition_forms",
        "_lexfile",
        "_lemmas",
        "_genus",
        "_kin",
        "_name_kinds",
    ):
        setattr(lexicon, name, functools.cache(getattr(lexicon, name)))
    return lemmas


class _WholeFile:
    """A WordNet file read whole, looked up by its lines' first field (what `_SortedFile.line` answers)."""

    def __init__(self, path: Path) -> None:
        self.lines = {
            line.split(b" ", 1)[0]: line.rstrip(b"\r\n")
            for line in path.read_bytes().splitlines()
            if line and not line.startswith(b"  ")
        }

    def line(self, key: bytes) -> bytes | None:
        return self.lines.get(key)


def _reference(own: int, target: int | None, offset: int) -> int:
    """A synset the table holds, as the zigzag distance between positions (near ones are short); any other as
    its offset. The low bit tells which."""
    if target is None:
        return offset << 1 | 1
    distance = target - own
    return (distance << 1 if distance >= 0 else (-distance << 1) - 1) << 1


def _differences(values: list[int]) -> list[int]:
    return [value - (values[i - 1] if i else 0) for i, value in enumerate(values)]


def _varints(values: Iterable[int]) -> bytes:
    out = bytearray()
    for value in values:
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)
