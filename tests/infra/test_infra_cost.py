"""docs/deploy.md's cost estimate stays honest: the interface endpoints it prices per profile are the ones the
template creates (services x AZs), and its arithmetic adds up."""

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
    for profile, (services, azs, _) in _doc_table().items():
        assert len(config.network.interface_endpoints) == services, profile
        assert (INTERFACE_ENDPOINT_AZS[profile] or config.network.max_azs) == azs, profile


def test_the_synthesized_interface_endpoints_match_the_doc(profile_synthesized: Synthesized) -> None:
    # The test deployment turns on on-demand dreaming, which adds the Step Functions endpoint (priced
    # separately in the doc); the others are the default three.
    services, azs, _ = _doc_table()[profile_synthesized.profile]
    interface = [
        e["Properties"]
        for e in profile_synthesized.of_type("AWS::EC2::VPCEndpoint").values()
        if e["Properties"]["VpcEndpointType"] == "Interface"
        and not str(render(e["Properties"]["ServiceName"])).endswith(".states")
    ]
    assert len(interface) == services
    assert {len(e["SubnetIds"]) for e in interface} == {azs}
    # endpoint-AZs are what is billed: one network interface per endpoint per subnet
    assert sum(len(e["SubnetIds"]) for e in interface) == services * azs
