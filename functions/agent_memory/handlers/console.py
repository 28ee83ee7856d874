"""Lambda entry point of the review console's static page (`GET /console`, `GET /console/{asset}`).

These are the API's only methods without the authorizer: a browser loads the page before the person types a
key. So that unauthenticated requests never run (and never queue behind or bill) the 1 GB API function, they
go to this small function: it serves the fixed files of `agent_memory/console/` with their security headers
(`api/routes/console.py`'s `pages` router) and nothing else. It has no environment, reads no table, holds no
credentials beyond its log and trace permissions, and makes no AWS API call; every call the page makes goes to
the authorized `/v1` methods with the key.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import initialization, request_scoped

with initialization():  # the service's own modules: see initialization()
    from ..api.routes.console import pages
    from ..domain.errors import NotFound
    from ._runtime import powertools

logger, tracer, _ = powertools("console")

app = APIGatewayRestResolver()
app.include_router(pages)


@app.exception_handler(NotFound)
def _not_found(error: NotFound) -> Response[str]:
    body = '{"error": {"code": "not_found", "message": "no such console asset"}}'
    return Response(status_code=404, content_type="application/json", body=body)


@app.not_found
def _no_route(_: Exception) -> Response[str]:
    return _not_found(NotFound("no route"))


@request_scoped
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
