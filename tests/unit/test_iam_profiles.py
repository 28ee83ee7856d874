"""The IAM contract judges each recorded call against the profiles whose code makes it (tests/iam/plugin.py)."""

from __future__ import annotations

from tests.iam.plugin import _made_in


def test_a_lean_only_call_is_judged_against_lean_and_not_against_isolated():
    invoke = {"principal": {"where": "adapters/aws/remote_file_store.py:120"}}
    assert _made_in(invoke, "lean")
    assert not _made_in(invoke, "isolated")


def test_every_other_call_is_judged_against_both_profiles():
    query = {"principal": {"where": "adapters/aws/dynamodb_store.py:412"}}
    assert _made_in(query, "lean") and _made_in(query, "isolated")
