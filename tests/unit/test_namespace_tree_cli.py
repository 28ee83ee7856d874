"""`agent-memory export / snapshot` with a parent namespace: the namespaces below it are included (the README's
`agent-memory export -n /me` when the memories live in /me/users/...), `--no-children` opts out, and a result
that holds nothing exits 1 saying where the data is, never 0 with an empty bundle."""

from __future__ import annotations

import json
import tarfile

from agent_memory.domain.versioning.tree import children, pattern_reaches, subtree, within


def test_a_parent_is_a_segment_boundary_and_a_pattern_reaches_what_it_grants() -> None:
    assert within("/me", "/me") and within("/me", "/me/users/u-1") and not within("/me", "/mean")
    assert subtree("/me", ["/me/a", "/mean", "/me/b/c", "/other"]) == ["/me", "/me/a", "/me/b/c"]
    assert subtree("/me", ["/me/a"], include_children=False) == ["/me"]
    assert subtree("/me", ["/me/a/x", "/me/b"], visible=lambda ns: ns.startswith("/me/a/")) == ["/me/a/x"]
    assert children("/me", ["/me", "/me/a", "/mean"]) == ["/me/a"]
    assert (
        pattern_reaches("*", "/me") and pattern_reaches("/me/a/*", "/me") and pattern_reaches("/me/*", "/me")
    )
    assert pattern_reaches("/me/*", "/me/a") and pattern_reaches("/me/a", "/me")
    assert not pattern_reaches("/me/a/*", "/me/b") and not pattern_reaches("/mean/*", "/me")
    assert not pattern_reaches("/me", "/me/a")  # the exact parent grants nothing below it


