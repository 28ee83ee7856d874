"""The merge guard's general paraphrase signals of issue 27's fifth round: an acronym read as the words of
the other statement whose initials spell it (`acronyms`), a typo against the dictionary form of the other
statement's word (`typos`), and the inflected German negations ("keinen", "keinem"). Each pair here is a
paraphrase that only the signal merges, or an attack on it: the same wording with one value changed."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory import acronyms
from agent_memory.domain.memory.decide import decide
from agent_memory.domain.memory.slots import negations
from agent_memory.domain.records import MemoryType
from tests.unit.guard_cases import E5, LEXICON, NOW
from tests.unit.guard_cases import stored as _stored


def _action(old: str, new: str) -> str:
    return decide(new, NOW, MemoryType.DOMAIN_KNOWLEDGE, [(_stored(old), 0.99)], E5, lexicon=LEXICON).action


SAME = [
    ("Ines Duarte is the product owner for checkout", "Checkout's PO is Ines Duarte"),
    ("Deploys go through GitHub Actions", "Deploys go through GH Actions"),
    ("The SLA is 99.9%", "The service level agreement is 99.9%"),
    ("The TTL of the cache is 60 seconds", "The cache's time to live is 60 seconds"),
    (
        "User prefers tea over coffee in the mornings",
        "in the mornin the user would rather have tea than coffee",
    ),
]

DIFFERENT = [
    # initials that do not spell the acronym
    ("Ines Duarte is the product owner for checkout", "Checkout's PM is Ines Duarte"),
    ("The CTO is Carlos Mendes", "Carlos Mendes is the chief executive officer"),
    ("Deploys go through GH Actions", "Deploys go through GitLab Actions"),
    # the acronym spelled out, another value beside it
    ("The SLA is 99.9%", "The service level agreement is 99.5%"),
    ("The TTL is 60 seconds", "The time to live is 90 seconds"),
    ("A PR needs two approvals", "A pull request needs three approvals"),
    ("The VP of Sales is Dana Okafor", "Dana Okafor is the vice president of marketing"),
    ("The user's GP is Dr. Lindqvist", "The user's general practitioner is Dr. Berg"),
    ("The SRE team owns the pager", "The site reliability engineering team no longer owns the pager"),
    # an inflected German negation is a negation
    ("Der Nutzer trinkt keinen Kaffee", "Der Nutzer trinkt Kaffee"),
    ("Ich habe keinen Hund", "Ich habe einen Hund"),
]


@pytest.mark.parametrize(("old", "new"), SAME)
def test_a_paraphrase_read_by_the_general_signals_merges(old: str, new: str) -> None:
    assert _action(old, new) == "merge"


@pytest.mark.parametrize(("old", "new"), DIFFERENT)
def test_the_same_wording_with_one_value_changed_is_never_merged(old: str, new: str) -> None:
    assert _action(old, new) != "merge"


def test_an_acronym_stands_for_the_words_its_initials_spell_and_nothing_else() -> None:
    assert acronyms.expanded("Checkout's PO is Ines", "the product owner is Ines") == (
        ("po", ("product", "owner")),
    )
    assert acronyms.expanded("via GH Actions", "via GitHub Actions") == (("gh", ("GitHub",)),)
    assert acronyms.expanded("The PM is Ines", "the product owner is Ines") == ()
    # an acronym the other statement writes itself needs no spelling out
    assert acronyms.expanded("The PO is Ines", "The PO, product owner, is Ines") == ()
    # spelled out twice: which words it stands for is unknown
    assert acronyms.expanded("The PO is Ines", "product owner Ines, project owner Bo") == ()


def test_inflected_german_negations_count() -> None:
    assert negations("Der Nutzer trinkt keinen Kaffee") == 1
    assert negations("Ich habe keinem davon geschrieben") == 1
