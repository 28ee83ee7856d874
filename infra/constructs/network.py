"""Network: a VPC whose function subnets reach AWS only through VPC endpoints (no NAT by default)."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..config import NetworkConfig

VPC_CIDR = "10.40.0.0/16"

_INTERFACE_SERVICES: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "bedrock-runtime": ec2.InterfaceVpcEndpointAwsService.BEDROCK_RUNTIME,
    "s3vectors": ec2.InterfaceVpcEndpointAwsService.S3_VECTORS,
    "sts": ec2.InterfaceVpcEndpointAwsService.STS,
    "logs": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
    "xray": ec2.InterfaceVpcEndpointAwsService.XRAY,
    "states": ec2.InterfaceVpcEndpointAwsService.STEP_FUNCTIONS,
    "kms": ec2.InterfaceVpcEndpointAwsService.KMS,
    "sqs": ec2.InterfaceVpcEndpointAwsService.SQS,
    "monitoring": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING,
}


class Network(Construct):
    """VPC, function subnets (one per AZ), gateway endpoints for S3 and DynamoDB (free) and the interface
    endpoints the functions call: Bedrock runtime (embeddings), S3 Vectors and STS (tenant credentials).
    CloudWatch Logs and X-Ray need no endpoint: Lambda ships both from outside the function's ENI."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: NetworkConfig,
        flow_logs_bucket: s3.IBucket | None = None,
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
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
                "DynamoDb": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.DYNAMODB),
            },
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
        self.interface_endpoints: dict[str, ec2.InterfaceVpcEndpoint] = {}
        for name in config.interface_endpoints:
            self.interface_endpoints[name] = self.vpc.add_interface_endpoint(
                f"Endpoint-{name}",
                service=_INTERFACE_SERVICES[name],
                private_dns_enabled=True,
                subnets=self.function_subnets,
                security_groups=[self.endpoint_security_group],
                open=False,
            )

    @property
    def subnets(self) -> list[ec2.ISubnet]:
        return list(self.vpc.select_subnets(subnet_type=self.function_subnets.subnet_type).subnets)
