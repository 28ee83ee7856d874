"""The API Lambda: API Gateway (REST) → the same /v1 routes as the local server.

The tenant reaches this function only through the authorizer's context (api.auth). Services are built on the
first request, not at import, so a cold start pays only for imports."""

from __future__ import annotations

import json
import time
from typing import Any

from aws_lambda_powertools import single_metric
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization, request_scoped

with initialization():  # the service's own modules: see initialization()
    from ..api.app import create_app
    from ..api.auth import IAM_PREFIX, aws_authenticator
    from ..settings.service import iam_principals
    from ..wiring import process
    from ._runtime import powertools

logger, tracer, metrics = powertools()

services = process.API
"""This function's services (`wiring.aws.build_api`), built by the first request."""
set_services = services.set  # for tests: run the handler on services built with moto/Stubber clients


app = create_app(
    APIGatewayRestResolver(enable_validation=True, strip_prefixes=[IAM_PREFIX]),
    services=services,
    authenticate=aws_authenticator(iam_principals),
)


@request_scoped
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    current = services()
    if current.idempotency is not None:
        current.idempotency.register_lambda_context(context)
    started = time.perf_counter()
    response = app.resolve(event, context)
    elapsed_ms = (time.perf_counter() - started) * 1000
    # One latency metric per operation family, for the dashboard (API Gateway's own metrics cover the rest).
    path, method = event.get("path", ""), event.get("httpMethod", "")
    operation = (
        "Recall"
        if path == "/v1/recall"
        else "Remember"
        if path.startswith("/v1/memories") and method == "POST"
        else "Other"
    )
    metrics.add_metric(name=f"{operation}Latency", unit=MetricUnit.Milliseconds, value=elapsed_ms)
    if response.get("statusCode", 500) >= 500:
        metrics.add_metric(name="ServerErrors", unit=MetricUnit.Count, value=1)
    if path.startswith("/v1/files/") and method == "POST" and response.get("statusCode") == 200:
        _file_usage_metric(response.get("body") or "")
    return response


def _file_usage_metric(body: str) -> None:
    """Usage of a capped memory file after a write, against its cap (dashboard: usage vs cap)."""
    try:
        view = json.loads(body)
        percent = 100.0 * view["used"] / view["limit"]
    except (ValueError, KeyError, TypeError, ZeroDivisionError):
        return
    with single_metric(
        name="MemoryFileUsagePercent", unit=MetricUnit.Percent, value=percent, namespace=metrics.namespace
    ) as metric:
        metric.add_dimension(name="file", value=str(view.get("path", "unknown")))
