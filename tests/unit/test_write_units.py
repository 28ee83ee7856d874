"""Units after a number (domain/memory/slots.py, issue 27): spelled out or abbreviated, one unit is one value
("20 megabytes" = "20 MB", "30 seconds" = "30 s", "21 degrees Celsius" = "21°C"); another unit or scale is
another value, and a change of it is an update, never a merge."""

from __future__ import annotations

import pytest

from agent_memory.domain.memory.paraphrase import same_meaning
from agent_memory.domain.memory.relation import relate
from agent_memory.domain.memory.slots import values


@pytest.mark.parametrize(
    "short,spelled",
    [
        ("Max upload size is 20 MB", "Max upload size is 20 megabytes"),
        ("The request timeout is 30 s", "The request timeout is 30 seconds"),
        ("The office is kept at 21°C", "The office is kept at 21 degrees Celsius"),
        ("The freezer is set to 0 °F", "The freezer is set to 0 degrees Fahrenheit"),
        ("Each log file is capped at 512 KB", "Each log file is capped at 512 kilobytes"),
    ],
)
def test_a_unit_spelled_out_is_the_same_value(short: str, spelled: str) -> None:
    assert values(short) == values(spelled)
    assert same_meaning(spelled, short).allowed


@pytest.mark.parametrize(
    "old,new",
    [
        ("Max upload size is 20 MB", "Max upload size is 20 gigabytes"),
        ("The office is kept at 21°C", "The office is kept at 21°F"),
        ("The office is kept at 21°C", "The office is kept at 21 degrees"),  # no scale: not the same value
        ("The request timeout is 30 s", "The request timeout is 30 ms"),
    ],
)
def test_another_unit_is_another_value(old: str, new: str) -> None:
    assert values(old) != values(new)
    assert not same_meaning(new, old).allowed


def test_a_new_value_in_a_spelled_unit_is_an_update() -> None:
    assert relate("The office is kept at 23 degrees Celsius", "The office is kept at 21°C").kind == "update"
