"""Who and what a recall question is about (issue 34), read from the question alone, without a model.

* **Subject**: a question that names a person ("What activities does Melanie partake in?") is answered by
  what that person said, far more often than by what others said to or about them. On LoCoMo's ten
  conversations 96 % of the evidence turns of a question naming one speaker are that speaker's own turns
  (categories 1-4), while the name itself is a weak keyword: it appears in about half of the conversation
  (every turn of that speaker is labelled with it, and the other speaker addresses them by name). A memory
  whose transcript label (`Name: text`, `[Name] text`; `contradiction.speaker`) names someone the question
  does not name keeps only `off_subject` of its relevance. Memories without a label are never touched, nor is
  any memory when the question names no person: the recaller passes the names that label a turn among the
  keyword half's top hits (`people`), so "Who owns the Atlas service?" moves no note down (issue 34, ninth
  round: in an agent's memory most capitalised words name services and places).
* **Time**: a question asking when ("When did…", "How long ago…", "What year…") is answered by a memory that
  says when ("last week", "yesterday", "in May", "2022"): a memory without a time expression keeps only
  `untimed` of its relevance.
* **Asking, not telling**: a memory whose statement ends with a question mark ("Caroline: What's your best
  camping memory?") asks about the topic it shares with the question rather than holding an answer: it keeps
  `asking` of its relevance, whatever the question. On LoCoMo's dev conversations 16 % of the evidence turns
  end with "?" against 35 % of the other turns in a top 10 (issue 34, eighth round).
* **About oneself**: when the question names someone, a transcript turn whose speaker says nothing about
  themselves (no "I", "me", "my", "we", "our"…: "Wow, Caroline, that painting is awesome!") reacts to the
  other rather than telling a fact of its own, and keeps `no_self` of its relevance. Dev: 15 % of the evidence
  turns of multi-hop, open-domain and single-hop questions have no first-person word, against 28 % of the
  other turns in a top 10.

Every factor only lowers a relevance (factors ≤ 1, the date focus's too), so `recall.select_top`'s bound (a
score never exceeds the relevance the candidate was ordered by) still holds and its lazy hydration stays
exact."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..memo import memo
from ..patterns import lazy
from ..records import MemoryRecord
from ..text import STOPWORDS
from .contradiction import speaker
from .dates import Span, asked_range, overlaps, reference_date, spans_of
from .policy import MemoryPolicy

# Capitalised words, possessive cut ("Melanie's" → "Melanie"); a name of several words is matched word by word.
_CAPITALISED_RE = lazy(r"\b[A-Z][\w-]*?(?=(?:['’]s)?\b)")
# Capitalised words that start a question or a clause but name no one.
_NOT_NAME_TEXT = """
    what when where who whom whose which why how would could should did does do is are was were has have had
    will can may might shall must am i if in on at of for from to with about after before during since until
    any some all both either neither each every many much more most other another such the a an and or but
    not no yes
