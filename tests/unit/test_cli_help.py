"""The CLI explains itself: every subcommand and every argument has a help text, and `archive-decayed` says why
it examined nothing on fresh data."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator

import pytest

from agent_memory.cli.main import _parser, main


def _walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            described = {choice.dest for choice in action._choices_actions}
            for name, sub in action.choices.items():
                assert name in described, f"`{path} {name}` has no help= in its add_parser"
                yield from _walk(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_subcommand_and_argument_has_a_help_text():
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, action in _walk(_parser(), "agent-memory")
        if not (action.help and action.help.strip()) or action.help == argparse.SUPPRESS
    ]
    assert not missing, missing


def test_subcommand_help_describes_the_options(capsys):
    for argv in (["recall", "--help"], ["files", "--help"], ["files", "add", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
    out = capsys.readouterr().out
    assert "how many memories to return" in out  # -k
    assert "ISO 8601" in out  # --as-of
    assert "add an entry" in out  # the files verbs are described, not only listed
    assert "memory (MEMORY.md) or user (USER.md)" in out


def test_archive_decayed_on_fresh_data_says_why_nothing_was_examined(tmp_path, capsys):
    base = ["--data-dir", str(tmp_path), "--embedder", "hashing"]
    assert main([*base, "remember", "The build uses make", "-n", "/projects/demo"]) == 0
    capsys.readouterr()
    assert main([*base, "archive-decayed", "--dry-run"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["examined"] == 0
    assert report["note"].startswith("0 examined: no active memory has gone unused for 30 days yet")
