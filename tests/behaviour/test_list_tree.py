"""`GET /v1/memories` over a namespace tree, on both runtimes (SQLite: an index range; DynamoDB: key ranges of
the tree index): by default it lists the parent and every namespace below it that the key may read, by
namespace then oldest first, never a sibling named alike (`/me` does not cover `/meta`); with
`include_children=false` an empty parent says which namespaces below it hold memories instead of answering a
silent empty list, and an empty tree says so too."""

from __future__ import annotations

import uuid


def _all(client, **params) -> list[dict]:
    items, cursor = [], None
    while True:
        page = client.get(
            "/v1/memories", params={**params, "limit": 2, **({"cursor": cursor} if cursor else {})}
        )
        assert page.status_code == 200, page.text
        items.extend(page.json()["items"])
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return items


def test_a_parent_lists_its_children_on_request_and_an_empty_parent_says_where_they_are(api):
    client = api.client()
    root = f"/t{uuid.uuid4().hex[:8]}"
    written = {
        f"{root}/users/u-1": "Ana prefers green tea after lunch",
        f"{root}/users/u-2": "Ben ships the billing service on Fridays",
        f"{root}/team": "The team standup is at 09:30 every weekday",
        f"{root}x/other": "A sibling named alike is never below the parent",
    }
    for namespace, content in written.items():
        answer = client.post("/v1/memories", json={"content": content, "namespace": namespace})
        assert answer.status_code == 201, answer.text

    tree = _all(client, namespace=root)
    alone = client.get("/v1/memories", params={"namespace": root, "include_children": "false"}).json()
    archived = client.get(
        "/v1/memories", params={"namespace": root, "status": "archived", "include_children": "false"}
    ).json()
    below = _all(client, namespace=f"{root}/users")
    empty_tree = client.get("/v1/memories", params={"namespace": f"{root}/nobody"}).json()

    assert [m["namespace"] for m in tree] == sorted(ns for ns in written if not ns.startswith(root + "x"))
    assert alone["items"] == [] and alone["next_cursor"] is None
    assert alone["child_namespaces"] == sorted(ns for ns in written if not ns.startswith(root + "x"))
    assert f"{root}/users/u-1" in alone["empty_reason"] and "include_children=false" in alone["empty_reason"]
    assert archived["child_namespaces"] == [] and "matching these filters" in archived["empty_reason"]
    assert [m["content"] for m in below] == [written[f"{root}/users/u-1"], written[f"{root}/users/u-2"]]
    assert empty_tree["items"] == [] and "nor any namespace below it" in empty_tree["empty_reason"]


def test_a_key_for_part_of_a_tree_lists_only_its_part(api):
    admin, scoped = api.client(), api.client("alpha-projects-rw")
    tag = uuid.uuid4().hex[:8]
    for namespace in (f"/projects/{tag}", f"/other-{tag}/x"):
        answer = admin.post(
            "/v1/memories", json={"content": f"Kept in {namespace} for the key test", "namespace": namespace}
        )
        assert answer.status_code == 201, answer.text

    listed = {m["namespace"] for m in _all(scoped, namespace="/projects")}
    refused = scoped.get("/v1/memories", params={"namespace": f"/other-{tag}"})
    parent_alone = scoped.get("/v1/memories", params={"namespace": "/projects", "include_children": "false"})

    assert f"/projects/{tag}" in listed and all(ns.startswith("/projects/") for ns in listed)
    assert refused.status_code == 403
    assert parent_alone.status_code == 403  # `/projects/*` grants below /projects, not /projects itself


def test_a_key_for_one_namespace_lists_it_alone_never_a_child_or_a_sibling_named_alike(api):
    admin, billing = api.client(), api.client("alpha-billing-ro")
    for namespace in (
        "/projects/billing",
        "/projects/billing2",
        "/projects/billing/sub",
        "/projects/billinx",
    ):
        answer = admin.post(
            "/v1/memories", json={"content": f"Kept in {namespace} for the exact key", "namespace": namespace}
        )
        assert answer.status_code == 201, answer.text

    # `/projects/billing` grants that namespace only: a tree listing of its parent (the default) is it alone
    listed = {m["namespace"] for m in _all(billing, namespace="/projects")}
    below = billing.get("/v1/memories", params={"namespace": "/projects/billing/sub"})

    assert listed == {"/projects/billing"}
    assert below.status_code == 403
