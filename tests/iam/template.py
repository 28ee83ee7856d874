"""The synthesized template's IAM, resolved to the concrete names the test suites use.

CloudFormation intrinsics (Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split, Fn::Sub) are resolved against a
*binding*: the resource each function environment variable points to (AGENT_MEMORY_TABLE → the memory
table...) gets the physical name the tests give that variable. So `{"Fn::GetAtt": ["TablesMemory…", "Arn"]}`
becomes `arn:aws:dynamodb:us-east-1:123456789012:table/MemoryTable`, exactly the ARN of the moto table the
suites call. A resource no variable points to keeps its logical id as its name (it matches nothing the tests
touch, so a call that needs it fails loudly).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.iam.reference import ACCOUNT, PARTITION

HANDLER_FUNCTIONS = {
    "api": "agent_memory.handlers.api.handler",
    "authorizer": "agent_memory.handlers.authorizer.handler",
    "chat": "agent_memory.handlers.chat.handler",
    "jobs": "agent_memory.handlers.jobs.archive_decayed_handler",
    "dreaming": "agent_memory.handlers.dreaming.handler",
    "files": "agent_memory.handlers.files.handler",
    "console": "agent_memory.handlers.console.handler",
    "migration": "agent_memory.handlers.migration.handler",
    "job_worker": "agent_memory.handlers.job_worker.handler",
}


def _arn(service: str, region: str, resource: str, *, account: bool = True, regional: bool = True) -> str:
    return f"arn:{PARTITION}:{service}:{region if regional else ''}:{ACCOUNT if account else ''}:{resource}"


@dataclass
class ResolvedTemplate:
    template: dict[str, Any]
    region: str
    names: dict[str, str]
    """logical id → physical name (from the binding)."""

    @property
    def resources(self) -> dict[str, Any]:
        return self.template["Resources"]

    # ------------------------------------------------------------------ intrinsics

    def name_of(self, logical: str) -> str:
        return self.names.get(logical, logical)

    def ref(self, logical: str) -> str:
        pseudo = {
            "AWS::Partition": PARTITION,
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "AgentMemory",
        }
        if logical in pseudo:
            return pseudo[logical]
        kind = self.resources[logical]["Type"]
        name = self.name_of(logical)
        if kind == "AWS::StepFunctions::StateMachine":
            return _arn("states", self.region, f"stateMachine:{name}")
        if kind in ("AWS::S3Vectors::VectorBucket",):
            return _arn("s3vectors", self.region, f"bucket/{name}")
        return name

    def get_att(self, logical: str, attribute: str) -> str:
        kind = self.resources[logical]["Type"]
        name = self.name_of(logical)
        arns = {
            "AWS::DynamoDB::Table": lambda: _arn("dynamodb", self.region, f"table/{name}"),
            "AWS::DynamoDB::GlobalTable": lambda: _arn("dynamodb", self.region, f"table/{name}"),
            "AWS::IAM::Role": lambda: f"arn:{PARTITION}:iam::{ACCOUNT}:role/{name}",
            "AWS::Lambda::Function": lambda: _arn("lambda", self.region, f"function:{name}"),
            "AWS::StepFunctions::StateMachine": lambda: _arn("states", self.region, f"stateMachine:{name}"),
            "AWS::SQS::Queue": lambda: _arn("sqs", self.region, name),
            "AWS::KMS::Key": lambda: _arn("kms", self.region, f"key/{name}"),
            "AWS::Logs::LogGroup": lambda: _arn("logs", self.region, f"log-group:{name}:*"),
            "AWS::S3::Bucket": lambda: f"arn:{PARTITION}:s3:::{name}",
            "AWS::S3Vectors::VectorBucket": lambda: _arn("s3vectors", self.region, f"bucket/{name}"),
            "AWS::Bedrock::Guardrail": lambda: _arn("bedrock", self.region, f"guardrail/{name}"),
        }
        if kind == "AWS::Bedrock::Guardrail" and attribute == "GuardrailId":
            return name
        if kind in arns and attribute in ("Arn", "VectorBucketArn", "GuardrailArn"):
            return arns[kind]()
        return f"unresolved:{logical}.{attribute}"

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(logical, attribute)
            if key == "Fn::Join":
                separator, parts = arg
                return separator.join(str(self.resolve(p)) for p in parts)
            if key == "Fn::Select":
                index, items = arg
                return self.resolve(items)[int(index)]
            if key == "Fn::Split":
                separator, text = arg
                return str(self.resolve(text)).split(separator)
            if key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else arg
                for name, sub in variables.items():
                    text = text.replace("${" + name + "}", str(self.resolve(sub)))
                for pseudo in ("AWS::Partition", "AWS::Region", "AWS::AccountId", "AWS::URLSuffix"):
                    text = text.replace("${" + pseudo + "}", self.ref(pseudo))
                return text
        return {k: self.resolve(v) for k, v in value.items()}

    # ------------------------------------------------------------------ roles

    def role_statements(self, role: str) -> list[dict[str, Any]]:
        statements: list[dict[str, Any]] = []
        for resource in self.resources.values():
            if resource["Type"] not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                continue
            attached = [r.get("Ref") for r in resource["Properties"].get("Roles", []) if isinstance(r, dict)]
            if role in attached:
                statements += resource["Properties"]["PolicyDocument"]["Statement"]
        for inline in self.resources[role]["Properties"].get("Policies", []):
            statements += inline["PolicyDocument"]["Statement"]
        return [self.resolve(s) for s in statements]

    def function_roles(self) -> dict[str, str]:
        """Handler key (api, chat...) → the logical id of its function's role."""
        found = {}
        for resource in self.resources.values():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            handler = resource["Properties"].get("Handler")
            for key, name in HANDLER_FUNCTIONS.items():
                if handler == name:
                    found[key] = resource["Properties"]["Role"]["Fn::GetAtt"][0]
        return found

    def functions_in_vpc(self) -> set[str]:
        """Handler keys of the functions attached to the VPC."""
        found = set()
        for resource in self.resources.values():
            if resource["Type"] == "AWS::Lambda::Function" and "VpcConfig" in resource["Properties"]:
                for key, name in HANDLER_FUNCTIONS.items():
                    if resource["Properties"].get("Handler") == name:
                        found.add(key)
        return found

    def function_subnets(self) -> dict[str, set[str]]:
        """Handler key → logical ids of the subnets its function's network interfaces are in (VPC functions)."""
        found: dict[str, set[str]] = {}
        for resource in self.resources.values():
            props = resource["Properties"] if resource["Type"] == "AWS::Lambda::Function" else {}
            for key, name in HANDLER_FUNCTIONS.items():
                if props.get("Handler") == name and "VpcConfig" in props:
                    found[key] = {s["Ref"] for s in props["VpcConfig"]["SubnetIds"]}
        return found

    def endpoint_reach(self) -> dict[str, set[str]]:
        """VPC endpoint service → logical ids of the subnets that can reach it: for a gateway endpoint, the
        subnets whose route table it is attached to; for an interface endpoint (wherever its network
        interfaces are, one AZ or all: the VPC's local route connects every subnet), the subnets of its VPC
        whose whole CIDR its security groups admit on TCP 443."""
        resources = self.resources
        route_tables = {
            r["Properties"]["SubnetId"]["Ref"]: r["Properties"]["RouteTableId"]["Ref"]
            for r in resources.values()
            if r["Type"] == "AWS::EC2::SubnetRouteTableAssociation"
        }
        subnets = {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::EC2::Subnet"}
        found: dict[str, set[str]] = {}
        for resource in resources.values():
            if resource["Type"] != "AWS::EC2::VPCEndpoint":
                continue
            props = resource["Properties"]
            service = str(self.resolve(props["ServiceName"])).rsplit(".", 1)[-1]
            if props.get("VpcEndpointType") == "Gateway":
                tables = {t["Ref"] for t in props.get("RouteTableIds", [])}
                found[service] = {s for s, table in route_tables.items() if table in tables}
                continue
            rules = [
                rule
                for group in props.get("SecurityGroupIds", [])
                for rule in resources[group["Fn::GetAtt"][0]]["Properties"].get("SecurityGroupIngress", [])
                if rule.get("IpProtocol") in ("tcp", "-1")
                and int(rule.get("FromPort", 0)) <= 443 <= int(rule.get("ToPort", 65535))
                and isinstance(rule.get("CidrIp"), str)
            ]
            found[service] = {
                logical
                for logical, subnet in subnets.items()
                if subnet["VpcId"] == props["VpcId"]
                and isinstance(subnet.get("CidrBlock"), str)
                and any(
                    ipaddress.ip_network(subnet["CidrBlock"]).subnet_of(ipaddress.ip_network(rule["CidrIp"]))
                    for rule in rules
                )
            }
        return found

    def has_nat(self) -> bool:
        return any(r["Type"] == "AWS::EC2::NatGateway" for r in self.resources.values())

    def endpoint_policies(self) -> dict[str, list[dict[str, Any]]]:
        """VPC endpoint service (the part after `com.amazonaws.<region>.`) → its policy statements; an endpoint
        without a policy document allows everything (AWS's default full-access policy)."""
        found: dict[str, list[dict[str, Any]]] = {}
        for resource in self.resources.values():
            if resource["Type"] != "AWS::EC2::VPCEndpoint":
                continue
            service = str(self.resolve(resource["Properties"]["ServiceName"])).rsplit(".", 1)[-1]
            document = resource["Properties"].get("PolicyDocument")
            statements = (
                self.resolve(document)["Statement"]
                if document
                else [{"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*"}]
            )
            found[service] = statements
        return found

    def tenant_role(self) -> str:
        for resource in self.resources.values():
            if resource["Type"] == "AWS::Lambda::Function":
                value = resource["Properties"].get("Environment", {}).get("Variables", {})
                target = value.get("AGENT_MEMORY_TENANT_ROLE_ARN")
                if isinstance(target, dict) and "Fn::GetAtt" in target:
                    return str(target["Fn::GetAtt"][0])
        raise AssertionError("no function names a tenant role (AGENT_MEMORY_TENANT_ROLE_ARN)")

    def key_schemas(self) -> dict[str, dict[str | None, str]]:
        schemas: dict[str, dict[str | None, str]] = {}
        for logical, resource in self.resources.items():
            if resource["Type"] not in ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable"):
                continue
            props = resource["Properties"]
            hash_key = next(k["AttributeName"] for k in props["KeySchema"] if k["KeyType"] == "HASH")
            schema: dict[str | None, str] = {None: hash_key}
            for index in props.get("GlobalSecondaryIndexes", []):
                schema[index["IndexName"]] = next(
                    k["AttributeName"] for k in index["KeySchema"] if k["KeyType"] == "HASH"
                )
            schemas[self.name_of(logical)] = schema
        return schemas


def _target_of(value: Any) -> str | None:
    """The logical id an environment variable's value points to (Ref, GetAtt, or nested in Select/Split)."""
    if isinstance(value, dict):
        if "Ref" in value and not str(value["Ref"]).startswith("AWS::"):
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
        for inner in value.values():
            found = _target_of(inner)
            if found:
                return found
    if isinstance(value, list):
        for inner in value:
            found = _target_of(inner)
            if found:
                return found
    return None


NAMING_ATTRIBUTES = ("Arn", "VectorBucketArn", "GuardrailId", "GuardrailArn")
"""The attributes whose value names a resource (a `Ref` does too); a variable holding another attribute (a
guardrail's `Version`) points to no resource of its own."""


def _names_a_resource(value: Any) -> bool:
    """The variable's value is a reference to one resource (Ref, GetAtt of a naming attribute, or a part of
    one cut out by Select/Split), not a text built from several (Join, Sub: e.g. a JSON list of roles)."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    ((key, arg),) = value.items()
    if key == "Ref":
        return not str(arg).startswith("AWS::")
    if key == "Fn::GetAtt":
        attribute = arg[1] if isinstance(arg, list) else str(arg).split(".", 1)[1]
        return attribute in NAMING_ATTRIBUTES
    if key in ("Fn::Select", "Fn::Split"):
        return _names_a_resource(arg[1])
    return False


def bound_names(template: dict[str, Any], binding: Mapping[str, str]) -> dict[str, str]:
    """logical id → physical name: every resource a function environment variable names gets the name
    `binding[variable]` (the names the suites give their moto resources). Read from the template, so a new
    resource a construct hands its functions is bound without a list to extend; two variables that name one
    resource differently are refused."""
    names: dict[str, str] = {}
    given_by: dict[str, str] = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        variables = resource["Properties"].get("Environment", {}).get("Variables", {})
        for variable, value in sorted(variables.items()):
            target = _target_of(value) if _names_a_resource(value) else None
            if target is None:
                continue
            physical = binding[variable]
            if names.setdefault(target, physical) != physical:
                raise ValueError(
                    f"{given_by[target]} and {variable} both name {target}, as {names[target]!r} and "
                    f"{physical!r}: the suites must give one resource one name"
                )
            given_by.setdefault(target, variable)
    return names


def resolve_template(template: dict[str, Any], region: str, binding: Mapping[str, str]) -> ResolvedTemplate:
    """`binding`: function environment variable → the physical name the tests use for its resource."""
    return ResolvedTemplate(template=template, region=region, names=bound_names(template, binding))
