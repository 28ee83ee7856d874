"""MemoryApi: the authenticated, throttled, access-logged REST API in front of the API function."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypedDict, cast

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from ..config import ApiConfig, DeploymentConfig
from .service_function import ServiceFunction

BEARER_PATTERN = r"^Bearer [A-Za-z0-9._~+/=-]{16,512}$"
"""RFC 6750 bearer token syntax. API Gateway answers 401 for anything else without invoking the authorizer."""


class _MethodOptions(TypedDict):
    """The options every bearer-token method shares (keyword arguments to `add_method`)."""

    authorizer: apigw.IAuthorizer
    authorization_type: apigw.AuthorizationType
    request_validator: apigw.IRequestValidator
    request_parameters: Mapping[str, bool]
    api_key_required: bool


# One JSON line per request. Never the body, never the Authorization header.
_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "extendedRequestId": "$context.extendedRequestId",
    "requestTime": "$context.requestTime",
    "sourceIp": "$context.identity.sourceIp",
    "userAgent": "$context.identity.userAgent",
    "httpMethod": "$context.httpMethod",
    "resourcePath": "$context.resourcePath",
    "path": "$context.path",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integration.latency",
    "tenant": "$context.authorizer.tenant",
    "keyId": "$context.authorizer.key_id",
    "authorizerStatus": "$context.authorizer.status",
    "authorizerError": "$context.authorizer.error",
    "errorMessage": "$context.error.message",
    "wafStatus": "$context.waf.status",
}

# `$context.error.messageString` is already a quoted JSON string, so it is inserted without quotes.
_ERROR_BODY = (
    '{"error":"$context.error.responseType","message":$context.error.messageString,'
    '"details":{"source":"api_gateway"}}'
)
"""The application's ErrorBody shape; `error` is API Gateway's response type (UNAUTHORIZED, THROTTLED, …)."""


CONSOLE_METHOD_PATHS = ("/console/GET", "/console/{asset}/GET")
CONSOLE_THROTTLE_RATE, CONSOLE_THROTTLE_BURST = 5, 20
"""Requests per second (and burst) of the unauthenticated console methods, below the stage's limit: a page
load is about a dozen small files."""


class MemoryApi(Construct):
    """REST API whose every method (including `/swagger`) runs the Lambda token authorizer first, except the
    review console's static page.

    Routes: `ANY /v1/{proxy+}` and `GET /swagger`, both proxied to the API function. The only unauthenticated
    methods are `GET /console` and `GET /console/{asset}`, the review console's static page, served by its own
    small console function (never the API function) under a tighter method throttle (same origin as the
    API, so no CORS preflight is served; OPTIONS has no method at all). Limits: stage throttling for everyone, plus a usage plan
    with per-tenant throttle and daily quota when `enforce_usage_plan` is on. Request bodies are capped
    by API Gateway at 10 MB; the precise content limits (characters per record, file caps, batch sizes)
    are enforced by the application with clear 4xx answers."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api_function: lambda_.IFunction,
        authorizer_function: lambda_.IFunction,
        console_function: lambda_.IFunction,
        chat_function: lambda_.IFunction | None = None,
        config: ApiConfig,
        access_log_retention_days: int,
        retain_logs: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.access_log_group = logs.LogGroup(
            self, "AccessLogs", removal_policy=RemovalPolicy.RETAIN if retain_logs else RemovalPolicy.DESTROY
        )
        cast(
            logs.CfnLogGroup, self.access_log_group.node.default_child
        ).retention_in_days = access_log_retention_days
        self.rest_api = self._rest_api(config)
        self.authorizer = apigw.TokenAuthorizer(
            self,
            "Authorizer",
            handler=authorizer_function,
            identity_source=apigw.IdentitySource.header("Authorization"),
            validation_regex=BEARER_PATTERN,
            results_cache_ttl=Duration.seconds(config.authorizer_cache_seconds),
        )
        # Parameters: the Authorization header must be present. Bodies are validated only where a method
        # maps a model; the proxy methods map none, the application validates bodies itself.
        self.request_validator = self.rest_api.add_request_validator(
            "RequestValidator", validate_request_parameters=True, validate_request_body=True
        )
        integration = apigw.LambdaIntegration(api_function, proxy=True, allow_test_invoke=False)
        method_options: _MethodOptions = {
            "authorizer": self.authorizer,
            "authorization_type": apigw.AuthorizationType.CUSTOM,
            "request_validator": self.request_validator,
            "request_parameters": {"method.request.header.Authorization": True},
            "api_key_required": config.enforce_usage_plan,
        }
        v1 = self.rest_api.root.add_resource("v1")
        self.proxy_method = v1.add_resource("{proxy+}").add_method("ANY", integration, **method_options)
        self.swagger_method = self.rest_api.root.add_resource("swagger").add_method(
            "GET", integration, **method_options
        )
        self.console_methods = self._console_methods(console_function)
        self.iam_method = self._iam_method(integration) if config.iam_principals else None
        self.session_methods = (
            self._session_methods(v1, chat_function, method_options) if chat_function else []
        )
        self._error_bodies_and_usage_plan(config)
        self._acknowledge(config)

    def _rest_api(self, config: ApiConfig) -> apigw.RestApi:
        return apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=f"{Stack.of(self).stack_name}-memory-api",
            description="Agent memory service API (authenticated with bearer API keys)",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            api_key_source_type=apigw.ApiKeySourceType.AUTHORIZER,
            # AWS::ApiGateway::Account is one setting per account and Region, shared by every API there:
            # only on request (api.create_cloudwatch_role), never silently over another stack's role. Access
            # and execution logs both need that role; the Region must have one either way.
            cloud_watch_role=config.create_cloudwatch_role,
            # Kept when the stack goes: other APIs in the Region log through the account setting too.
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN if config.create_cloudwatch_role else None,
            deploy_options=apigw.StageOptions(
                stage_name=config.stage_name,
                tracing_enabled=True,
                metrics_enabled=True,
                logging_level=(
                    apigw.MethodLoggingLevel.ERROR
                    if config.execution_logging
                    else apigw.MethodLoggingLevel.OFF
                ),
                data_trace_enabled=False,  # would log request and response bodies (memory content)
                throttling_rate_limit=config.throttle_rate_per_second,
                throttling_burst_limit=config.throttle_burst,
                access_log_destination=apigw.LogGroupLogDestination(self.access_log_group),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(_ACCESS_LOG_FIELDS)),
                # The unauthenticated console methods get their own, much lower limit.
                method_options={
                    path: apigw.MethodDeploymentOptions(
                        throttling_rate_limit=CONSOLE_THROTTLE_RATE,
                        throttling_burst_limit=CONSOLE_THROTTLE_BURST,
                    )
                    for path in CONSOLE_METHOD_PATHS
                },
            ),
        )

    def _console_methods(self, console_function: lambda_.IFunction) -> list[apigw.Method]:
        # The review console's page and assets (GET /console, GET /console/{asset}) are the only methods without
        # the authorizer: a browser must load them before the person types a key. They hold no data; every call
        # the page makes goes to the /v1 methods above with the key. The function serves a fixed list of files.
        # They run a function of their own (128 MB, no grant, no data), never the API function: an
        # unauthenticated flood can neither bill nor starve the 1 GB function that serves the data, and
        # method throttling (below) bounds it further.
        console = self.rest_api.root.add_resource("console")
        console_integration = apigw.LambdaIntegration(console_function, proxy=True, allow_test_invoke=False)
        methods = [
            console.add_method(
                "GET",
                console_integration,
                authorization_type=apigw.AuthorizationType.NONE,
                request_validator=self.request_validator,
            ),
            console.add_resource("{asset}").add_method(
                "GET",
                console_integration,
                authorization_type=apigw.AuthorizationType.NONE,
                request_validator=self.request_validator,
                request_parameters={"method.request.path.asset": True},
            ),
        ]
        for method in methods:
            Validations.of(method).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-APIG4",
                    reason="The review console's static page and assets must load before a key is typed; they "
                    "hold no data, and every call they make goes to the authorized /v1 methods with the key.",
                )
            )
        return methods

    def _iam_method(self, integration: apigw.LambdaIntegration) -> apigw.Method:
        # Callers inside AWS sign with SigV4; API Gateway verifies the signature and passes the caller's
        # ARN, which the API function maps to a tenant (AGENT_MEMORY_IAM_PRINCIPALS).
        return (
            self.rest_api.root.add_resource("iam")
            .add_resource("v1")
            .add_resource("{proxy+}")
            .add_method(
                "ANY",
                integration,
                authorization_type=apigw.AuthorizationType.IAM,
                request_validator=self.request_validator,
            )
        )

    def _session_methods(
        self, v1: apigw.Resource, chat_function: lambda_.IFunction, method_options: _MethodOptions
    ) -> list[apigw.Method]:
        # Sessions and chat turns go to the chat function (explicit resources win over {proxy+}).
        chat = apigw.LambdaIntegration(chat_function, proxy=True, allow_test_invoke=False)
        sessions = v1.add_resource("sessions")
        return [
            sessions.add_method("ANY", chat, **method_options),
            sessions.add_resource("{proxy+}").add_method("ANY", chat, **method_options),
        ]

    def _error_bodies_and_usage_plan(self, config: ApiConfig) -> None:
        # API Gateway's own 4xx/5xx answers (401 from the authorizer, 429 throttling, 413 too large) in the
        # application's ErrorBody shape, marked `details.source: api_gateway`.
        for response_type in (apigw.ResponseType.DEFAULT_4_XX, apigw.ResponseType.DEFAULT_5_XX):
            self.rest_api.add_gateway_response(
                f"Gateway{response_type.response_type}",
                type=response_type,
                templates={"application/json": _ERROR_BODY},
            )

        self.usage_plan = self.rest_api.add_usage_plan(
            "UsagePlan",
            name=f"{Stack.of(self).stack_name}-per-tenant",
            description="Per-tenant limits; a tenant's usage key is returned by the authorizer",
            throttle=apigw.ThrottleSettings(
                rate_limit=config.throttle_rate_per_second, burst_limit=config.throttle_burst
            ),
            quota=apigw.QuotaSettings(limit=config.quota_per_day, period=apigw.Period.DAY),
            api_stages=[apigw.UsagePlanPerApiStage(api=self.rest_api, stage=self.rest_api.deployment_stage)],
        )

    def _acknowledge(self, config: ApiConfig) -> None:
        if config.waf_web_acl_arn:
            wafv2.CfnWebACLAssociation(
                self,
                "WebAcl",
                resource_arn=self.rest_api.deployment_stage.stage_arn,
                web_acl_arn=config.waf_web_acl_arn,
            )
        else:
            Validations.of(self.rest_api).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-APIG3",
                    reason="No WAF by default (a web ACL costs more than the whole idle service); every "
                    "method is authenticated and throttled. Set api.waf_web_acl_arn to attach one.",
                )
            )
        Validations.of(self.rest_api).acknowledge(
            Acknowledgment(
                id="AwsSolutions-COG4",
                reason="Callers are agents and servers holding per-tenant API keys, checked by the Lambda "
                "token authorizer; there are no end-user sign-ins for a Cognito user pool.",
            )
        )
        if config.create_cloudwatch_role:
            Validations.of(self.rest_api).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                    "AmazonAPIGatewayPushToCloudWatchLogs]",
                    reason="The AWS-managed policy of the account-wide role API Gateway uses to write "
                    "execution logs; it grants nothing else.",
                )
            )

    @classmethod
    def for_deployment(
        cls,
        scope: Construct,
        construct_id: str,
        config: DeploymentConfig,
        *,
        api: ServiceFunction,
        authorizer: ServiceFunction,
        console: ServiceFunction,
        chat: ServiceFunction | None,
    ) -> MemoryApi:
        return cls(
            scope,
            construct_id,
            api_function=api.function,
            chat_function=chat.function if chat else None,
            console_function=console.function,
            authorizer_function=authorizer.function,
            config=config.api,
            access_log_retention_days=config.retention.access_log_days,
            retain_logs=config.retain_data,
        )

    @property
    def url(self) -> str:
        return self.rest_api.url
