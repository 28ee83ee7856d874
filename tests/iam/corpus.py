"""The calls the service makes, one of each kind, in the recorder's format (tests/iam/recorder.py), built from
the synthesized template so they fit every profile and configuration.

The suites' recorded calls are what the contract judges after a run; this corpus is the same judgement
without running them, so the mutation suite (tests/infra/test_infra_iam_mutations.py) can judge a planted
template in a second. Each entry mirrors a call an adapter makes (named in `where`), by the role that makes
it, for tenant `acme`.
"""

from __future__ import annotations

import json
from typing import Any

from tests.iam.contract import BINDING
from tests.iam.reference import ACCOUNT
from tests.iam.template import HANDLER_FUNCTIONS, ResolvedTemplate

TENANT = "acme"
REGION = "us-east-1"
TABLE = BINDING["AGENT_MEMORY_TABLE"]
IDEMPOTENCY = BINDING["AGENT_MEMORY_IDEMPOTENCY_TABLE"]
VECTOR_BUCKET = BINDING["AGENT_MEMORY_VECTOR_BUCKET"]
ARCHIVE = BINDING["AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET"]
STAGING = BINDING["AGENT_MEMORY_JOB_STAGING_BUCKET"]
TENANT_FUNCTIONS = ("api", "job_worker", "chat", "jobs", "dreaming", "migration")
"""The functions that take tenant credentials (the tenant role's trust must name exactly these)."""
ENDPOINTS = {"bedrock": "bedrock-runtime", "s3vectors": "s3vectors", "states": "states"}


def call(
    service: str,
    operation: str,
    params: dict[str, Any],
    *,
    where: str,
    function: str,
    tenant: str | None = None,
) -> dict[str, Any]:
    principal: dict[str, Any] = {
        "kind": "tenant" if tenant else "function",
        "function": function,
        "where": where,
    }
    if tenant:
        principal["tenant"] = tenant
    return {
        "service": service,
        "operation": operation,
        "params": params,
        "region": REGION,
        "principal": principal,
        "test": "tests/iam/corpus.py",
        "endpoint": ENDPOINTS.get(service, service),
    }


def environment(resolved: ResolvedTemplate, function: str) -> dict[str, Any]:
    for resource in resolved.resources.values():
        props = resource["Properties"] if resource["Type"] == "AWS::Lambda::Function" else {}
        if props.get("Handler") == HANDLER_FUNCTIONS[function]:
            return dict(props.get("Environment", {}).get("Variables", {}))
    return {}


def tenant_calls(tenant: str = TENANT) -> list[dict[str, Any]]:
    """The tenant role's calls (records, change log, sessions; vectors; migration archive)."""
    key = {"pk": {"S": f"{tenant}#REC#r1"}, "sk": {"S": "REC"}}

    def db(operation: str, params: dict[str, Any], where: str) -> dict[str, Any]:
        return call("dynamodb", operation, params, where=where, function="api", tenant=tenant)

    def vectors(operation: str, index: str, where: str, **extra: Any) -> dict[str, Any]:
        params = {"vectorBucketName": VECTOR_BUCKET, "indexName": index, **extra}
        return call("s3vectors", operation, params, where=where, function="api", tenant=tenant)

    def query(index: str | None, attribute: str, value: str) -> dict[str, Any]:
        params = {
            "TableName": TABLE,
            "KeyConditionExpression": f"{attribute} = :k",
            "ExpressionAttributeValues": {":k": {"S": value}},
        }
        if index:
            params["IndexName"] = index
        return db("Query", params, f"dynamodb_store.Query {index or 'table'}")

    transact = {
        "TransactItems": [
            {"Put": {"TableName": TABLE, "Item": key}},
            {"ConditionCheck": {"TableName": TABLE, "Key": key}},
        ]
    }
    index = f"mem-{tenant}"
    return [
        db("GetItem", {"TableName": TABLE, "Key": key}, "dynamodb_store.get"),
        db("PutItem", {"TableName": TABLE, "Item": key}, "dynamodb_store.put"),
        db("UpdateItem", {"TableName": TABLE, "Key": key}, "dynamodb_store.touch"),
        db("DeleteItem", {"TableName": TABLE, "Key": key}, "erasure.records"),
        db("BatchGetItem", {"RequestItems": {TABLE: {"Keys": [key]}}}, "dynamodb_store.get_many"),
        db("BatchWriteItem", {"RequestItems": {TABLE: [{"PutRequest": {"Item": key}}]}}, "import_store"),
        db("TransactWriteItems", transact, "session_store.append_turn"),
        query(None, "pk", f"{tenant}#REC#r1"),
        query("gsi1", "gsi1pk", f"{tenant}#SES"),
        query("gsi2", "gsi2pk", f"{tenant}#REC"),
        query("gsi3", "gsi2pk", f"{tenant}#REC"),
        vectors("GetIndex", index, "s3vectors_index.ensure_tenant"),
        vectors("PutVectors", index, "s3vectors_index.put", vectors=[]),
        vectors("GetVectors", index, "s3vectors_index.get", keys=["k"]),
        vectors("QueryVectors", index, "s3vectors_index.query", topK=5),
        vectors("DeleteVectors", index, "s3vectors_index.delete", keys=["k"]),
        vectors("CreateIndex", f"{index}.e1", "migration.create_target"),
        vectors("DeleteIndex", index, "migration.retire_source"),
        *archive_calls(tenant),
        *staged_job_calls(tenant),
    ]