"""
_NOT_NAMES = frozenset(_NOT_NAME_TEXT.split())
_WHEN_RE = lazy(
    r"^\s*(?:when\b|how\s+long\s+ago\b|what\s+(?:year|month|date|day|time)\b|"
    r"in\s+which\s+(?:year|month)\b|which\s+(?:year|month|day)\b)",
    re.IGNORECASE,
)
_HYPOTHETICAL_RE = lazy(r"\b(?:would|likely|might|could|probably)\b", re.IGNORECASE)
# A modal addressed to the one asked ("Could you…", "Would you mind…") or said of oneself ("I would like…",
# "I'd like…", "Could I get…"): a polite request, not a question about what its subject would do.
_REQUEST_MODAL_RE = lazy(
    r"\b(?:(?:would|could|might)\s+(?:you|u|ya|i|we)\b|(?:i|we)\s+(?:would|could|might)\b|(?:i|we)['’]d\b)",
    re.IGNORECASE,
)
# First-person words ("I'm", "we've": the pronoun before the apostrophe matches).
_FIRST_PERSON_RE = lazy(r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves)\b", re.IGNORECASE)
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_TIME_RE = lazy(
    rf"\b(?:{_MONTHS}|{_WEEKDAYS})\b|\b(?:19|20)\d\d\b|\d{{1,2}}[/.]\d{{1,2}}|"
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|weekend)\b|"
    r"\b(?:last|next|this|past|previous|coming|few|couple\s+of)\s+(?:\w+\s+)?"
    r"(?:days?|nights?|weeks?|weekends?|months?|years?|summer|winter|spring|fall|autumn|morning|evening)\b|"
    r"\b(?:days?|weeks?|months?|years?)\s+(?:ago|later|before|after|back)\b|"
    r"\b(?:since|until|when\s+i\s+was)\b",
    re.IGNORECASE,
)


def named(text: str) -> frozenset[str]:
    """The casefolded names a text mentions: its capitalised words that are not question or function words
    ("When did Caroline meet Jean's mom?" → {caroline, jean})."""
    words = (match.group(0).casefold() for match in _CAPITALISED_RE.finditer(text))
    return frozenset(word for word in words if word not in _NOT_NAMES and word not in STOPWORDS)


def without_names(question: str, names: frozenset[str] | None = None) -> str:
    """The question without the names it mentions (`named`, or only `names` when given; a possessive "'s"
    with its name): the text the vector half embeds ("What activities does Melanie partake in?" → "What
    activities does partake in?").

    A speaker's name says who, which the subject focus already weighs; in a small embedder's query vector it
    says more than the topic does, and pulls turns that mention the name (the other speaker's "Thanks,
    Melanie!") over the turns that answer. LoCoMo R@10 multi-hop 0.480 → 0.546 dev, 0.469 → 0.502 non-dev
    (bench/README.md, issue 34, sixth round). The recaller leaves out people's names only (`people`): the
    name of a product or a place is what the question is about ("Who owns the Atlas service?"). The question
    itself when nothing but names would be left."""
    names = named(question) if names is None else names
    if not names:
        return question
    kept, start = [], 0
    for match in _CAPITALISED_RE.finditer(question):
        if match.group(0).casefold() not in names:
            continue
        end = match.end()
        if question[end : end + 2] in ("'s", "’s"):
            end += 2
        kept.append(question[start : match.start()])
        start = end
    kept.append(question[start:])
    text = " ".join("".join(kept).split())
    return text if any(character.isalnum() for character in text) else question


def people(question: str, speakers: frozenset[str]) -> frozenset[str]:
    """The question's names (`named`) that name a person: every name of a run of names (consecutive
    capitalised words, "Ines Okafor-Lund", "Dario Quell") one of whose words labels a transcript turn
    (`Name: text`, `[Name] text`) among `speakers`, the label words of the memories recall read for it.

    A capitalised word is a person's name far less often in an agent's memory than in a chat between two
    people: "Atlas", "Beacon", "Stripe" name services, and the question is about them. A name that speaks
    in the namespace is a person's; the labels are read from the memories recall loads anyway (no list of
    first names, no extra call), so the test costs a set intersection. "Decision: …" labels a note, and no
    question names "Decision"."""
    names = named(question)
    if not names or not speakers:
        return frozenset()
    found: set[str] = set()
    for run in _runs(question, names):
        if speakers.intersection(run):
            found.update(run)
    return frozenset(found)


def _runs(question: str, names: frozenset[str]) -> list[list[str]]:
    """The question's names in runs: consecutive names separated by nothing but spaces or hyphens."""
    runs: list[list[str]] = []
    end = -1
    for match in _CAPITALISED_RE.finditer(question):
        word = match.group(0).casefold()
        if word not in names:
            end = -1
            continue
        if end >= 0 and not question[end : match.start()].strip(" -"):
            runs[-1].append(word)
        else:
            runs.append([word])
        end = match.end()
    return runs


def speakers_of(records: Iterable[MemoryRecord]) -> frozenset[str]:
    """Every word of the speaker labels of these memories' transcript turns (memoised per content)."""
    words: set[str] = set()
    for record in records:
        words.update(_traits(record.content)[0])
    return frozenset(words)


