"""The numbers and names the README and docs/architecture.md quote are the code's: routes from the app, limits
from the policy defaults, the Lambda functions and the tenant role's trusted functions from the synthesized
stack, the cost at rest from bench/cost_at_rest.py's arithmetic over the shipped cdk.json. A claim that drifts
fails here instead of misleading a newcomer. The templates are synthesized once per run (tests/iam/synth.py)."""

from __future__ import annotations

import copy
import functools
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()
SECURITY = (ROOT / "docs" / "security.md").read_text()
DECISIONS = ROOT / "docs" / "decisions"

HTTP_METHODS = ("GET", "POST", "PATCH", "PUT", "DELETE")
_ROUTE = re.compile(r"`((?:GET|POST|PATCH|PUT|DELETE)(?:/(?:GET|POST|PATCH|PUT|DELETE))*) (/[^`\s]*)`")


def _number(text: str) -> float:
    return float(text.replace(",", ""))


# --------------------------------------------------------------------------- structure


def test_the_architecture_overview_stays_short() -> None:
    lines = len(ARCHITECTURE.splitlines())
    assert lines <= 300, (
        f"docs/architecture.md has {lines} lines: move detail to docs/reference/ or a decision"
    )


@pytest.mark.parametrize(
    "document", ["README.md", "docs/architecture.md", "docs/decisions/README.md", "bench/README.md"]
)
def test_every_relative_link_resolves(document: str) -> None:
    path = ROOT / document
    broken = [
        target
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text())
        if "://" not in target and not (path.parent / target).exists()
    ]
    assert not broken, f"{document} links to missing files: {broken}"


