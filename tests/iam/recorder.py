"""Records every AWS API call the product code makes during the test run, at the botocore level.

`install()` wraps `botocore.client.BaseClient._make_api_call` (moto intercepts later, at send time, so every
suite's calls pass here). A call is recorded only when product code (`agent_memory/`) is on the stack; the
tests' own set-up calls (create_table...) are not the service's. Each call says which credentials made it:
- `tenant`: credentials that an sts:AssumeRole with a `tenant` session tag returned (the tenant access role);
- `function`: the function's own role, named by the handler on the stack (`agent_memory/handlers/<x>.py`),
  or, for adapters that a test drives directly, by the function that uses that adapter with its own role
  (`ADAPTER_FUNCTIONS`); tenant-data adapters driven directly with plain credentials are judged as the
  tenant role for the `tenant` they were called for, since that is how every runtime builds them;
- `operator`: onboarding code, run by a person with their own credentials (recorded, not judged).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import botocore.client

_calls: list[dict[str, Any]] = []
current_exempt: str | None = None
"""The reason of the running test's `iam_contract_exempt` marker: its calls are recorded, not judged."""
_assumed: dict[str, dict[str, str]] = {}
"""access key id → {"role_arn", "tenant"} of credentials sts:AssumeRole returned."""
_lock = threading.Lock()
_installed = False
current_test = ""

TENANT_DATA_ADAPTERS = {
    "dynamodb_store",
    "_record_queries",  # dynamodb_store's query building
    "record_tree",  # dynamodb_store's namespace-tree listings and their backfill
    "s3vectors_index",
    "session_store",
    "migration",
    "versioning_store",
    "import_store",
    "job_store",
}
ADAPTER_FUNCTIONS = {
    "api_keys": "authorizer",  # the authorizer reads keys; key creation is the operator's (onboarding)
    "idempotency": "api",
    "stepfunctions": "api",
    "bedrock": "api",  # Titan embeddings with the function's own role
    "bedrock_chat": "chat",
    "bedrock_text": "dreaming",
    "bedrock_rerank": "api",  # recall's optional reranker: only the API function serves POST /v1/recall
    "credentials": "api",
    "job_runner": "api",  # the API hands each job to the job function (Lambda Invoke, its own role)
    "remote_file_store": "api",  # the lean profile's file function, invoked with the caller's own role
}
CLASS_FUNCTIONS = {"BedrockTokenCounter": "chat"}
"""Where one adapter module serves several functions, the class decides (token counting is the chat's)."""
OPERATOR_MODULES = {"onboarding"}
OPERATOR_METHODS = {("api_keys", "create"), ("api_keys", "disable")}
"""Issuing and disabling keys is onboarding's, run with the operator's credentials (infra/onboard.py)."""


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _tenant_in(frames: list[Any]) -> str | None:
    """The tenant a tenant-data adapter was called for: a `tenant` argument, or the record it was given
    (create(session), append_turn(turn))."""
    for frame in frames:
        tenant = frame.f_locals.get("tenant")
        if isinstance(tenant, str):
            return tenant
        for value in frame.f_locals.values():
            owner = getattr(value, "tenant", None) if not isinstance(value, type) else None
            if isinstance(owner, str):
                return owner
    return None


def _attribute(access_key: str | None) -> dict[str, Any] | None:
    """Who made the call, from the stack; None for calls no product code made."""
    frame = sys._getframe(2)
    product_frames = []
    while frame is not None:
        filename = frame.f_code.co_filename.replace("\\", "/")
        if "/agent_memory/" in filename and "/tests/" not in filename:
            product_frames.append(frame)
        frame = frame.f_back
    if not product_frames:
        return None
    innermost = product_frames[0]
    where = f"{innermost.f_code.co_filename.split('/agent_memory/')[-1]}:{innermost.f_lineno}"
    if current_exempt is not None:
        return {"kind": "exempt", "reason": current_exempt, "where": where}
    modules = [f.f_code.co_filename.rsplit("/", 1)[-1].removesuffix(".py") for f in product_frames]
    if any(m in OPERATOR_MODULES for m in modules) or any(
        (m, f.f_code.co_name) in OPERATOR_METHODS for m, f in zip(modules, product_frames, strict=True)
    ):
        return {"kind": "operator", "where": where}
    handler = None
    for frame_ in reversed(product_frames):  # the outermost handler is the function being invoked
        path = frame_.f_code.co_filename.replace("\\", "/")
        if "/agent_memory/handlers/" in path:
            stem = path.rsplit("/", 1)[-1].removesuffix(".py")
            # the package's shared wrappers (`request_scoped` in __init__, `_runtime`) are no function
            if stem not in ("__init__", "_runtime"):
                handler = stem.lstrip("_")
                break
    if access_key and access_key in _assumed:
        tenant = _assumed[access_key]["tenant"]
        return {"kind": "tenant", "tenant": tenant, "function": handler, "where": where}
    module = modules[0]
    # Every runtime builds the tenant-data adapters on tenant credentials (wiring.build_aws; the behaviour
    # suite's calls prove it, they come with assumed credentials): a test that wires one on plain
    # credentials is judged as that tenant's session, not as the function's own role.
    if module in TENANT_DATA_ADAPTERS and (tenant := _tenant_in(product_frames)) is not None:
        return {"kind": "tenant", "tenant": tenant, "function": handler, "where": where}
    if handler is not None:
        return {"kind": "function", "function": handler, "where": where}
    owner = type(innermost.f_locals.get("self")).__name__
    if owner in CLASS_FUNCTIONS:
        return {"kind": "function", "function": CLASS_FUNCTIONS[owner], "where": where}
    if module in ADAPTER_FUNCTIONS:
        return {"kind": "function", "function": ADAPTER_FUNCTIONS[module], "where": where}
    return {"kind": "unattributed", "where": where}


def install() -> None:
    global _installed
    if _installed:
        return
    original = botocore.client.BaseClient._make_api_call

    def recording(self: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
        credentials = getattr(self._request_signer, "_credentials", None)
        access_key = getattr(credentials, "access_key", None) if credentials else None
        who = _attribute(access_key)
        model = self.meta.service_model
        if who is not None:  # recorded before the call: a refused or failed call needed the permission too
            with _lock:
                _calls.append(
                    {
                        "service": model.signing_name,
                        "endpoint": model.endpoint_prefix,
                        "operation": operation_name,
                        "region": self.meta.region_name,
                        "params": _json_safe(api_params),
                        "principal": who,
                        "test": current_test,
                    }
                )
        response = original(self, operation_name, api_params)
        if operation_name == "AssumeRole" and model.service_name == "sts":
            tags = {t["Key"]: t["Value"] for t in api_params.get("Tags", [])}
            if "tenant" in tags:
                with _lock:
                    _assumed[response["Credentials"]["AccessKeyId"]] = {
                        "role_arn": api_params["RoleArn"],
                        "tenant": tags["tenant"],
                    }
        return response

    botocore.client.BaseClient._make_api_call = recording  # type: ignore[method-assign]
    _installed = True


def recorded() -> list[dict[str, Any]]:
    with _lock:
        return list(_calls)


def dump(path: str) -> None:
    with open(path, "w") as out:
        for call in recorded():
            out.write(json.dumps(call) + "\n")