def hypothetical(question: str) -> bool:
    """True for a question about what its subject would or might do or be ("Would Melanie likely enjoy…?",
    "What might Caroline say…?", "Would the user like a window seat?"): answered by a fact that implies it,
    which shares the topic rather than the question's words. A polite request is not one: a modal addressed to
    the one asked or said of oneself ("Could you remind me…", "Would you mind checking…", "I'd like to
    know…") is left out, and the question is hypothetical only when another modal, "likely" or "probably"
    remains ("Could you check whether Tomas would like…")."""
    return _HYPOTHETICAL_RE.search(_REQUEST_MODAL_RE.sub(" ", question)) is not None


def asks_when(text: str) -> bool:
    """True for a question about a date or a time span ("When did…", "How long ago…", "What year…")."""
    return _WHEN_RE.search(text) is not None


def says_when(text: str) -> bool:
    """True when a text holds a time expression: a month or weekday, a year, a date, or a relative time
    ("yesterday", "last week", "two years ago")."""
    return _TIME_RE.search(text) is not None


@dataclass(frozen=True)
class Focus:
    """The relevance factor of each recalled memory for one question (1.0: untouched)."""

    names: frozenset[str] = frozenset()
    off_subject: float = 1.0
    when: bool = False
    untimed: float = 1.0
    asked: Span | None = None
    off_date: float = 1.0
    asking: float = 1.0
    no_self: float = 1.0

    @property
    def active(self) -> bool:
        return (
            (bool(self.names) and self.off_subject < 1.0)
            or (self.when and self.untimed < 1.0)
            or (self.asked is not None and self.off_date < 1.0)
            or self.asking < 1.0
            or (bool(self.names) and self.no_self < 1.0)
        )

    def factor(self, record: MemoryRecord) -> float:
        # a statement is the tail of its memory's content, so the memory asks when its content does (no parse)
        factor = self.asking if self.asking < 1.0 and asks(record.content) else 1.0
        if self.names or self.when:
            said_by, timed, of_self = _traits(record.content)
            if self.names and said_by and not said_by & self.names:
                factor *= self.off_subject
            if self.names and said_by and not of_self:
                factor *= self.no_self
            if self.when and not timed:
                factor *= self.untimed
        if self.asked is not None and self.off_date < 1.0:
            reference = reference_date(record.metadata, record.valid_from)
            spans = spans_of(record.content, reference) or (
                ((reference, reference),) if reference is not None else ()
            )
            if spans and not overlaps(spans, self.asked):
                factor *= self.off_date
        return factor


@memo(maxsize=16384)
def _traits(content: str) -> tuple[frozenset[str], bool, bool]:
    """(the words of the memory's speaker label, whether its statement says when, whether it speaks of
    oneself), memoised: the same memories come back recall after recall, and the scans cost ~50 µs per memory
    on a busy 2-core host."""
    said_by, said = speaker(content)
    words = frozenset(said_by.split()) if said_by else frozenset()
    return words, says_when(said), _FIRST_PERSON_RE.search(said) is not None


def asks(statement: str) -> bool:
    """True when a statement ends with a question mark (closing quotes and brackets aside): it asks."""
    return statement.rstrip().rstrip("\"'’”)]").endswith("?")


def focus_of(
    question: str,
    *,
    off_subject: float,
    untimed: float,
    off_date: float = 1.0,
    asking: float = 1.0,
    no_self: float = 1.0,
    people: frozenset[str] | None = None,
) -> Focus:
    """The focus of `question`: whom it names (`people`, the names of persons among its names; every name it
    mentions when None), whether it asks when and the dates it names (policy factors given; `asking` applies
    to every memory that asks, whatever the question)."""
    return Focus(
        names=named(question) if people is None else people,
        off_subject=off_subject,
        when=asks_when(question),
        untimed=untimed,
        asked=asked_range(question) if off_date < 1.0 else None,
        off_date=off_date,
        asking=asking,
        no_self=no_self,
    )


def focus_for(question: str, policy: MemoryPolicy, people: frozenset[str] | None = None) -> Focus:
    """The focus of `question` with the policy's factors (`people`: see `focus_of`)."""
    return focus_of(
        question,
        people=people,
        off_subject=policy.focus_off_subject,
        untimed=policy.focus_untimed,
        off_date=policy.focus_off_date,
        asking=policy.focus_asking,
        no_self=policy.focus_no_self,
    )
