"""Network: a VPC whose function subnets reach AWS only through VPC endpoints (no NAT by default)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import jsii
from aws_cdk import IStableListProducer, Lazy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from agent_memory.settings import resources

from ..config import FILE_FUNCTION_PROFILES, INTERFACE_ENDPOINT_AZS, DeploymentConfig, NetworkConfig
from .service_function import ServiceFunction

VPC_CIDR = "10.40.0.0/16"

_INTERFACE_SERVICES: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "bedrock-runtime": ec2.InterfaceVpcEndpointAwsService.BEDROCK_RUNTIME,
    "bedrock-agent-runtime": ec2.InterfaceVpcEndpointAwsService.BEDROCK_AGENT_RUNTIME,
    "s3vectors": ec2.InterfaceVpcEndpointAwsService.S3_VECTORS,
    "sts": ec2.InterfaceVpcEndpointAwsService.STS,
    "states": ec2.InterfaceVpcEndpointAwsService.STEP_FUNCTIONS,
    "lambda": ec2.InterfaceVpcEndpointAwsService.LAMBDA_,
    "sqs": ec2.InterfaceVpcEndpointAwsService.SQS,
}
"""One per name in config.INTERFACE_ENDPOINTS: the services the functions call; and `sqs`, added by the stack
only when a queue is declared (agent_memory.settings.resources `QUEUES`)."""


DYNAMODB = "dynamodb"
"""The gateway endpoint's name in `allow` (interface endpoints go by their config name, e.g. `sts`)."""
S3 = "s3"
"""The S3 gateway endpoint's name in `allow` (the migration's archive of old vectors writes S3 objects)."""


@jsii.implements(IStableListProducer)
class _EndpointCall:
    """One endpoint statement: its actions and resources, and the roles that make the call (the condition's
    `aws:PrincipalArn` list, produced when the template is written)."""

    def __init__(self, actions: list[str], resources: list[str]) -> None:
        self.actions, self.resources = actions, resources
        self.roles: list[iam.IRole] = []

    def produce(self) -> list[str]:
        return [role.role_arn for role in self.roles]


