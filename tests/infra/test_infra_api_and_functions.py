"""MemoryApi, ServiceFunction, the decay-job schedule and Observability."""

from __future__ import annotations

import json
import re
from typing import Any

from infra_support import TEST_SCHEDULE, TEST_TENANTS, Deferred, Synthesized, as_list, render

from infra.config import DeploymentConfig, load_cdk_json_context

memory_api = Deferred("infra.constructs.memory_api")  # aws_cdk: the jsii kernel, only where the test runs

SERVICE_FUNCTIONS = {
    "ApiFunction": "agent_memory.handlers.api.handler",
    "AuthorizerFunction": "agent_memory.handlers.authorizer.handler",
    "DecayJobFunction": "agent_memory.handlers.jobs.archive_decayed_handler",
    "DreamingFunction": "agent_memory.handlers.dreaming.handler",
}


def _config() -> DeploymentConfig:
    from infra_support import ROOT

    return DeploymentConfig.from_context(load_cdk_json_context(ROOT / "cdk.json")["agent-memory"])


def _function(synthesized: Synthesized, name: str) -> dict[str, Any]:
    return synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", name)]["Properties"]


# ---------------------------------------------------------------- API


def test_every_api_method_is_authenticated_by_the_token_authorizer_or_iam(synthesized: Synthesized) -> None:
    # Given the REST API's methods and its one authorizer
    ((authorizer_id, authorizer),) = synthesized.of_type("AWS::ApiGateway::Authorizer").items()
    methods = synthesized.of_type("AWS::ApiGateway::Method")
    resources = {k: v["Properties"] for k, v in synthesized.of_type("AWS::ApiGateway::Resource").items()}

    def path(resource_id: str) -> str:
        props = resources[resource_id]
        parent = props["ParentId"].get("Ref")
        return (path(parent) if parent in resources else "") + "/" + props["PathPart"]

    # Then there are exactly the proxy, swagger, sessions, SigV4 and console methods, and no method (OPTIONS
    # included) is open but the console's GETs: the /iam routes require IAM, every other route the bearer-key
    # authorizer
    by_path = {
        (m["Properties"]["HttpMethod"], path(m["Properties"]["ResourceId"]["Ref"])): m
        for m in methods.values()
    }
    assert set(by_path) == {
        ("ANY", "/v1/{proxy+}"),
        ("GET", "/swagger"),
        ("ANY", "/v1/sessions"),
        ("ANY", "/v1/sessions/{proxy+}"),
        ("ANY", "/iam/v1/{proxy+}"),
        ("GET", "/console"),
        ("GET", "/console/{asset}"),
    }
    for (_, route), method in by_path.items():
        props = method["Properties"]
        if route.startswith("/console"):
            # The review console's static page: GET only, no authorizer (it holds no data; its calls carry the key)
            assert props["AuthorizationType"] == "NONE"
            assert "AuthorizerId" not in props and not props.get("ApiKeyRequired")
        elif route.startswith("/iam/"):
            assert props["AuthorizationType"] == "AWS_IAM"
        else:
            assert props["AuthorizationType"] == "CUSTOM"
            assert props["AuthorizerId"] == {"Ref": authorizer_id}
            assert props["RequestParameters"] == {"method.request.header.Authorization": True}
        assert "RequestValidatorId" in props
    # And the authorizer reads the bearer key from the Authorization header, rejecting other shapes early
    props = authorizer["Properties"]
    assert props["Type"] == "TOKEN"
    assert props["IdentitySource"] == "method.request.header.Authorization"
    pattern = memory_api.BEARER_PATTERN
    assert props["IdentityValidationExpression"] == pattern
    assert props["AuthorizerResultTtlInSeconds"] == _config().api.authorizer_cache_seconds
    assert re.match(pattern, "Bearer amk_" + "x" * 43)
    assert not re.match(pattern, "Basic dXNlcjpwYXNz")


