"""Curator proposals on both runtimes: the LLM review (a scripted `ReviewModel`) proposes, the run reports it,
nothing changes until an admin accepts it over the API (then as that person, once)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.behaviour.conftest import Api, serve_api


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


class ScriptedReview:
    """The curator's review model (a `ReviewModel`): proposes merging the two deploy skills."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2000) -> str:
        self.prompts.append(prompt)
        proposal = {
            "kind": "merge",
            "skills": ["deploy-a", "deploy-b"],
            "reason": "the same procedure twice",
            "description": "Deploy the service",
            "body": "## Steps\n1. test\n2. ship",
        }
        return json.dumps({"proposals": [proposal]})


@pytest.fixture(scope="module", params=["local", "aws"])
def review_api(request, tmp_path_factory) -> Iterator[tuple[Api, ScriptedReview]]:
    review = ScriptedReview()
    yield from ((api, review) for api in serve_api(request.param, tmp_path_factory, curator_review=review))


def test_llm_proposals_are_reported_and_applied_only_when_a_person_accepts(review_api) -> None:
    api, review = review_api
    admin, writer = api.client("alpha"), api.client("alpha-projects-rw")
    ns = "/projects/skills-review"
    for name in ("deploy-a", "deploy-b"):
        body = {"namespace": ns, "name": name, "description": f"Deploy ({name})", "body": "## Steps\nship"}
        _ok(writer.post("/v1/skills", json=body), 201)

    run = _ok(admin.post("/v1/admin/curate", json={"namespace": ns}))["runs"][0]
    (proposal,) = run["proposals"]
    assert (proposal["kind"], proposal["skills"]) == ("merge", ["deploy-a", "deploy-b"])
    assert proposal["id"] in run["report"] and len(review.prompts) >= 1
    # never applied silently
    a = _ok(writer.get("/v1/skills/deploy-a", params={"namespace": ns, "record": "false"}))
    assert (a["version"], a["body"]) == (1, "## Steps\nship")

    accept = {"namespace": ns, "day": run["day"], "proposal_id": proposal["id"]}
    assert writer.post("/v1/admin/curator/accept", json=accept).status_code == 403
    missing = admin.post("/v1/admin/curator/accept", json={**accept, "proposal_id": "p-nope"})
    assert missing.status_code == 404
    accepted = _ok(admin.post("/v1/admin/curator/accept", json=accept))
    assert [(s["name"], s["status"]) for s in accepted["skills"]] == [
        ("deploy-a", "active"),
        ("deploy-b", "archived"),
    ]
    merged = _ok(writer.get("/v1/skills/deploy-a", params={"namespace": ns, "record": "false"}))
    assert (merged["body"], merged["description"], merged["version"]) == (
        "## Steps\n1. test\n2. ship",
        "Deploy the service",
        2,
    )
    again = admin.post("/v1/admin/curator/accept", json=accept)
    assert again.status_code == 409, again.text
