"""Issue 16's closing table as a test, on both runtimes (see conftest.py): every bad input of
bench/hardening.py (`.venv/bin/python bench/hardening.py` prints the Markdown table) is refused with its exact
4xx, no request of its row answers 5xx (the bad one, nor the reads of the namespace after it), and nothing is
stored in the namespace."""

from __future__ import annotations

import pytest

from bench.hardening import ROWS, Bad, run_row
from tests.behaviour.conftest import Api


def test_the_table_has_at_least_40_distinct_bad_inputs() -> None:
    assert len(ROWS) >= 40
    assert len({bad.slug for bad in ROWS}) == len(ROWS)


@pytest.mark.parametrize("bad", ROWS, ids=[bad.slug for bad in ROWS])
def test_a_bad_input_is_refused_precisely_and_stores_nothing(api: Api, bad: Bad) -> None:
    outcome = run_row(api, bad)
    assert outcome.server_errors == 0, (
        f"{outcome.server_errors} server errors; the bad request got {outcome.answer}"
    )
    assert outcome.stored == 0, f"{outcome.stored} changes stored by a request answered {outcome.status}"
    assert outcome.status == bad.expected, outcome.answer