def test_every_numbered_decision_record_is_in_the_index_and_has_its_three_parts() -> None:
    index = (DECISIONS / "README.md").read_text()
    numbered = sorted(p for p in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert numbered, "no decision records found"
    for record in numbered:
        assert f"({record.name})" in index, f"{record.name} is not listed in docs/decisions/README.md"
    for record in DECISIONS.glob("*.md"):  # topic-named records from other work included
        if record.name == "README.md":
            continue
        text = record.read_text()
        for part in ("## Context", "## Decision", "## Consequences"):
            assert part in text, f"{record.name} has no '{part}' section"


def test_the_dynamodb_store_points_to_a_document_that_exists() -> None:
    source = (ROOT / "functions" / "agent_memory" / "adapters" / "aws" / "dynamodb_store.py").read_text()
    for target in re.findall(r"docs/[\w./-]+\.md", source):
        assert (ROOT / target).exists(), f"dynamodb_store.py points to {target}, which does not exist"


# --------------------------------------------------------------------------- routes and limits


@functools.lru_cache(maxsize=1)
def _app_routes() -> frozenset[tuple[str, str]]:
    from agent_memory.api.openapi import openapi_document

    return frozenset(
        (method.upper(), path)
        for path, item in openapi_document()["paths"].items()
        for method in item
        if method.upper() in HTTP_METHODS
    )


def _readme_routes() -> set[tuple[str, str]]:
    """`METHOD /path` and `GET/POST /path` in the route table, relative to /v1; `…/x` and `[/a,/b]` expanded
    the way the table uses them."""
    table = README[README.index("## The API at a glance") :]
    table = table[: table.index("\n\n", table.index("| Route |"))]
    found: set[tuple[str, str]] = set()
    for methods, path in _ROUTE.findall(table):
        paths = [path]
        if match := re.fullmatch(r"(.*)\[(.*)\]", path):  # /files/{kind}/entries[/replace,/remove]
            paths = [match[1]] + [match[1] + alt for alt in match[2].split(",")]
        for method in methods.split("/"):
            found.update((method, "/v1" + p) for p in paths)
    return found


def test_every_route_the_readme_names_is_served() -> None:
    named = _readme_routes()
    assert len(named) >= 20, f"the README route table was not read: {sorted(named)}"
    missing = {route for route in named if not _served(route)}
    assert not missing, f"the README names routes the app does not serve: {sorted(missing)}"


def _served(route: tuple[str, str]) -> bool:
    """A README path may write a parameter its own way (`{id}` for `{memory_id}`, `{memory,user}` for
    `{kind}`): compare with every parameter as one wildcard segment. A trailing `…` names a family of routes
    (`POST /admin/migration/…`): at least one route under that prefix."""
    method, path = route
    shape = re.sub(r"\{[^}]*\}", "{}", path)
    served = [(m, re.sub(r"\{[^}]*\}", "{}", p)) for m, p in _app_routes()]
    if shape.endswith("…"):
        return any(m == method and p.startswith(shape[:-1]) and p != shape[:-1] for m, p in served)
    return (method, shape) in served


def test_the_limits_the_readme_quotes_are_the_policy_defaults() -> None:
    from agent_memory.domain.memory.policy import MemoryPolicy

    policy = MemoryPolicy()
    memory_md = re.search(r"`MEMORY\.md` \(([\d,]+) chars\)", README)
    user_md = re.search(r"`USER\.md` \(([\d,]+) chars\)", README)
    top_k = re.search(r"`k` ≤ (\d+)", README)
    batch = re.search(r"remember one / up to (\d+)", README)
    unused = re.search(r"for `archive_unused_days` \((\d+)\)", README)
    below = re.search(r"`archive_below_strength` \(([\d.]+)\)", README)
    assert memory_md and user_md and top_k and batch and unused and below, "a quoted limit moved in README.md"
    assert _number(memory_md[1]) == policy.caps.memory_md
    assert _number(user_md[1]) == policy.caps.user_md
    assert _number(top_k[1]) == policy.max_top_k
    assert _number(batch[1]) == policy.max_batch
    assert _number(unused[1]) == policy.archive_unused_days
    assert _number(below[1]) == policy.archive_below_strength


def test_the_readme_names_the_fusion_that_runs_by_default() -> None:
    from agent_memory.domain.memory.policy import MemoryPolicy

    assert MemoryPolicy().fusion == "score"
    assert "fused (RRF)" not in README, "recall fuses by weighted scores by default; RRF is an option"
    assert "RRF selectable" in README


# --------------------------------------------------------------------------- the stack


def _infra_template(profile: str = "lean") -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests" / "infra"))
    from infra_support import infra_test_context

    from tests.iam.synth import synthesize

    return synthesize(infra_test_context(profile))["template"]


def _service_functions(template: dict[str, Any]) -> dict[str, str]:
    """Logical-id prefix (e.g. ApiFunction) → handler, for the functions running our package."""
    found = {}
    for logical_id, resource in template["Resources"].items():
        handler = resource.get("Properties", {}).get("Handler", "")
        if resource["Type"] == "AWS::Lambda::Function" and handler.startswith("agent_memory.handlers."):
            name = _function_name(logical_id)
            assert name, logical_id
            found[name] = handler
    return found


@pytest.mark.slow
def test_the_lambda_functions_in_architecture_md_are_the_stacks() -> None:
    documented = dict(
        re.findall(r"^\| `(\w+Function)` \| `(agent_memory\.handlers\.[\w.]+)` \|", ARCHITECTURE, re.M)
    )
    assert documented, "the function table of docs/architecture.md was not found"
    assert _service_functions(_infra_template("lean")) == documented
    # `isolated` has no file function: every function mounts the files itself
    isolated = _service_functions(_infra_template("isolated"))
    assert isolated == {k: v for k, v in documented.items() if k != "FileFunction"}


@pytest.mark.slow
def test_the_roles_security_md_says_may_assume_the_tenant_role_are_the_stacks() -> None:
    template = _infra_template("lean")
    resources = template["Resources"]
    role_id = next(
        k for k, r in resources.items() if r["Type"] == "AWS::IAM::Role" and "TenantAccessRole" in k
    )
    trusted_roles = {
        principal["Fn::GetAtt"][0]
        for statement in resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        for principal in _as_list(statement.get("Principal", {}).get("AWS"))
        if isinstance(principal, dict) and "Fn::GetAtt" in principal
    }
    functions = {
        name: logical_id
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"].get("Handler", "").startswith("agent_memory.handlers.")
        and (name := _function_name(logical_id)) is not None
    }
    trusted = {
        name
        for name, logical_id in functions.items()
        if resources[logical_id]["Properties"]["Role"]["Fn::GetAtt"][0] in trusted_roles
    }
    claim = re.search(r"Only the (.+?) function roles are trusted", SECURITY)
    assert claim, "docs/security.md no longer lists the roles trusted by the tenant role"
    named = {_DOC_NAMES[word.strip()] for word in re.split(r",| and ", claim[1]) if word.strip()}
    assert named == trusted, f"security.md names {sorted(named)}; the stack trusts {sorted(trusted)}"


_DOC_NAMES = {
    "API": "ApiFunction",
    "job": "JobWorkerFunction",
    "chat": "ChatFunction",
    "decay-job": "DecayJobFunction",
    "dreaming": "DreamingFunction",
    "migration": "MigrationFunction",
}


def _function_name(logical_id: str) -> str | None:
    """`ApiFunctionFunction1A2B…` → ApiFunction; `DreamingWorkflowDreamingFunction…` → DreamingFunction."""
    match = re.match(r"([A-Za-z]+?Function)", re.sub(r"^[A-Za-z]*?Workflow", "", logical_id))
    return match[1] if match else None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value else []


@pytest.mark.slow
def test_the_cost_at_rest_the_readme_quotes_is_bench_cost_at_rests() -> None:
    sys.path.insert(0, str(ROOT))
    from bench import cost_at_rest
    from tests.iam.synth import synthesize

    totals = {}
    for profile in ("lean", "isolated"):
        counts = cost_at_rest.count(synthesize(cost_at_rest.shipped_context(profile))["template"])
        totals[profile] = sum(dollars for _, _, dollars in cost_at_rest.price(counts))
    total = totals["lean"]
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    table = re.search(r"\| \*\*Total\*\* \| \| \*\*([\d.]+)\*\* \| \*\*([\d.]+)\*\* \|", deploy)
    assert table, "docs/deploy.md's at-rest table lost its total row"
    assert float(table[1]) == pytest.approx(totals["lean"], abs=0.005), totals
    assert float(table[2]) == pytest.approx(totals["isolated"], abs=0.005), totals
    quoted = re.search(r"Estimated cost for a small team: about \$([\d.]+)/month\s+at rest", README)
    assert quoted, "README.md no longer quotes the cost at rest"
    assert float(quoted[1]) == pytest.approx(total, abs=0.005), (
        f"bench/cost_at_rest.py: lean ${total:.2f}/month"
    )
    assert "interface VPC endpoints" not in README[quoted.start() : quoted.end() + 200] or (
        cost_at_rest.count(synthesize(cost_at_rest.shipped_context("lean"))["template"])[
            "interface_endpoints"
        ]
        > 0
    ), "the default profile has no interface endpoint: the README must not say the cost is theirs"


def test_the_rerank_prices_the_docs_quote_are_bench_rerank_costs() -> None:
    sys.path.insert(0, str(ROOT))
    from bench import rerank_cost

    prices = rerank_cost.PRICE_PER_1000_QUERIES
    quoted = re.search(
        r"adds \$([\d.]+) per 1,000 with Amazon Rerank 1\.0 or \$([\d.]+) with\s+Cohere Rerank 3\.5", README
    )
    assert quoted, "README.md no longer quotes the reranker's price"
    assert (float(quoted[1]), float(quoted[2])) == (
        prices["amazon.rerank-v1:0"],
        prices["cohere.rerank-v3-5:0"],
    )
    recall_md = (ROOT / "docs" / "reference" / "recall.md").read_text()
    table = re.search(r"Amazon Rerank 1\.0\s+\$([\d.]+), Cohere Rerank 3\.5 \$([\d.]+)", recall_md)
    assert table, "docs/reference/recall.md no longer states the reranker's price"
    assert (float(table[1]), float(table[2])) == (
        prices["amazon.rerank-v1:0"],
        prices["cohere.rerank-v3-5:0"],
    )
    from agent_memory.domain.memory.policy import MemoryPolicy

    assert rerank_cost.queries_per_recall(MemoryPolicy().rerank_depth) == 1, "a reranked recall is one query"


def test_the_shipped_context_is_what_the_cost_bench_synthesizes() -> None:
    sys.path.insert(0, str(ROOT))
    from bench import cost_at_rest

    context = cost_at_rest.shipped_context("isolated")
    assert context["agent-memory"]["profile"] == "isolated"
    assert context["skip-layer-build"] == "true"
    assert copy.deepcopy(context) == cost_at_rest.shipped_context("isolated")
