"""Namespaces as a tree over the API (the SDK against the running local server): export, snapshots, diff and
their listing take a parent and include the namespaces below it (`include_children=false` opts out), an empty
answer says why and where the data is, and a parent never widens a key: a key for `/me/a/*` exporting `/me`
gets `/me/a/...` and never `/me/b`."""

from __future__ import annotations

import json
import uuid

import pytest

from agent_memory_client import Client, errors

from .conftest import Server


def _records(bundle: dict) -> list[dict]:
    lines = bundle["members"]["records.jsonl"].splitlines()
    return [json.loads(line)["record"] for line in lines if line.strip()]


@pytest.fixture
def tree(server: Server) -> str:
    """A fresh parent `/me-<id>` holding nothing itself, with data in two users' namespaces below it."""
    root = f"/me-{uuid.uuid4().hex[:8]}"
    with Client(server.url, server.keys["admin"]) as admin:
        admin.remember("Alice prefers tea in the morning", f"{root}/users/alice")
        admin.remember("Bob ships the billing service on Fridays", f"{root}/users/bob")
    return root


def test_export_of_a_parent_includes_its_children_and_the_opt_out_says_where_the_data_is(
    server: Server, tree: str
) -> None:
    with Client(server.url, server.keys["admin"]) as admin:
        bundle = admin.export(tree)
        assert bundle["manifest"]["namespaces"] == [
            f"{tree}/users/alice",
            f"{tree}/users/bob",
        ]  # /me is empty
        assert sorted(r["content"] for r in _records(bundle)) == [
            "Alice prefers tea in the morning",
            "Bob ships the billing service on Fridays",
        ]
        alone = admin.export(tree, include_children=False)
        assert _records(alone) == []
        note = alone["manifest"]["source"]["note"]
        assert f"{tree}/users/alice" in note and f"{tree}/users/bob" in note and "include_children" in note
        # a prefix of a segment is not a parent: /me-x is not below /me
        assert admin.export(f"{tree}/users/al")["manifest"]["source"]["note"].startswith(f"{tree}/users/al ")


def test_snapshot_list_and_diff_of_a_parent_cover_its_children(server: Server, tree: str) -> None:
    with Client(server.url, server.keys["admin"]) as admin:
        taken = admin.create_snapshot(tree, "before")
        assert taken["namespace"] == tree and taken["counts"]["records"] == 0
        assert [c["namespace"] for c in taken["children"]] == [f"{tree}/users/alice", f"{tree}/users/bob"]
        assert [c["counts"]["records"] for c in taken["children"]] == [1, 1]
        with pytest.raises(errors.Conflict, match="already exists"):
            admin.create_snapshot(tree, "before")

        added = admin.remember("Carol reviews every refund", f"{tree}/users/carol")["memory"]["id"]
        changed = admin.remember("Bob now ships billing on Mondays", f"{tree}/users/bob")
        diff = admin.snapshot_diff("before", tree)
        assert f"{tree}/users/carol" in diff["namespaces"]
        kinds = {item["id"]: item["kind"] for item in diff["records"]}
        assert kinds[added] == "added" and changed["memory"]["id"] in kinds
        assert admin.snapshot_diff("before", tree, include_children=False)["records"] == []

        listed = admin.list_snapshots(tree)["items"]
        assert sorted(s["namespace"] for s in listed) == [tree, f"{tree}/users/alice", f"{tree}/users/bob"]
        assert [s["namespace"] for s in admin.list_snapshots(tree, include_children=False)["items"]] == [tree]

        planned = admin.restore_snapshot("before", tree, dry_run=True)
        assert [c["namespace"] for c in planned["children"]] == [f"{tree}/users/alice", f"{tree}/users/bob"]
        assert planned["untouched"] == [f"{tree}/users/carol"]
        assert admin.restore_snapshot("before", tree, dry_run=True, include_children=False)["children"] == []

        since = taken["created_at"]
        by_time = admin.diff(tree, since)
        assert added in {item["id"] for item in by_time["records"]}
        assert admin.diff(tree, since, include_children=False)["records"] == []


def test_a_parent_never_widens_a_keys_namespaces(server: Server) -> None:
    root = f"/me/a/t{uuid.uuid4().hex[:6]}"
    with Client(server.url, server.keys["admin"]) as admin:
        admin.remember("Kept under /me/a: the a-team's deploy day is Tuesday", root)
        admin.remember("Kept under /me/b: the b-team's secret launch date", "/me/b/plans")
        admin.remember("Kept in /me itself: the household budget", "/me")
    with Client(server.url, server.keys["me-a"]) as scoped:
        bundle = scoped.export("/me")
        assert bundle["manifest"]["namespaces"] and all(
            ns.startswith("/me/a/") for ns in bundle["manifest"]["namespaces"]
        )
        contents = {r["content"] for r in _records(bundle)}
        assert "Kept under /me/a: the a-team's deploy day is Tuesday" in contents
        assert not any("/me/b" in c or "/me itself" in c for c in contents)
        assert "/me/b" not in json.dumps(bundle)
        with pytest.raises(errors.Forbidden):
            scoped.export("/me/b")
        with pytest.raises(errors.Forbidden):
            scoped.export("/me", include_children=False)  # /me alone is not the key's
        with pytest.raises(errors.Forbidden):
            scoped.create_snapshot(
                "/me", "widen"
            )  # a snapshot is named by its parent, which must be the key's
        assert all(s["namespace"].startswith("/me/a/") for s in scoped.list_snapshots("/me")["items"])


def test_listing_memories_includes_the_children_by_default_within_the_keys_namespaces(
    server: Server, tree: str
) -> None:
    with Client(server.url, server.keys["admin"]) as admin:
        alone = admin.list_memories(tree, include_children=False)  # the parent alone holds nothing
        assert alone["items"] == [] and alone["child_namespaces"] == [
            f"{tree}/users/alice",
            f"{tree}/users/bob",
        ]
        listed = list(admin.iter_memories(tree, page_size=1))  # children included by default
        assert [m["namespace"] for m in listed] == [f"{tree}/users/alice", f"{tree}/users/bob"]
    with Client(server.url, server.keys["me-a"]) as scoped:
        admin_ns = f"/me/a/l{uuid.uuid4().hex[:6]}"
        with Client(server.url, server.keys["admin"]) as admin:
            admin.remember("Listed under /me/a for the scoped key", admin_ns)
            admin.remember("Never listed to the /me/a key: the b plans", "/me/b/list")
        seen = {m["namespace"] for m in scoped.iter_memories("/me")}
        assert admin_ns in seen and all(ns.startswith("/me/a/") for ns in seen)
        with pytest.raises(errors.Forbidden):
            scoped.list_memories("/me", include_children=False)
        with pytest.raises(errors.Forbidden):
            scoped.list_memories("/other", include_children=True)