class Network(Construct):
    """VPC, function subnets (one per AZ), and, unless turned off (the `lean` profile, whose only VPC function
    calls no AWS API, has no endpoint at all), a gateway endpoint for DynamoDB (free) and the interface endpoints
    the functions call: Bedrock runtime (embeddings, chat), S3 Vectors and STS (tenant credentials), Step
    Functions (the API starts the migration backfill and on-demand dreaming), and when asked a gateway endpoint
    for S3 (free), used only by the migration's archive of old vectors; memory files never go through it (they
    are read and written over NFS to the S3 Files mount targets in these subnets; S3 Files syncs the bucket on
    its side).
    CloudWatch Logs and X-Ray need no endpoint either: Lambda ships both from outside the function's ENI.

    Every endpoint gets a policy that allows only the calls the stack declares with `allow` (which role, which
    actions, which resources), mirroring the roles' own IAM grants; `check_policies` fails synth for an
    endpoint nothing calls.

    `endpoint_azs`: how many AZs (the first function subnets) get each interface endpoint; None: all;
    0: no interface endpoint at all (the `lean` profile: its only VPC function calls no AWS API). One is
    enough for reachability (every subnet routes to the endpoint's ENI over the VPC's local route, and
    private DNS resolves to it), at the price of depending on that AZ. `dynamodb_endpoint`: create the
    DynamoDB gateway endpoint (free, but only worth having when something in the VPC calls DynamoDB).
    `s3_endpoint`: create the S3 gateway endpoint (free; for a function in the VPC that calls S3)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: NetworkConfig,
        flow_logs_bucket: s3.IBucket | None = None,
        endpoint_azs: int | None = None,
        dynamodb_endpoint: bool = True,
        s3_endpoint: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        isolated = config.nat_gateways == 0
        function_subnet_type = (
            ec2.SubnetType.PRIVATE_ISOLATED if isolated else ec2.SubnetType.PRIVATE_WITH_EGRESS
        )
        subnets = [ec2.SubnetConfiguration(name="functions", subnet_type=function_subnet_type, cidr_mask=22)]
        if not isolated:
            subnets.append(
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24)
            )

        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(VPC_CIDR),
            max_azs=config.max_azs,
            nat_gateways=config.nat_gateways,
            subnet_configuration=subnets,
            restrict_default_security_group=True,
        )
        self.dynamodb_endpoint: ec2.GatewayVpcEndpoint | None = (
            self.vpc.add_gateway_endpoint("DynamoDb", service=ec2.GatewayVpcEndpointAwsService.DYNAMODB)
            if dynamodb_endpoint
            else None
        )
        self.s3_endpoint: ec2.GatewayVpcEndpoint | None = (
            self.vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
            if s3_endpoint
            else None
        )
        self.function_subnets = ec2.SubnetSelection(subnet_type=function_subnet_type)

        if config.flow_logs:
            if flow_logs_bucket is None:
                raise ValueError("network.flow_logs is on but no bucket was given for the flow logs")
            self.vpc.add_flow_log(
                "FlowLogs",
                destination=ec2.FlowLogDestination.to_s3(flow_logs_bucket, "vpc-flow-logs/"),
                traffic_type=ec2.FlowLogTrafficType.ALL,
            )

        self.interface_endpoints: dict[str, ec2.InterfaceVpcEndpoint] = {}
        self._allowed: set[str] = set()
        self._declared: dict[tuple[str, str], _EndpointCall] = {}
        if endpoint_azs == 0:
            if config.interface_endpoints:
                raise ValueError("endpoint_azs=0 means no interface endpoint, but some are configured")
            return
        self._add_interface_endpoints(config.interface_endpoints, endpoint_azs)

    def _add_interface_endpoints(self, names: Sequence[str], endpoint_azs: int | None) -> None:
        """One per configured name, in the first `endpoint_azs` function subnets (None: all), behind one
        security group that admits HTTPS from the VPC only."""
        # One security group for all interface endpoints: HTTPS from inside the VPC only.
        self.endpoint_security_group = ec2.SecurityGroup(
            self,
            "EndpointSecurityGroup",
            vpc=self.vpc,
            description="Interface VPC endpoints: HTTPS from the VPC",
            allow_all_outbound=False,
        )
        self.endpoint_security_group.add_ingress_rule(
            ec2.Peer.ipv4(VPC_CIDR), ec2.Port.tcp(443), "HTTPS from the functions in this VPC"
        )
        endpoint_subnets = (
            self.function_subnets
            if endpoint_azs is None
            else ec2.SubnetSelection(subnets=self.subnets[:endpoint_azs])
        )
        for name in names:
            self.interface_endpoints[name] = self.vpc.add_interface_endpoint(
                f"Endpoint-{name}",
                service=_INTERFACE_SERVICES[name],
                private_dns_enabled=True,
                subnets=endpoint_subnets,
                security_groups=[self.endpoint_security_group],
                open=False,
            )

    @classmethod
    def for_deployment(
        cls, scope: Construct, construct_id: str, config: DeploymentConfig, *, flow_logs_bucket: s3.IBucket
    ) -> Network:
        """The network of a deployment's profile. `lean`: the file function is the only function in the VPC
        and calls no AWS API, so the VPC gets no endpoint at all (interface endpoints are what a deployment at
        rest pays for). `isolated`: every function is in the VPC; the API function starts the migration
        backfill (and on-demand dreaming), so Step Functions gets an endpoint, and it invokes the job function
        (imports, large batches), so Lambda gets one (and, with `rerank`, Bedrock's agent runtime: the API
        function's Rerank calls), and the migration function
        archives old vectors to S3 objects, so S3 gets its (free) gateway endpoint."""
        network_config = config.network
        lean = config.profile in FILE_FUNCTION_PROFILES
        if lean:
            network_config = network_config.model_copy(update={"interface_endpoints": ()})
        else:
            # Always: Step Functions (the API starts the migration backfill) and Lambda (the API hands each
            # job, an import or a large batch, to the job function: infra/constructs/job_worker.py); Bedrock's
            # agent runtime when recall may rerank (the API function's calls).
            needed = ("states", "lambda", *(("bedrock-agent-runtime",) if config.rerank.model_id else ()))
            needed += ("sqs",) if resources.QUEUES else ()  # the declared queues' calls
            missing = tuple(name for name in needed if name not in network_config.interface_endpoints)
            network_config = network_config.model_copy(
                update={"interface_endpoints": (*network_config.interface_endpoints, *missing)}
            )
        return cls(
            scope,
            construct_id,
            config=network_config,
            flow_logs_bucket=flow_logs_bucket,
            endpoint_azs=INTERFACE_ENDPOINT_AZS[config.profile],
            dynamodb_endpoint=not lean,
            s3_endpoint=not lean,
        )

    def endpoint(self, name: str) -> ec2.GatewayVpcEndpoint | ec2.InterfaceVpcEndpoint | None:
        """The endpoint for `dynamodb` or an interface endpoint's config name; None when not created."""
        if name == DYNAMODB:
            return self.dynamodb_endpoint
        if name == S3:
            return self.s3_endpoint
        return self.interface_endpoints.get(name)

    def allow(
        self,
        name: str,
        *,
        roles: Sequence[iam.IRole],
        actions: Sequence[str],
        resources: Sequence[str],
        sid: str,
    ) -> None:
        """Let `roles` (and their sessions) make `actions` on `resources` through endpoint `name`; a no-op when
        the deployment has no such endpoint (the calls then take another route, e.g. a NAT gateway). Calls
        declared under one `sid` share one statement: each caller adds its role to it, so a grant can be made
        one function at a time.

        The principal is `*` narrowed by `aws:PrincipalArn`: AWS documents that form for gateway endpoints
        (a role ARN as Principal would mean something else there) and it means the same for interface ones."""
        endpoint = self.endpoint(name)
        if endpoint is None or not roles:  # no endpoint, or no caller in the VPC (e.g. the lean profile)
            return
        declared = self._declared.get((name, sid))
        if declared is None:
            declared = _EndpointCall(list(actions), list(resources))
            self._declared[(name, sid)] = declared
            endpoint.add_to_policy(
                iam.PolicyStatement(
                    sid=sid,
                    principals=[iam.StarPrincipal()],
                    actions=declared.actions,
                    resources=declared.resources,
                    conditions={
                        "ArnEquals": {"aws:PrincipalArn": Lazy.list(cast(IStableListProducer, declared))}
                    },
                )
            )
        elif (declared.actions, declared.resources) != (list(actions), list(resources)):
            raise ValueError(f"endpoint {name}: statement {sid} was declared with other actions or resources")
        declared.roles.extend(role for role in roles if role not in declared.roles)
        self._allowed.add(name)

    def allow_functions(
        self,
        name: str,
        functions: Iterable[ServiceFunction | None],
        *,
        actions: Sequence[str],
        resources: Sequence[str],
        sid: str,
    ) -> None:
        """`allow` for those of `functions` that run in the VPC: only their calls go through its endpoints (the
        others reach AWS over Lambda's own network, where no endpoint policy applies)."""
        roles = [f.role for f in functions if f is not None and f.function.is_bound_to_vpc]
        self.allow(name, roles=roles, actions=actions, resources=resources, sid=sid)

    def grant(
        self,
        name: str,
        function: ServiceFunction,
        *,
        actions: Sequence[str],
        resources: Sequence[str],
        sid: str,
        conditions: Mapping[str, Any] | None = None,
    ) -> None:
        """One call a function makes: the statement `sid` in its role's policy (with `conditions`, e.g. the
        `s3:prefix` a listing is confined to) and, when it runs in the VPC, in the policy of the endpoint
        `name` it goes through."""
        function.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid=sid,
                actions=list(actions),
                resources=list(resources),
                conditions=dict(conditions) if conditions else None,
            )
        )
        self.allow_functions(name, [function], actions=actions, resources=resources, sid=sid)

    def check_policies(self) -> None:
        """Fail synth for an endpoint without a policy: nothing calls it (and without a policy it would allow
        every call, AWS's default)."""
        names = [
            *([DYNAMODB] if self.dynamodb_endpoint else []),
            *([S3] if self.s3_endpoint else []),
            *self.interface_endpoints,
        ]
        unused = [name for name in names if name not in self._allowed]
        if unused:
            raise ValueError(
                f"VPC endpoints {unused} have no endpoint policy: no function calls them; remove them from "
                "network.interface_endpoints, or declare the calls with Network.allow"
            )

    @property
    def subnets(self) -> list[ec2.ISubnet]:
        return list(self.vpc.select_subnets(subnet_type=self.function_subnets.subnet_type).subnets)
