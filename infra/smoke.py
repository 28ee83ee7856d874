"""After-deploy smoke test: one pass through every capability of a deployed stack, then clean up.

    .venv/bin/python -m infra.smoke                       # the stack and first tenant of cdk.json
    .venv/bin/python -m infra.smoke --stack-name AgentMemory --tenant acme --region eu-west-1

It issues a throw-away API key (scopes read, write, admin, one namespace `/smoke/<run id>`), runs remember →
recall → correct → history → files add → session start → dream dry run against the deployed API, archives
what it wrote, removes its MEMORY.md entry, ends its session, disables the key, and prints one line per step
with PASS/FAIL and its latency. Exit code 0 only if every step passed. Credentials: the default AWS chain or
--profile (the same rights as `infra.onboard`: API keys table, usage plan, stack outputs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .config import CONTEXT_KEY, ConfigError, DeploymentConfig, load_cdk_json_context

DEFAULT_CDK_JSON = Path(__file__).resolve().parent.parent / "cdk.json"
OUTPUT_API_URL = "ApiUrl"


class Response(Protocol):
    status_code: int

    def json(self) -> Any: ...


class Client(Protocol):
    """What the smoke run needs of an HTTP client: `httpx.Client` (with base_url and the bearer header) in
    real use, a client that invokes the Lambda handler in the offline test."""

    def request(self, method: str, path: str, *, json: Any = None) -> Response: ...


class StepFailed(Exception):
    pass


@dataclass
class StepResult:
    name: str
    ok: bool
    millis: float
    detail: str = ""

    def line(self) -> str:
        status = "PASS" if self.ok else "FAIL"
        return f"{status}  {self.name:<16} {self.millis:8.0f} ms  {self.detail}".rstrip()


@dataclass
class SmokeRun:
    client: Client
    namespace: str
    timer: Callable[[], float] = time.perf_counter
    results: list[StepResult] = field(default_factory=list)
    _memory_ids: list[str] = field(default_factory=list)
    _session_id: str | None = None
    _entry: str | None = None

    def _call(self, method: str, path: str, body: Any = None, expect: tuple[int, ...] = (200, 201)) -> Any:
        response = self.client.request(method, path, json=body)
        if response.status_code not in expect:
            try:
                message = response.json().get("message", "")
            except ValueError:
                message = ""
            raise StepFailed(f"{method} {path} answered {response.status_code} {message}".strip())
        return response.json()

    def _step(self, name: str, action: Callable[[], str]) -> bool:
        started = self.timer()
        try:
            detail, ok = action(), True
        except StepFailed as error:
            detail, ok = str(error), False
        except Exception as error:  # a network error is a failed step, not a crash of the smoke run
            detail, ok = f"{type(error).__name__}: {error}", False
        self.results.append(StepResult(name, ok, (self.timer() - started) * 1000, detail))
        return ok

    # ------------------------------------------------------------------ steps

    def remember(self) -> str:
        body = {
            "namespace": self.namespace,
            "content": f"Smoke test {self.namespace}: deploys use blue-green",
        }
        result = self._call("POST", "/v1/memories", body)
        if result.get("decision") != "added" or not result.get("memory"):
            raise StepFailed(f"expected decision added, got {result.get('decision')}: {result.get('reason')}")
        self._memory_ids.append(result["memory"]["id"])
        return f"added {result['memory']['id']}"

    def recall(self) -> str:
        body = {"namespaces": [self.namespace], "query": "how do deploys work", "k": 5}
        hits = self._call("POST", "/v1/recall", body)["results"]
        if not any(hit["memory"]["id"] == self._memory_ids[0] for hit in hits):
            raise StepFailed(f"the remembered memory is not among {len(hits)} results")
        return f"{len(hits)} result(s), the memory among them"

    def correct(self) -> str:
        body = {
            "content": f"Smoke test {self.namespace}: deploys use canary releases",
            "reason": "smoke test",
        }
        result = self._call("POST", f"/v1/memories/{self._memory_ids[0]}/correct", body)
        self._memory_ids.append(result["memory"]["id"])
        if result["previous"].get("status") == "active":
            raise StepFailed("the corrected memory is still active")
        return f"{result['previous']['id']} → {result['memory']['id']}"

    def history(self) -> str:
        result = self._call("GET", f"/v1/memories/{self._memory_ids[-1]}/history")
        lineage = {record["id"] for record in result["lineage"]}
        if not set(self._memory_ids) <= lineage:
            raise StepFailed(f"lineage {sorted(lineage)} lacks {self._memory_ids}")
        return f"lineage of {len(lineage)}, {len(result['changes'])} change(s)"

    def files_add(self) -> str:
        self._entry = f"Smoke test {self.namespace}"
        result = self._call(
            "POST", "/v1/files/memory/entries", {"namespace": self.namespace, "content": self._entry}
        )
        return f"MEMORY.md {result.get('used', '?')}/{result.get('limit', '?')} chars"

    def session_start(self) -> str:
        result = self._call("POST", "/v1/sessions", {"namespace": self.namespace})
        self._session_id = result["session"]["id"]
        snapshot = json.dumps(result["system"])
        if self._entry and self._entry not in snapshot:
            raise StepFailed("the session snapshot does not hold the MEMORY.md entry written before it")
        return f"session {self._session_id}, snapshot {result['snapshot_sha256'][:12]}"

    def dream_dry_run(self) -> str:
        result = self._call("POST", "/v1/admin/dream", {"namespace": self.namespace, "dry_run": True})
        runs = result["runs"]
        if not runs or not all(run["dry_run"] for run in runs):
            raise StepFailed("the dry run did not come back as a dry run")
        return f"{sum(len(run['candidates']) for run in runs)} candidate(s) explained"

    def cleanup(self) -> str:
        problems = []
        for memory_id in self._memory_ids:
            try:
                self._call(
                    "POST", f"/v1/memories/{memory_id}/archive", {"reason": "smoke test"}, expect=(200, 409)
                )
            except StepFailed as error:
                problems.append(str(error))
        if self._entry:
            try:
                body = {"namespace": self.namespace, "match": self._entry}
                self._call("POST", "/v1/files/memory/entries/remove", body)
            except StepFailed as error:
                problems.append(str(error))
        if self._session_id:
            try:
                self._call("POST", f"/v1/sessions/{self._session_id}/end", {})
            except StepFailed as error:
                problems.append(str(error))
        if problems:
            raise StepFailed("; ".join(problems))
        return f"archived {len(self._memory_ids)} memories, removed the entry, ended the session"

    def run(self) -> list[StepResult]:
        """Each step needs the ones before it: the first failure skips the rest, cleanup always runs."""
        steps = [
            ("remember", self.remember),
            ("recall", self.recall),
            ("correct", self.correct),
            ("history", self.history),
            ("files add", self.files_add),
            ("session start", self.session_start),
            ("dream dry run", self.dream_dry_run),
        ]
        for name, action in steps:
            if not self._step(name, action):
                break
        self._step("cleanup", self.cleanup)
        return self.results


# --------------------------------------------------------------------------- command line


@dataclass(frozen=True)
class Target:
    """A deployed stack as the smoke run sees it: where the API is, and how to get and drop a key."""

    api_url: str
    issue_key: Callable[[str, str], tuple[str, str]]
    """(tenant, namespace) → (bearer secret, key id)."""
    disable_key: Callable[[str], object]


def _aws_target(stack_name: str, region: str | None, profile: str | None) -> Target:
    import boto3

    from agent_memory.adapters.aws.onboarding import TenantOnboarding, read_stack_outputs

    onboarding = TenantOnboarding.for_stack(stack_name, region=region, profile=profile)
    outputs = read_stack_outputs(
        boto3.Session(region_name=region, profile_name=profile).client("cloudformation"), stack_name
    )
    if not outputs.get(OUTPUT_API_URL):
        raise SystemExit(f"stack {stack_name} has no {OUTPUT_API_URL} output; is it deployed?")

    def issue(tenant: str, namespace: str) -> tuple[str, str]:
        issued = onboarding.issue_api_key(tenant, [namespace], ["read", "write", "admin"])
        return issued.key, issued.key_id

    return Target(outputs[OUTPUT_API_URL], issue, onboarding.disable_api_key)


def _http_client(base_url: str, key: str) -> Client:
    import httpx

    return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m infra.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cdk-json", type=Path, default=DEFAULT_CDK_JSON, help="deployment config (cdk.json)"
    )
    parser.add_argument("--stack-name", "--stack", help="deployed stack (default: stack_name from cdk.json)")
    parser.add_argument("--tenant", help="tenant to test as (default: the first tenant in cdk.json)")
    parser.add_argument("--region", help="AWS region of the stack (default: from cdk.json or the AWS config)")
    parser.add_argument("--profile", help="named AWS profile to use")
    parser.add_argument("--url", help="API base URL (default: the stack's ApiUrl output)")
    return parser


def main(
    argv: Sequence[str] | None = None,
    target_factory: Callable[[str, str | None, str | None], Target] = _aws_target,
    client_factory: Callable[[str, str], Client] = _http_client,
) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = DeploymentConfig.from_context(load_cdk_json_context(args.cdk_json).get(CONTEXT_KEY))
    except (ConfigError, OSError, json.JSONDecodeError) as exc:
        print(f"error: cannot use the deployment config {args.cdk_json}: {exc}", file=sys.stderr)
        return 2
    tenant = args.tenant or (config.tenant_ids[0] if config.tenant_ids else None)
    if not tenant:
        print("error: no tenant given and none in cdk.json: pass --tenant", file=sys.stderr)
        return 2
    target = target_factory(args.stack_name or config.stack_name, args.region or config.region, args.profile)
    namespace = f"/smoke/{uuid.uuid4().hex[:12]}"
    key, key_id = target.issue_key(tenant, namespace)
    try:
        results = SmokeRun(client_factory(args.url or target.api_url, key), namespace).run()
    finally:
        target.disable_key(key_id)
    for result in results:
        print(result.line())
    passed = sum(r.ok for r in results)
    print(
        f"{passed} of {len(results)} steps passed (tenant {tenant}, namespace {namespace}, key {key_id} disabled)"
    )
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
