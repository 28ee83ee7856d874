"""What a deployment costs per month while nobody calls it, per profile, counted from the synthesized template.

For each profile (`lean`, `isolated`) the shipped cdk.json is synthesized offline (no layer build, no AWS
call) and every resource that bills by the hour or month is counted in the template: interface VPC endpoints
(one network interface per endpoint per subnet: billed per endpoint-AZ-hour), NAT gateways, customer-managed
KMS keys, CloudWatch dashboards and alarms. The storage of the data itself (docs/deploy.md's small-team
assumptions: 1 GB of records, 100,000 vectors, 0.1 GB of memory files) is added as a fixed line. Everything
else in the stack (Lambda, API Gateway, Scheduler, Step Functions, SQS, gateway endpoints, mount targets,
security groups) bills per use or not at all.

Prices: us-east-1 public on-demand list prices as of December 2026 (PRICE_LIST_DATE), 730 hours a month, no
free tier. docs/deploy.md "Estimated monthly cost" shows the same arithmetic.

    .venv/bin/python bench/cost_at_rest.py

Target (issue 17): `lean` (the default profile) ≤ $10.00 a month at rest. Exit status 1 when it is missed.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

PRICE_LIST_DATE = "December 2026"
HOURS = 730
ENDPOINT_AZ_HOUR = 0.01
NAT_GATEWAY_HOUR = 0.045
KMS_KEY_MONTH = 1.00
DASHBOARD_MONTH = 3.00
ALARM_MONTH = 0.10
DATA_STORAGE_MONTH = 0.54
"""DynamoDB storage + PITR 0.45, S3 Vectors 0.04, S3 Files 0.03, S3 0.02 (docs/deploy.md, at rest)."""
TARGET = {"lean": 10.00}


def shipped_context(profile: str) -> dict[str, Any]:
    """The shipped cdk.json's context with `profile`, offline (no layer build)."""
    from infra.config import CONTEXT_KEY, load_cdk_json_context

    context = copy.deepcopy(load_cdk_json_context(ROOT / "cdk.json"))
    context[CONTEXT_KEY]["profile"] = profile
    context["skip-layer-build"] = "true"
    return context


def synthesize(profile: str) -> dict[str, Any]:
    import aws_cdk as cdk

    from app import build_app
    from infra.config import CONTEXT_KEY

    context = shipped_context(profile)
    outdir = tempfile.mkdtemp(prefix=f"cost-{profile}-")
    app = cdk.App(context=context, outdir=outdir)
    build_app(app)
    app.synth()
    stack_name = context[CONTEXT_KEY]["stack_name"]
    return json.loads((Path(outdir) / f"{stack_name}.template.json").read_text())


def count(template: dict[str, Any]) -> dict[str, int]:
    resources = template["Resources"].values()

    def of(kind: str) -> list[dict[str, Any]]:
        return [r.get("Properties", {}) for r in resources if r["Type"] == kind]

    interface = [e for e in of("AWS::EC2::VPCEndpoint") if e.get("VpcEndpointType") == "Interface"]
    return {
        "interface_endpoints": len(interface),
        "endpoint_azs": sum(len(e.get("SubnetIds", [])) for e in interface),
        "nat_gateways": len(of("AWS::EC2::NatGateway")),
        "kms_keys": len(of("AWS::KMS::Key")),
        "dashboards": len(of("AWS::CloudWatch::Dashboard")),
        "alarms": len(of("AWS::CloudWatch::Alarm")),
        "functions_in_vpc": sum(1 for f in of("AWS::Lambda::Function") if "VpcConfig" in f),
    }


def price(counts: dict[str, int]) -> list[tuple[str, str, float]]:
    """(item, arithmetic, $/month) lines."""
    return [
        (
            "Interface VPC endpoints",
            f"{counts['endpoint_azs']} endpoint-AZs x {HOURS} h x ${ENDPOINT_AZ_HOUR}",
            counts["endpoint_azs"] * HOURS * ENDPOINT_AZ_HOUR,
        ),
        (
            "NAT gateways",
            f"{counts['nat_gateways']} x {HOURS} h x ${NAT_GATEWAY_HOUR}",
            counts["nat_gateways"] * HOURS * NAT_GATEWAY_HOUR,
        ),
        ("KMS keys", f"{counts['kms_keys']} x ${KMS_KEY_MONTH:.2f}", counts["kms_keys"] * KMS_KEY_MONTH),
        (
            "CloudWatch dashboards",
            f"{counts['dashboards']} x ${DASHBOARD_MONTH:.2f}",
            counts["dashboards"] * DASHBOARD_MONTH,
        ),
        ("CloudWatch alarms", f"{counts['alarms']} x ${ALARM_MONTH:.2f}", counts["alarms"] * ALARM_MONTH),
        ("Data storage", "docs/deploy.md small-team assumptions", DATA_STORAGE_MONTH),
    ]


def main() -> int:
    print(f"Cost at rest per profile (us-east-1 list prices, {PRICE_LIST_DATE}; {HOURS} h/month)")
    missed = []
    for profile in ("lean", "isolated"):
        counts = count(synthesize(profile))
        lines = price(counts)
        total = round(sum(dollars for _, _, dollars in lines), 2)
        print(
            f"\n{profile}: {counts['functions_in_vpc']} functions in the VPC, "
            f"{counts['interface_endpoints']} interface endpoints"
        )
        for item, arithmetic, dollars in lines:
            print(f"  {item:<24} {arithmetic:<42} {dollars:8.2f}")
        print(f"  {'TOTAL':<24} {'':<42} {total:8.2f} $/month")
        target = TARGET.get(profile)
        if target is not None and total > target:
            missed.append(f"MISSES: {profile} at rest ${total:.2f} > ${target:.2f}")
    for line in missed:
        print(line)
    if not missed:
        print(f"\nlean at rest is within the ${TARGET['lean']:.2f}/month target")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