def staged_job_calls(tenant: str = TENANT) -> list[dict[str, Any]]:
    """A large job request staged by the API, read and deleted by the job function (adapters/aws/job_store.py)."""
    key = f"{tenant}/jobs/job_0123456789abcdef01234567.json"
    return [
        call("s3", operation, {"Bucket": STAGING, "Key": key}, where=where, function=function, tenant=tenant)
        for operation, where, function in (
            ("PutObject", "job_store.save", "api"),
            ("GetObject", "job_store.payload", "job_worker"),
            ("DeleteObject", "job_store.save", "job_worker"),
        )
    ]


def archive_calls(tenant: str = TENANT) -> list[dict[str, Any]]:
    """The migration's archive of old vectors (adapters/aws/migration.py) and the purge's rewrite of it."""
    key = f"{tenant}/m1/part-00000.json"

    def s3(operation: str, params: dict[str, Any], where: str) -> dict[str, Any]:
        return call(
            "s3", operation, {"Bucket": ARCHIVE, **params}, where=where, function="api", tenant=tenant
        )

    return [
        s3("PutObject", {"Key": key}, "migration.archive"),
        s3("GetObject", {"Key": key}, "erasure.archives"),
        s3("ListObjectsV2", {"Prefix": f"{tenant}/"}, "erasure.archives"),
    ]


def function_calls(resolved: ResolvedTemplate) -> list[dict[str, Any]]:
    """Each function role's own calls: tenant credentials, embeddings, models, idempotency, API keys,
    workflow starts and (lean) the file function."""
    roles = resolved.function_roles()
    tenant_role = resolved.get_att(resolved.tenant_role(), "Arn")
    calls: list[dict[str, Any]] = []
    for function in TENANT_FUNCTIONS:
        if function not in roles:
            continue
        tags = {"RoleArn": tenant_role, "RoleSessionName": "t", "Tags": [{"Key": "tenant", "Value": TENANT}]}
        calls.append(
            call("sts", "AssumeRole", tags, where="credentials.TenantCredentials", function=function)
        )
        embedding = {"modelId": "amazon.titan-embed-text-v2:0"}
        calls.append(
            call("bedrock", "InvokeModel", embedding, where="bedrock.TitanEmbedder", function=function)
        )
    calls += _model_calls(resolved)
    for function, operations in (
        ("api", ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Scan")),
        ("chat", ("GetItem", "PutItem", "UpdateItem", "DeleteItem")),
        ("dreaming", ("Scan", "DeleteItem")),
    ):
        for operation in operations if function in roles else ():
            field = {"Scan": None, "PutItem": "Item"}.get(operation, "Key")
            params: dict[str, Any] = {"TableName": IDEMPOTENCY}
            if field:
                params[field] = {"id": {"S": "x"}}
            calls.append(call("dynamodb", operation, params, where="idempotency", function=function))
    keys = {"TableName": BINDING["AGENT_MEMORY_API_KEYS_TABLE"], "Key": {"key_hash": {"S": "h"}}}
    calls.append(call("dynamodb", "GetItem", keys, where="api_keys.lookup", function="authorizer"))
    api = environment(resolved, "api")
    for variable in (
        "AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN",
        "AGENT_MEMORY_PURGE_STATE_MACHINE_ARN",
        "AGENT_MEMORY_DREAMING_STATE_MACHINE_ARN",
    ):
        if variable in api:
            machine = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{BINDING[variable]}"
            calls.append(
                call(
                    "states",
                    "StartExecution",
                    {"stateMachineArn": machine},
                    where="stepfunctions",
                    function="api",
                )
            )
    if "AGENT_MEMORY_JOB_FUNCTION" in environment(resolved, "api"):
        invoke = {"FunctionName": BINDING["AGENT_MEMORY_JOB_FUNCTION"], "InvocationType": "Event"}
        calls.append(call("lambda", "Invoke", invoke, where="job_runner", function="api"))
    for function in ("api", "job_worker", "chat", "dreaming"):
        if "AGENT_MEMORY_FILE_FUNCTION" in environment(resolved, function):
            invoke = {"FunctionName": BINDING["AGENT_MEMORY_FILE_FUNCTION"]}
            calls.append(call("lambda", "Invoke", invoke, where="remote_file_store", function=function))
    return calls


def model_ids(resolved: ResolvedTemplate) -> list[tuple[str, str]]:
    """(function, model id) of every Converse model the template configures."""
    found = []
    chat = environment(resolved, "chat").get("AGENT_MEMORY_CHAT")
    if isinstance(chat, str):
        found.append(("chat", json.loads(chat)["model_id"]))
    for function, variable in (
        ("api", "AGENT_MEMORY_WRITE_JUDGE_MODEL_ID"),
        ("job_worker", "AGENT_MEMORY_WRITE_JUDGE_MODEL_ID"),
        ("dreaming", "AGENT_MEMORY_DREAMING_MODEL_ID"),
        ("dreaming", "AGENT_MEMORY_CURATOR_MODEL_ID"),
    ):
        value = environment(resolved, function).get(variable)
        if isinstance(value, str):
            found.append((function, value))
    return found


def _model_calls(resolved: ResolvedTemplate) -> list[dict[str, Any]]:
    calls = []
    for function, model in model_ids(resolved):
        calls.append(call("bedrock", "Converse", {"modelId": model}, where="bedrock_chat", function=function))
        if function == "chat":
            base = (
                model.split(".", 1)[1] if model.split(".", 1)[0] in ("us", "eu", "apac", "global") else model
            )
            calls.append(
                call(
                    "bedrock", "CountTokens", {"modelId": base}, where="BedrockTokenCounter", function="chat"
                )
            )
    return calls


def corpus(resolved: ResolvedTemplate) -> list[dict[str, Any]]:
    return [*tenant_calls(), *function_calls(resolved)]
