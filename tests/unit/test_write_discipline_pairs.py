"""The write discipline's rules on the labelled pairs of tests/data/write_discipline_pairs.json (issue 15):
contradiction and supersede precision ≥ 0.9, chat turns of different speakers never in conflict, and a
near-duplicate merge only for statements that share most of their words (bench/write_discipline.py reports
the same figures with the embedding threshold included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.domain.memory.contradiction import assess, restates, speaker

PAIRS = json.loads((Path(__file__).parents[1] / "data" / "write_discipline_pairs.json").read_text())["pairs"]
OPPOSED = {"contradiction", "value_change"}


def test_contradiction_and_supersede_precision_on_the_labelled_pairs_reach_0_9():
    kinds = [(pair["label"], assess(pair["new"], pair["old"]).kind) for pair in PAIRS]
    flagged = [label for label, kind in kinds if kind != "none"]
    superseded = [label for label, kind in kinds if kind == "supersedes"]
    assert sum(label in OPPOSED for label in flagged) / len(flagged) >= 0.9
    assert sum(label in OPPOSED for label in superseded) / len(superseded) >= 0.9
    recall = sum(kind != "none" for label, kind in kinds if label in OPPOSED) / sum(
        label in OPPOSED for label, _ in kinds
    )
    assert recall >= 0.9


def test_every_labelled_near_duplicate_restates_and_most_look_alikes_do_not():
    for pair in PAIRS:
        if pair["label"] == "near_duplicate":
            assert restates(pair["new"], pair["old"]), pair
    look_alikes = [pair for pair in PAIRS if pair["label"] == "none"]
    assert sum(restates(pair["new"], pair["old"]) for pair in look_alikes) <= 0.1 * len(look_alikes)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Maya: Thanks, Leo! See you soon.", ("maya", "Thanks, Leo! See you soon.")),
        ("Mary Ann: I moved to Denver last spring", ("mary ann", "I moved to Denver last spring")),
        ("Release date: June 5", (None, "Release date: June 5")),
        ("Deadline: March 3", (None, "Deadline: March 3")),
    ],
)
def test_a_transcript_line_names_its_speaker_only_when_it_is_an_utterance(text, expected):
    assert speaker(text) == expected


def test_turns_of_different_speakers_never_contradict_or_restate_each_other():
    assert assess("Leo: I never drink coffee at work", "Maya: I drink coffee at work").kind == "none"
    assert not restates("Leo: Thanks, Maya! Talk soon!", "Maya: Thanks, Leo! Talk soon!")
    assert assess("Leo: I never drink coffee at work", "Leo: I drink coffee at work").kind == "supersedes"
