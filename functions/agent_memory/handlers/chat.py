"""Lambda entry point of the chat function: the /v1/sessions routes (start, read, end, chat turns).

Thin by design: Powertools logger, tracer and metrics decorators, then the shared resolver. Services are built
on the first request (never at import, so no boto3 client exists before then) by `wiring.aws.build_chat`, and two
observers turn every session start and chat turn into CloudWatch metrics (EMF, namespace from
POWERTOOLS_METRICS_NAMESPACE, see settings/handlers.py):

| metric | unit | when |
|---|---|---|
| CacheHitRatio | Percent | every turn: cache-read tokens / all input tokens |
| InputTokens, CacheReadInputTokens, CacheWriteInputTokens, OutputTokens | Count | every turn |
| CostUSD | NoUnit | every turn: estimate from the configured price table |
| CacheBreak | Count | every turn: 1 when its first call read less from the cache than the previous turn left there (TTL ran out between turns, or trimming changed the prefix; alarm on a high Sum) |
| CacheReadShortfallTokens | Count | every turn: how many cached tokens that turn failed to read |
| SnapshotTokens | Count | every session start |
| SnapshotTokensAboveCeiling | Count | every session start: 1 when above the ceiling (alarm on Sum > 0) |
| PrefixBelowCacheMinimum | Count | every session start: 1 when nothing can be cached |
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization, request_scoped

with initialization():  # the service's own modules: see initialization()
    from ..api.app import create_app
    from ..api.auth import IAM_PREFIX, aws_authenticator
    from ..api.context import Services
    from ..settings.service import iam_principals
    from ..wiring import process
    from ._runtime import Lazy, powertools

if TYPE_CHECKING:  # the session services load with the first request (wiring), not with the handler
    from ..domain.sessions.chat import TurnResult
    from ..domain.sessions.sessions import StartedSession

logger, tracer, metrics = powertools()


def observe(built: Services) -> Services:
    """Turn the session starts and chat turns of `built` into metrics (once, when the services are built)."""
    if built.sessions is not None:
        built.sessions.add_observer(record_session_metrics)
    if built.chat is not None:
        built.chat.add_observer(record_turn_metrics)
    return built


services = process.CHAT
"""This function's services (`wiring.aws.build_chat`), built by the first request, observed once built."""
services.then(observe)


def record_turn_metrics(result: TurnResult) -> None:
    usage = result.usage
    metrics.add_metric(
        name="CacheHitRatio", unit=MetricUnit.Percent, value=round(usage.cache_hit_ratio * 100, 2)
    )
    metrics.add_metric(name="InputTokens", unit=MetricUnit.Count, value=usage.input_tokens)
    metrics.add_metric(
        name="CacheReadInputTokens", unit=MetricUnit.Count, value=usage.cache_read_input_tokens
    )
    metrics.add_metric(
        name="CacheWriteInputTokens", unit=MetricUnit.Count, value=usage.cache_write_input_tokens
    )
    metrics.add_metric(name="OutputTokens", unit=MetricUnit.Count, value=usage.output_tokens)
    metrics.add_metric(name="CostUSD", unit=MetricUnit.NoUnit, value=round(result.cost.usd, 8))
    metrics.add_metric(name="CacheBreak", unit=MetricUnit.Count, value=int(result.cache_break))
    metrics.add_metric(
        name="CacheReadShortfallTokens", unit=MetricUnit.Count, value=result.cache_read_shortfall_tokens
    )
    if result.cache_break:
        logger.warning(
            "prompt cache broke",
            extra={
                "session_id": result.session_id,
                "turn": result.index + 1,
                "shortfall_tokens": result.cache_read_shortfall_tokens,
                "session_usage": result.session_usage.model_dump(),
            },
        )
    logger.info(
        "chat turn",
        extra={
            "session_id": result.session_id,
            "turn": result.index + 1,
            "model_id": result.model_id,
            "usage": usage.as_bedrock(),
            "cost_usd": round(result.cost.usd, 8),
            "cache_break": result.cache_break,
            "session_usage": result.session_usage.model_dump(),
            "tool_calls": [outcome.as_dict() for outcome in result.tool_calls],
        },
    )


def record_session_metrics(started: StartedSession) -> None:
    report = started.tokens
    if report is None:
        return
    metrics.add_metric(name="SnapshotTokens", unit=MetricUnit.Count, value=report.snapshot_tokens)
    metrics.add_metric(
        name="SnapshotTokensAboveCeiling", unit=MetricUnit.Count, value=int(report.above_ceiling)
    )
    metrics.add_metric(name="PrefixBelowCacheMinimum", unit=MetricUnit.Count, value=int(not report.cacheable))
    if report.warnings:
        logger.warning(
            "session token monitor",
            extra={"session_id": started.session.id, "tokens": report.as_dict()},
        )


def build_app() -> APIGatewayRestResolver:
    """The shared resolver over this module's `services`, built by the first request rather than at import."""
    return create_app(
        APIGatewayRestResolver(enable_validation=True, strip_prefixes=[IAM_PREFIX]),
        services,
        aws_authenticator(iam_principals),
    )


app = Lazy(build_app)


@request_scoped
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    current = services()
    if current.idempotency is not None:
        current.idempotency.register_lambda_context(context)
    response = app().resolve(event, context)
    if response.get("statusCode", 500) >= 500:
        metrics.add_metric(name="ServerErrors", unit=MetricUnit.Count, value=1)
    return response
