"""The network: the profiles (`lean`, `isolated`), the VPC and the interface endpoints the functions call."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from .base import ConfigModel

INTERFACE_ENDPOINTS = frozenset(
    {"bedrock-runtime", "bedrock-agent-runtime", "s3vectors", "sts", "states", "lambda"}
)
"""Interface endpoints the network construct knows how to create (names as in the AWS service name): the
services the functions call. Each gets an endpoint policy allowing only those calls."""

ENDPOINTS_NOTHING_CALLS = {
    "logs": "Lambda delivers the functions' logs itself, outside the VPC",
    "xray": "Lambda's X-Ray daemon sends the traces, outside the VPC",
    "monitoring": "metrics are embedded-metric-format log lines, never PutMetricData calls",
    "kms": "the functions never call KMS themselves; DynamoDB, S3 Vectors and S3 Files use the key for them",
    "sqs": "Lambda and EventBridge Scheduler deliver to the dead-letter queues themselves",
}
"""Endpoints earlier versions accepted that no function ever calls, with the reason (for the error message)."""


PROFILES = ("lean", "isolated")
"""Deployment profiles (the `profile` key): how much of the service runs in the VPC.

- `lean` (default): only the file function (`handlers/files.py`) is in the VPC, with the S3 Files mount; it
  makes no AWS API call, so the VPC has no interface endpoint (and no gateway endpoint: nothing in it calls
  DynamoDB). Every other function (API, chat, dreaming, authorizer, decay job) runs outside the VPC on
  Lambda's own network; API, chat and dreaming reach the memory files by invoking the file function.
  `network.interface_endpoints` is not used.
- `isolated`: every function in the VPC (API, chat and dreaming mount S3 Files themselves, no file function),
  every interface endpoint of `network.interface_endpoints` (plus `states`, always added: the API function
  starts the migration backfill; and `bedrock-agent-runtime` when `rerank` is enabled: the API function's
  Rerank calls) in every AZ, DynamoDB and S3 gateway endpoints."""

INTERFACE_ENDPOINT_AZS: dict[str, int | None] = {"lean": 0, "isolated": None}
"""AZs each interface endpoint is placed in, per profile (0: no interface endpoint at all; None: every AZ of
the VPC, `network.max_azs`). docs/deploy.md prices this (tests/infra/test_infra_cost.py keeps the two in step)."""

FILE_FUNCTION_PROFILES = frozenset({"lean"})
"""Profiles whose API, chat and dreaming functions run outside the VPC and reach the memory files through the
file function (Lambda Invoke) instead of mounting S3 Files."""


class NetworkConfig(ConfigModel):
    max_azs: Annotated[int, Field(ge=1, le=3)] = 2
    nat_gateways: Annotated[int, Field(ge=0, le=3)] = 0
    """0 keeps the subnets isolated (everything AWS goes through endpoints). >0 adds public subnets + NAT."""
    interface_endpoints: tuple[str, ...] = ("bedrock-runtime", "s3vectors", "sts")
    """The `isolated` profile's interface endpoints (`lean` creates none: nothing in its VPC calls AWS)."""
    flow_logs: bool = True

    @field_validator("interface_endpoints")
    @classmethod
    def _endpoints(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        uncalled = [name for name in value if name in ENDPOINTS_NOTHING_CALLS]
        if uncalled:
            reasons = "; ".join(f"{name}: {ENDPOINTS_NOTHING_CALLS[name]}" for name in uncalled)
            raise ValueError(
                f"no function calls {uncalled} (an endpoint nobody uses only costs money): {reasons}. "
                "Remove them"
            )
        unknown = sorted(set(value) - INTERFACE_ENDPOINTS)
        if unknown:
            raise ValueError(f"unknown endpoints {unknown}; known: {sorted(INTERFACE_ENDPOINTS)}")
        if len(set(value)) != len(value):
            raise ValueError("endpoints must be unique")
        return value