def test_routes_are_v1_proxy_and_swagger_to_the_api_function_and_sessions_to_chat(
    synthesized: Synthesized,
) -> None:
    resources = {k: v["Properties"] for k, v in synthesized.of_type("AWS::ApiGateway::Resource").items()}
    api_function = synthesized.logical_id("AWS::Lambda::Function", "ApiFunction")
    chat_function = synthesized.logical_id("AWS::Lambda::Function", "ChatFunction")
    console_function = synthesized.logical_id("AWS::Lambda::Function", "ConsoleFunction")

    def path(resource_id: str) -> str:
        props = resources[resource_id]
        parent = props["ParentId"].get("Ref")
        return (path(parent) if parent in resources else "") + "/" + props["PathPart"]

    routes = {}
    for method in synthesized.of_type("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        assert props["Integration"]["Type"] == "AWS_PROXY"
        uri = json.dumps(props["Integration"]["Uri"])
        target = (
            "chat"
            if chat_function in uri
            else "api"
            if api_function in uri
            else "console"
            if console_function in uri
            else "other"
        )
        routes[(props["HttpMethod"], path(props["ResourceId"]["Ref"]))] = target
    assert routes == {
        ("ANY", "/v1/{proxy+}"): "api",
        ("GET", "/swagger"): "api",
        ("ANY", "/v1/sessions"): "chat",
        ("ANY", "/v1/sessions/{proxy+}"): "chat",
        ("ANY", "/iam/v1/{proxy+}"): "api",
        # the unauthenticated static page never runs the API function (issue 30, defect 6)
        ("GET", "/console"): "console",
        ("GET", "/console/{asset}"): "console",
    }


def test_stage_is_throttled_traced_and_access_logged_without_bodies(synthesized: Synthesized) -> None:
    config = _config().api
    (stage,) = synthesized.of_type("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]
    assert props["StageName"] == config.stage_name
    assert props["TracingEnabled"] is True
    (method_settings,) = [m for m in props["MethodSettings"] if m["ResourcePath"] == "/*"]
    assert method_settings["ThrottlingRateLimit"] == config.throttle_rate_per_second
    assert method_settings["ThrottlingBurstLimit"] == config.throttle_burst
    assert method_settings["DataTraceEnabled"] is False
    assert method_settings["LoggingLevel"] == "ERROR"
    access_log = json.loads(props["AccessLogSetting"]["Format"])
    assert {"requestId", "status", "tenant", "keyId", "sourceIp"} <= set(access_log)
    assert not any("body" in v.lower() or "authorization" in v.lower() for v in access_log.values())
    destination = render(props["AccessLogSetting"]["DestinationArn"])
    (log_group,) = re.findall(r":log-group:<(\w+)>$", destination)
    assert (
        synthesized.resources[log_group]["Properties"]["RetentionInDays"]
        == _config().retention.access_log_days
    )


def test_usage_plan_limits_each_tenant_and_takes_usage_keys_from_the_authorizer(
    synthesized: Synthesized,
) -> None:
    config = _config().api
    (plan,) = synthesized.of_type("AWS::ApiGateway::UsagePlan").values()
    props = plan["Properties"]
    assert props["Throttle"] == {
        "RateLimit": config.throttle_rate_per_second,
        "BurstLimit": config.throttle_burst,
    }
    assert props["Quota"] == {"Limit": config.quota_per_day, "Period": "DAY"}
    assert len(props["ApiStages"]) == 1
    (api,) = synthesized.of_type("AWS::ApiGateway::RestApi").values()
    # Callers cannot pick a usage key with an x-api-key header: only the authorizer supplies it
    assert api["Properties"]["ApiKeySourceType"] == "AUTHORIZER"
    assert api["Properties"]["EndpointConfiguration"] == {"Types": ["REGIONAL"]}


def test_request_validator_checks_parameters_and_gateway_errors_are_json(synthesized: Synthesized) -> None:
    (validator,) = synthesized.of_type("AWS::ApiGateway::RequestValidator").values()
    assert validator["Properties"]["ValidateRequestParameters"] is True
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in synthesized.of_type("AWS::ApiGateway::GatewayResponse").values()
    }
    assert set(responses) == {"DEFAULT_4XX", "DEFAULT_5XX"}
    for response in responses.values():
        # As API Gateway renders it: messageString is the message already quoted
        template = response["ResponseTemplates"]["application/json"]
        rendered = template.replace("$context.error.messageString", '"Unauthorized"').replace(
            "$context.error.responseType", "UNAUTHORIZED"
        )
        assert json.loads(rendered) == {
            "error": "UNAUTHORIZED",
            "message": "Unauthorized",
            "details": {"source": "api_gateway"},
        }


# ---------------------------------------------------------------- functions


def test_service_functions_share_runtime_architecture_tracing_logging_layer_and_vpc(
    synthesized: Synthesized,
) -> None:
    (layer_id,) = synthesized.of_type("AWS::Lambda::LayerVersion")
    subnets = sorted(synthesized.of_type("AWS::EC2::Subnet"))
    config = _config()
    for name, handler in SERVICE_FUNCTIONS.items():
        props = _function(synthesized, name)
        assert props["Handler"] == handler
        assert props["Runtime"] == "python3.14"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["Layers"] == [{"Ref": layer_id}]
        if "FileSystemConfigs" in props:  # in the VPC with every profile; the rest: quality gates' test
            assert sorted(s["Ref"] for s in props["VpcConfig"]["SubnetIds"]) == subnets
        logging_config = props["LoggingConfig"]
        assert logging_config["LogFormat"] == "JSON"
        assert logging_config["ApplicationLogLevel"] == "INFO"
        log_group = logging_config["LogGroup"]["Ref"]
        assert synthesized.resources[log_group]["Properties"]["RetentionInDays"] == config.retention.log_days


def test_functions_get_the_contract_environment(synthesized: Synthesized) -> None:
    tables = {
        "AGENT_MEMORY_TABLE": "TablesMemory",
        "AGENT_MEMORY_IDEMPOTENCY_TABLE": "TablesIdempotency",
        "AGENT_MEMORY_API_KEYS_TABLE": "TablesApiKeys",
    }
    tenant_role = synthesized.logical_id("AWS::IAM::Role", "TenantAccessRole")
    (vector_bucket,) = synthesized.of_type("AWS::S3Vectors::VectorBucket")
    for name in SERVICE_FUNCTIONS:
        env = _function(synthesized, name)["Environment"]["Variables"]
        assert env["AGENT_MEMORY_RUNTIME"] == "aws"
        for variable, table in tables.items():
            assert env[variable] == {"Ref": synthesized.logical_id("AWS::DynamoDB::Table", table)}
        assert env["AGENT_MEMORY_TENANT_ROLE_ARN"] == {"Fn::GetAtt": [tenant_role, "Arn"]}
        assert vector_bucket in json.dumps(env["AGENT_MEMORY_VECTOR_BUCKET"])
        assert env["AGENT_MEMORY_EMBEDDING_MODEL"] == "amazon.titan-embed-text-v2:0"
        assert env["AGENT_MEMORY_EMBEDDING_DIMENSIONS"] == "512"
        assert env["POWERTOOLS_SERVICE_NAME"] == "agent-memory"
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "AgentMemory"
        assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"
        assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
        assert env["AWS_STS_REGIONAL_ENDPOINTS"] == "regional"


def test_the_purging_functions_get_the_retention_windows_every_purge_lists(synthesized: Synthesized) -> None:
    from agent_memory.domain.erasure.retention import RetentionWindows, aws_retention

    retention = _config().retention
    for name in ("ApiFunction", "DreamingFunction"):
        env = _function(synthesized, name)["Environment"]["Variables"]
        windows = RetentionWindows.model_validate_json(env["AGENT_MEMORY_ERASURE_RETENTION"])
        assert windows.point_in_time_recovery_days == retention.point_in_time_recovery_days
        assert windows.noncurrent_file_version_days == retention.noncurrent_file_version_days
        assert windows.log_days == retention.log_days and windows.access_log_days == retention.access_log_days
        days = {r.store: r.days for r in aws_retention(windows)}
        assert days["dynamodb_point_in_time_recovery"] == retention.point_in_time_recovery_days


def test_vector_bucket_name_is_taken_from_the_bucket_arn(synthesized: Synthesized) -> None:
    (vector_bucket,) = synthesized.of_type("AWS::S3Vectors::VectorBucket")
    env = _function(synthesized, "ApiFunction")["Environment"]["Variables"]
    assert env["AGENT_MEMORY_VECTOR_BUCKET"] == {
        "Fn::Select": [1, {"Fn::Split": ["/", {"Fn::GetAtt": [vector_bucket, "VectorBucketArn"]}]}]
    }


def test_layer_targets_the_functions_runtime_and_architecture(synthesized: Synthesized) -> None:
    (layer,) = synthesized.of_type("AWS::Lambda::LayerVersion").values()
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.14"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]


def test_decay_job_runs_daily_from_scheduler_with_retries_and_a_dead_letter_queue(
    synthesized: Synthesized,
) -> None:
    # Given the decay job function, its DLQ and the schedule
    function_id = synthesized.logical_id("AWS::Lambda::Function", "DecayJobFunction")
    props = synthesized.resources[function_id]["Properties"]
    queue = props["DeadLetterConfig"]["TargetArn"]["Fn::GetAtt"][0]
    assert synthesized.resources[queue]["Type"] == "AWS::SQS::Queue"
    (invoke_config,) = [  # (the job function has its own: tests/infra/test_infra_jobs.py)
        c
        for c in synthesized.of_type("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    assert invoke_config["Properties"]["MaximumRetryAttempts"] == 2

    (schedule,) = [
        s
        for s in synthesized.of_type("AWS::Scheduler::Schedule").values()
        if s["Properties"]["Target"]["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    (group_id,) = synthesized.of_type("AWS::Scheduler::ScheduleGroup")
    schedule_props = schedule["Properties"]
    # Then the expression and time zone come from config, and failures land in the same DLQ
    assert schedule_props["ScheduleExpression"] == TEST_SCHEDULE["expression"]
    assert schedule_props["ScheduleExpressionTimezone"] == TEST_SCHEDULE["time_zone"]
    assert schedule_props["State"] == "ENABLED"
    assert schedule_props["GroupName"] == synthesized.resources[group_id]["Properties"]["Name"]
    assert group_id in schedule["DependsOn"]  # the name is a literal: the group must exist first
    target = schedule_props["Target"]
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [queue, "Arn"]}}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 3
    # And the job is told which tenants to work on: the configured ones
    tenant_ids = [t["id"] for t in TEST_TENANTS]
    assert json.loads(target["Input"]) == {"job": "archive_decayed", "tenants": tenant_ids}
    assert props["Environment"]["Variables"]["AGENT_MEMORY_TENANTS"] == ",".join(tenant_ids)


def test_only_asynchronous_functions_have_dead_letter_queues(synthesized: Synthesized) -> None:
    assert "DeadLetterConfig" not in _function(synthesized, "ApiFunction")
    assert "DeadLetterConfig" not in _function(synthesized, "AuthorizerFunction")
    for queue in synthesized.of_type("AWS::SQS::Queue").values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
        assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600


# ---------------------------------------------------------------- observability


def _dashboard_metrics(synthesized: Synthesized) -> dict[str, list[tuple[str, str, dict[str, str], str]]]:
    """Widget title -> its metrics as (namespace, metric name, dimensions, statistic), read from the
    dashboard body's `["Namespace", "MetricName", dim, value, ..., {options}]` arrays."""
    (dashboard,) = synthesized.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.loads(render(dashboard["Properties"]["DashboardBody"]))
    widgets: dict[str, list[tuple[str, str, dict[str, str], str]]] = {}
    for widget in body["widgets"]:
        properties = widget["properties"]
        metrics = []
        for line in properties.get("metrics", []):
            options = line[-1] if isinstance(line[-1], dict) else {}
            names = line[:-1] if options else line
            assert "..." not in names and "." not in names, f"shorthand metric lines are not read: {line}"
            namespace, metric_name, *pairs = names
            dimensions = dict(zip(pairs[::2], pairs[1::2], strict=True))
            metrics.append((namespace, metric_name, dimensions, options.get("stat", "")))
        widgets[properties.get("title", "")] = metrics
    return widgets


def test_dashboard_shows_api_recall_memory_file_usage_and_throttles(synthesized: Synthesized) -> None:
    widgets = _dashboard_metrics(synthesized)
    every_metric = [metric for metrics in widgets.values() for metric in metrics]
    (rest_api,) = synthesized.of_type("AWS::ApiGateway::RestApi").values()
    api = {"ApiName": rest_api["Properties"]["Name"]}
    environment = _function(synthesized, "ApiFunction")["Environment"]["Variables"]
    # The custom metrics are read where the API function publishes them (Powertools Metrics: its namespace
    # and `service` dimension come from the function's environment).
    namespace, service = environment["POWERTOOLS_METRICS_NAMESPACE"], environment["POWERTOOLS_SERVICE_NAME"]

    # API Gateway latency of this API (not RecallLatency, which also contains "Latency"), at p50/p90/p99
    latency = [m for m in every_metric if m[:2] == ("AWS/ApiGateway", "Latency")]
    assert {(m[2]["ApiName"], m[3]) for m in latency} == {(api["ApiName"], s) for s in ("p50", "p90", "p99")}
    assert ("AWS/ApiGateway", "5XXError", api, "Sum") in every_metric
    # Recall latency: the API function's own metric, at the p99 the alarm watches
    recall = [m for m in every_metric if m[1] == "RecallLatency"]
    assert {(m[0], tuple(m[2].items()), m[3]) for m in recall} >= {
        (namespace, (("service", service),), "p99")
    }
    # Memory-file usage, one line per capped file, against the cap
    usage = [m for m in every_metric if m[1] == "MemoryFileUsagePercent"]
    assert sorted((m[0], m[2]["file"], m[2]["service"]) for m in usage) == [
        (namespace, "MEMORY.md", service),
        (namespace, "USER.md", service),
    ]
    # Throttles of the API function itself
    api_function = synthesized.logical_id("AWS::Lambda::Function", "ApiFunction")
    assert ("AWS/Lambda", "Throttles", {"FunctionName": f"<{api_function}>"}, "Sum") in every_metric
    # Messages waiting in every dead-letter queue
    waiting = {
        m[2]["QueueName"] for m in every_metric if m[:2] == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    }
    queues = synthesized.of_type("AWS::SQS::Queue")
    assert queues and waiting == {f"<{queue}.QueueName>" for queue in queues}


def test_every_alarm_notifies_the_encrypted_topic(synthesized: Synthesized) -> None:
    ((topic_id, topic),) = synthesized.of_type("AWS::SNS::Topic").items()
    key_id = synthesized.logical_id("AWS::KMS::Key", "DataKey")
    assert render(topic["Properties"]["KmsMasterKeyId"]) == f"<{key_id}.Arn>"
    alarms = synthesized.of_type("AWS::CloudWatch::Alarm")
    names = " ".join(alarms)
    for expected in (
        "ApiServerErrors",
        "ApiLatencyP99",
        "RecallLatencyP99",
        "DeadLetters",
        "DecayJobErrors",
        "ApiThrottles",
    ):
        assert expected in names, expected
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]
    (subscription,) = synthesized.of_type("AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "oncall@example.com"
    # And CloudWatch may use the key to publish to the encrypted topic
    key_policy = [render(s) for s in synthesized.resources[key_id]["Properties"]["KeyPolicy"]["Statement"]]
    assert any(s["Principal"] == {"Service": "cloudwatch.amazonaws.com"} for s in key_policy)
    assert any(
        as_list(s["Principal"]) == [{"Service": "cloudwatch.amazonaws.com"}]
        and "kms:GenerateDataKey" in as_list(s["Action"])
        for s in key_policy
    )


def test_chat_function_serves_sessions_with_bedrock_limited_to_configured_models(
    synthesized: Synthesized,
) -> None:
    # Given the configured chat model (an inference profile) and the chat function
    config = _config()
    model_id = config.chat_model_ids[0]
    chat = _function(synthesized, "ChatFunction")
    environment = chat["Environment"]["Variables"]

    # Then it runs the chat handler on Bedrock with the first configured model and reaches the memory files
    # through the file function (the default `lean` profile: no mount, no VPC)
    assert chat["Handler"] == "agent_memory.handlers.chat.handler"
    assert environment["AGENT_MEMORY_CHAT_PROVIDER"] == "bedrock"
    assert json.loads(environment["AGENT_MEMORY_CHAT"]) == {"model_id": model_id}
    file_function = synthesized.logical_id("AWS::Lambda::Function", "FileFunction")
    assert environment["AGENT_MEMORY_FILE_FUNCTION"] == {"Ref": file_function}
    assert "FileSystemConfigs" not in chat and "VpcConfig" not in chat

    # And its Bedrock permissions name only the profile and the foundation model behind it
    statements = [
        statement
        for policy in synthesized.of_type("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Sid") in ("ChatModels", "ChatTokenCounting")
    ]
    assert {s["Sid"] for s in statements} == {"ChatModels", "ChatTokenCounting"}
    resources = json.dumps([s["Resource"] for s in statements])
    assert f"inference-profile/{model_id}" in resources
    assert "foundation-model/" + model_id.split(".", 1)[1] in resources
    assert '"*"' not in resources and "foundation-model/*" not in resources

    # And /v1/sessions routes to the chat function, not the API function
    session_resources = [
        logical_id
        for logical_id, resource in synthesized.of_type("AWS::ApiGateway::Resource").items()
        if resource["Properties"]["PathPart"] == "sessions"
    ]
    assert len(session_resources) == 1


def test_sigv4_principals_and_on_demand_dreaming_reach_the_api_function(synthesized: Synthesized) -> None:
    from infra_support import TEST_IAM_PRINCIPAL

    environment = _function(synthesized, "ApiFunction")["Environment"]["Variables"]
    principals = json.loads(environment["AGENT_MEMORY_IAM_PRINCIPALS"])
    assert principals == {
        TEST_IAM_PRINCIPAL["principal_arn"]: {
            "tenant": "acme",
            "namespaces": ["/projects/*"],
            "scopes": ["read", "write"],
        }
    }
    # on-demand dreaming: the state machine's ARN, the right to start it, and a route to Step Functions
    assert "AGENT_MEMORY_DREAMING_STATE_MACHINE_ARN" in environment
    api_role = synthesized.logical_id("AWS::IAM::Role", "ApiFunctionRole")
    statements = json.dumps(
        [
            policy["Properties"]["PolicyDocument"]
            for policy in synthesized.of_type("AWS::IAM::Policy").values()
            if {"Ref": api_role} in policy["Properties"]["Roles"]
        ]
    )
    assert "states:StartExecution" in statements
    # With `lean` the API function is outside the VPC: it reaches Step Functions over Lambda's own network,
    # so no endpoint is created for it (the isolated profile's `.states` endpoint: test_infra_cost.py)
    assert "VpcConfig" not in _function(synthesized, "ApiFunction")
    endpoints = json.dumps(list(synthesized.of_type("AWS::EC2::VPCEndpoint").values()))
    assert ".states" not in endpoints
