"""docs/deploy.md's cost estimate stays honest: the interface endpoints it prices per profile are the ones the
template creates (services x AZs; none with `lean`), the functions it puts in the VPC are the template's, its
arithmetic adds up, and `lean` stays within the $10/month at-rest target (bench/cost_at_rest.py prices the
template the same way)."""

from __future__ import annotations

import re

from infra_support import ROOT, Synthesized, render

ENDPOINT_AZ_HOUR = 0.01
HOURS = 730
_ROW = re.compile(
    r"^\| `(?P<profile>\w+)`[^|]*\|[^|]*\| (?P<services>\d+) services x (?P<azs>\d+) AZs? \|"
    r" (?P=services) x (?P=azs) x 730 h x \$0\.01 \| (?P<dollars>[\d.]+) \|$",
    re.MULTILINE,
)


def _doc_table() -> dict[str, tuple[int, int, float]]:
    """Profile → (interface endpoint services, AZs each, $/month) from the table in docs/deploy.md."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    return {
        m["profile"]: (int(m["services"]), int(m["azs"]), float(m["dollars"])) for m in _ROW.finditer(text)
    }


def test_the_doc_prices_every_profile_and_its_arithmetic_adds_up() -> None:
    from infra.config import PROFILES

    table = _doc_table()
    assert set(table) == set(PROFILES), table
    for profile, (services, azs, dollars) in table.items():
        assert round(services * azs * HOURS * ENDPOINT_AZ_HOUR, 2) == dollars, profile


def test_the_default_deployment_has_the_endpoint_services_the_doc_prices() -> None:
    from infra.config import INTERFACE_ENDPOINT_AZS, DeploymentConfig, load_cdk_json_context

    config = DeploymentConfig.model_validate(load_cdk_json_context(ROOT / "cdk.json")["agent-memory"])
    assert config.profile == "lean"
    table = _doc_table()
    # `lean`: no interface endpoint at all, whatever network.interface_endpoints says
    assert INTERFACE_ENDPOINT_AZS["lean"] == 0
    assert table["lean"] == (0, 0, 0.0)
    services, azs, _ = table["isolated"]
    # `isolated`: the configured ones plus Step Functions (the migration backfill's start) and Lambda (the job
    # function's invoke), which it always adds
    assert len({*config.network.interface_endpoints, "states", "lambda"}) == services
    assert (INTERFACE_ENDPOINT_AZS["isolated"] or config.network.max_azs) == azs


RERANK_ENDPOINT = "bedrock-agent-runtime"
"""The one endpoint an option adds to `isolated`: recall's Bedrock reranker (`rerank`), which the test deployment
enables and docs/deploy.md prices as an addition to the default table."""


def test_the_synthesized_interface_endpoints_match_the_doc(profile_synthesized: Synthesized) -> None:
    # `isolated`: the default three, Step Functions (always added: the migration backfill's start; on-demand
    # dreaming, which the test deployment turns on, uses the same one) and Lambda (always added: the job
    # function's invoke), plus Bedrock's agent runtime for the reranker the test deployment enables. `lean`
    # has none.
    services, azs, _ = _doc_table()[profile_synthesized.profile]
    if services:
        services += 1  # RERANK_ENDPOINT
    interface = [
        e["Properties"]
        for e in profile_synthesized.of_type("AWS::EC2::VPCEndpoint").values()
        if e["Properties"]["VpcEndpointType"] == "Interface"
    ]
    assert len(interface) == services
    names = {str(render(e["ServiceName"])).rsplit(".", 1)[-1] for e in interface}
    assert (RERANK_ENDPOINT in names) == bool(services)
    assert {len(e["SubnetIds"]) for e in interface} == ({azs} if services else set())
    # endpoint-AZs are what is billed: one network interface per endpoint per subnet
    assert sum(len(e["SubnetIds"]) for e in interface) == services * azs


def test_the_functions_in_the_vpc_per_profile(profile_synthesized: Synthesized) -> None:
    # `lean`: the file function only; `isolated`: every function of the service (and no file function)
    functions = {
        logical_id: f["Properties"]
        for logical_id, f in profile_synthesized.of_type("AWS::Lambda::Function").items()
        if str(f["Properties"].get("Handler", "")).startswith("agent_memory.handlers.")
    }
    in_vpc = {logical_id for logical_id, props in functions.items() if "VpcConfig" in props}
    file_functions = {k for k, props in functions.items() if props["Handler"].endswith("files.handler")}
    if profile_synthesized.profile == "lean":
        assert len(file_functions) == 1 and in_vpc == file_functions
        assert len(functions) >= 6  # API, authorizer, decay job, chat, dreaming and more, all outside
    else:
        assert file_functions == set() and in_vpc == set(functions)


def test_lean_has_no_endpoint_at_all_and_isolated_keeps_the_free_gateways(
    profile_synthesized: Synthesized,
) -> None:
    endpoints = [e["Properties"] for e in profile_synthesized.of_type("AWS::EC2::VPCEndpoint").values()]
    gateways = [e for e in endpoints if e["VpcEndpointType"] == "Gateway"]
    if profile_synthesized.profile == "lean":
        # Nothing in the VPC calls DynamoDB (the file function calls no AWS API): no gateway endpoint either
        assert endpoints == []
    else:
        # DynamoDB for the records, S3 for the migration's archive of old vectors (both free)
        assert sorted(str(render(g["ServiceName"])).rsplit(".", 1)[-1] for g in gateways) == [
            "dynamodb",
            "s3",
        ]


def test_the_at_rest_total_of_the_template_meets_the_target(profile_synthesized: Synthesized) -> None:
    """The bench's pricing of the synthesized template (the test deployment: on-demand dreaming on, an alarm
    e-mail): `lean` within $10 a month, `isolated` paying for its endpoint-AZs."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cost_at_rest", ROOT / "bench" / "cost_at_rest.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    counts = bench.count(profile_synthesized.template)
    total = sum(dollars for _, _, dollars in bench.price(counts))
    if profile_synthesized.profile == "lean":
        assert counts["interface_endpoints"] == counts["endpoint_azs"] == counts["nat_gateways"] == 0
        assert total <= bench.TARGET["lean"], total
    else:
        # 3 default endpoints + Step Functions (on-demand dreaming) + Lambda (the job function) + Bedrock's agent
        # runtime (the reranker the test deployment enables), each in both AZs
        assert (counts["interface_endpoints"], counts["endpoint_azs"]) == (6, 12)
        assert total > bench.TARGET["lean"]