def test_cli_export_and_snapshot_of_a_parent_include_its_children(tmp_path, capsys) -> None:
    from agent_memory.cli.main import main

    data = ["--data-dir", str(tmp_path / "data"), "--embedder", "hashing"]
    assert main([*data, "remember", "Alice prefers tea in the morning", "-n", "/me/users/alice"]) == 0
    assert main([*data, "remember", "Bob ships billing on Fridays", "-n", "/me/users/bob"]) == 0
    assert main([*data, "remember", "The mean team meets on Mondays", "-n", "/mean"]) == 0
    capsys.readouterr()

    out = tmp_path / "me.tar.gz"
    assert main([*data, "export", "-n", "/me", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"]["records"] == 2
    assert summary["namespaces"] == ["/me/users/alice", "/me/users/bob"]  # /me itself holds nothing
    with tarfile.open(out) as archive:
        records = archive.extractfile("records.jsonl").read().decode()  # type: ignore[union-attr]
    assert "Alice prefers tea" in records and "The mean team" not in records

    alone = tmp_path / "alone.tar.gz"
    assert main([*data, "export", "-n", "/me", "--no-children", "--out", str(alone)]) == 1
    said = capsys.readouterr()
    assert not alone.exists() and said.out == ""
    assert "/me/users/alice" in said.err and "/me/users/bob" in said.err and "--no-children" in said.err
    assert main([*data, "export", "-n", "/nobody", "--out", str(alone)]) == 1
    assert "namespaces that hold data: /me/users/alice" in capsys.readouterr().err

    assert main([*data, "snapshot", "create", "s1", "-n", "/me"]) == 0
    taken = json.loads(capsys.readouterr().out)
    assert [(m["namespace"], m["counts"]["records"]) for m in taken] == [
        ("/me", 0),
        ("/me/users/alice", 1),
        ("/me/users/bob", 1),
    ]
    assert main([*data, "remember", "Carol reviews every refund", "-n", "/me/users/carol"]) == 0
    capsys.readouterr()
    assert main([*data, "snapshot", "diff", "s1", "-n", "/me"]) == 0
    shown = capsys.readouterr().out
    assert "1 added" in shown and "Carol reviews every refund" in shown
    assert main([*data, "snapshot", "diff", "s1", "-n", "/me", "--no-children"]) == 0
    assert "0 added" in capsys.readouterr().out
    assert main([*data, "snapshot", "list", "-n", "/me"]) == 0
    assert "/me/users/bob  s1" in capsys.readouterr().out
    assert main([*data, "snapshot", "list", "-n", "/nobody"]) == 1
    assert "no snapshot of /nobody" in capsys.readouterr().err


def test_cli_list_of_a_parent_lists_its_children_and_an_empty_listing_says_where(tmp_path, capsys) -> None:
    from agent_memory.cli.main import main

    data = ["--data-dir", str(tmp_path / "data"), "--embedder", "hashing"]
    assert main([*data, "remember", "Alice prefers tea in the morning", "-n", "/me/users/alice"]) == 0
    assert main([*data, "remember", "The mean team meets on Mondays", "-n", "/mean"]) == 0
    capsys.readouterr()
    assert main([*data, "list", "-n", "/me"]) == 0
    listed = capsys.readouterr()
    assert listed.out.startswith("/me/users/alice  mem_") and "Alice prefers tea" in listed.out
    assert "The mean team" not in listed.out and listed.err == ""
    assert main([*data, "list", "-n", "/me", "--no-children"]) == 0
    alone = capsys.readouterr()
    assert alone.out == "" and "/me/users/alice" in alone.err and "--no-children" in alone.err


def test_erasing_a_child_removes_its_part_of_a_tree_snapshot_and_keeps_the_others(tmp_path, capsys) -> None:
    """A tree snapshot is one snapshot per namespace, so a purge of a child finds the child's part where it
    always looks (its own namespace) and leaves the siblings' parts."""
    from agent_memory.cli.main import main

    data = ["--data-dir", str(tmp_path / "data"), "--embedder", "hashing"]
    assert main([*data, "remember", "Alice prefers tea in the morning", "-n", "/me/users/alice"]) == 0
    assert main([*data, "remember", "Bob ships billing on Fridays", "-n", "/me/users/bob"]) == 0
    assert main([*data, "snapshot", "create", "s1", "-n", "/me"]) == 0
    capsys.readouterr()
    assert main([*data, "purge", "plan", "--namespace", "/me/users/alice"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert main([*data, "purge", "execute", plan["id"], "--reason", "erasure request"]) == 0
    capsys.readouterr()
    assert main([*data, "snapshot", "list", "-n", "/me"]) == 0
    listed = capsys.readouterr().out
    assert "/me/users/bob  s1" in listed and "/me/users/alice" not in listed


def test_cli_restore_of_a_tree_snapshot_restores_each_child_and_names_those_it_left(tmp_path, capsys) -> None:
    from agent_memory.cli.main import main

    data = ["--data-dir", str(tmp_path / "data"), "--embedder", "hashing"]
    assert main([*data, "remember", "Alice prefers tea in the morning", "-n", "/me/users/alice"]) == 0
    assert main([*data, "snapshot", "create", "s1", "-n", "/me"]) == 0
    assert main([*data, "remember", "The quarterly report is due on the fifth", "-n", "/me/users/alice"]) == 0
    assert main([*data, "remember", "Carol reviews every refund", "-n", "/me/users/carol"]) == 0
    capsys.readouterr()
    assert main([*data, "snapshot", "restore", "s1", "-n", "/me"]) == 0
    restored = json.loads(capsys.readouterr().out)
    assert restored["namespace"] == "/me" and restored["untouched"] == ["/me/users/carol"]
    (alice,) = restored["children"]
    assert alice["namespace"] == "/me/users/alice" and alice["counts"] == {"unchanged": 1, "archived": 1}
    assert main([*data, "list", "-n", "/me/users/alice", "--status", "active"]) == 0
    assert "quarterly report" not in capsys.readouterr().out
    assert main([*data, "snapshot", "restore", "s1", "-n", "/me", "--no-children", "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["children"] == []


def test_tree_selectors_grant_exactly_what_the_key_patterns_reach() -> None:
    from agent_memory.domain.versioning.tree import tree_selectors

    assert tree_selectors(["*"], "/me") == (("/me",), ("/me",))
    assert tree_selectors(["/me/*"], "/me/a") == (("/me/a",), ("/me/a",))  # /me/a and below: all granted
    assert tree_selectors(["/me/*"], "/me") == ((), ("/me",))  # below /me, never /me itself
    assert tree_selectors(["/me/a/*", "/me/b", "/meta/*", "/other"], "/me") == (("/me/b",), ("/me/a",))
    assert tree_selectors(["/projects/*"], "/me") == ((), ())
