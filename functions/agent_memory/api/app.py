"""One resolver for both runtimes: routes, error mapping (once), authentication middleware, OpenAPI/Swagger.

`create_app` takes the resolver instance (APIGatewayRestResolver in Lambda, HttpResolverLocal locally), a
lazy provider of the services and an authenticator that turns the incoming event into a Principal. The tenant
comes only from that authenticator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from .. import __version__
from ..domain import errors
from ..domain.identity import Principal
from .context import RequestContext, Services, serving
from .models import ErrorBody
from .routes import admin, dreaming, files, memories, sessions

PREFIX = "/v1"
PUBLIC_PATHS = ("/v1/health", "/swagger")

# Most specific first: the first matching class decides the status.
STATUS_BY_ERROR: list[tuple[type[errors.DomainError], int]] = [
    (errors.Misconfigured, 500),
    (errors.UpstreamUnavailable, 503),
    (errors.UpstreamFailed, 502),
    (errors.Unauthenticated, 401),
    (errors.Forbidden, 403),
    (errors.NotFound, 404),
    (errors.TooLarge, 413),
    (errors.Conflict, 409),
    (errors.UnsafeContent, 422),
    (errors.ValidationFailed, 422),
]

Authenticator = Callable[[BaseProxyEvent], Principal]
R = TypeVar("R", bound=ApiGatewayResolver)


def status_for(error: errors.DomainError) -> int:
    for error_type, status in STATUS_BY_ERROR:
        if isinstance(error, error_type):
            return status
    return 400


def error_response(status: int, code: str, message: str, details: dict[str, Any] | None = None) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="agent-memory"'} if status == 401 else None
    return Response(
        status_code=status,
        content_type="application/json",
        body=ErrorBody(error=code, message=message, details=details or {}).model_dump_json(),
        headers=headers,
    )


def _validation_response(error: RequestValidationError) -> Response:
    """400 for a body that is not JSON at all, 422 naming each field that breaks the schema."""
    problems = []
    for item in error.errors():
        location = ".".join(str(part) for part in item.get("loc", ()) if part != "body") or "body"
        problems.append({"field": location, "problem": item.get("msg", "invalid"), "type": item.get("type")})
    if any(p["type"] == "json_invalid" for p in problems):
        return error_response(
            400, "malformed_json", "the request body is not valid JSON", {"problems": problems}
        )
    summary = "; ".join(f"{p['field']}: {p['problem']}" for p in problems[:5])
    return error_response(422, "invalid_request", f"invalid request: {summary}", {"problems": problems})


def openapi_metadata() -> dict[str, Any]:
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    return {
        "title": "Agent Memory API",
        "version": __version__,
        "description": "Remember, recall and govern what AI agents learned. Authenticate with `Bearer <api key>`.",
        "security_schemes": {"bearer": HTTPBearer(description="API key")},
        "security": [{"bearer": []}],
    }


def create_app(resolver: R, services: Callable[[], Services], authenticate: Authenticator) -> R:
    app = resolver

    @app.exception_handler(errors.DomainError)
    def _domain_error(error: errors.DomainError) -> Response:
        return error_response(status_for(error), error.code, error.message, _jsonable(error.details))

    @app.exception_handler(RequestValidationError)
    def _invalid_request(error: RequestValidationError) -> Response:
        # Powertools validates the request before any middleware runs; answer as if authentication and the
        # media type had been checked first, so an unauthenticated caller learns nothing about the request.
        event = app.current_event
        if not _is_public(event.path):
            try:
                authenticate(event)
            except errors.DomainError as refused:
                return error_response(status_for(refused), refused.code, refused.message)
        return _unsupported_media(event) or _validation_response(error)

    def authenticate_request(app: ApiGatewayResolver, next_middleware: NextMiddleware) -> Response:
        if not _is_public(app.current_event.path):
            try:
                principal = authenticate(app.current_event)
            except errors.DomainError as error:
                return error_response(status_for(error), error.code, error.message)
            context = RequestContext(
                principal=principal, services=services(), headers=app.current_event.headers
            )
            with serving(context):
                return _unsupported_media(app.current_event) or next_middleware(app)
        return _unsupported_media(app.current_event) or next_middleware(app)

    app.use(middlewares=[authenticate_request])

    @app.get(f"{PREFIX}/health", summary="Liveness (no authentication)", tags=["admin"], security=[{}])
    def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    for module in (memories, files, admin, sessions, dreaming):
        app.include_router(module.router, prefix=PREFIX)

    @app.get("/swagger", include_in_schema=False)
    def swagger() -> Response[str]:
        return _swagger(app)

    return app


def _swagger(app: ApiGatewayResolver) -> Response[str]:
    """The OpenAPI document (`?format=json`) or the Swagger UI page, both built on request.

    Written here rather than with `enable_swagger()` because that method imports Powertools' OpenAPI object
    model when the route is registered, which is 150–190 ms of every Lambda cold start on this machine
    (bench/cold_start.py), although only /swagger needs it. The page itself is Powertools' own: the same
    schema generator, HTML template and bundled Swagger UI assets, loaded only here."""
    from pathlib import Path

    from aws_lambda_powertools.event_handler.openapi import swagger_ui
    from aws_lambda_powertools.event_handler.openapi.models import Server
    from aws_lambda_powertools.event_handler.openapi.swagger_ui import generate_swagger_html

    base_path = app._get_base_path()  # the stage prefix, when the API is called without a custom domain
    spec = app.get_openapi_json_schema(servers=[Server(url=base_path or "/")], **openapi_metadata())
    # `</` inside the inlined JSON would close the page's <script> element.
    spec = spec.replace("</", "<\\/")
    if (app.current_event.query_string_parameters or {}).get("format") == "json":
        return Response(status_code=200, content_type="application/json", body=spec)
    assets = Path(swagger_ui.__file__).parent
    page = generate_swagger_html(
        spec,
        (assets / "swagger-ui-bundle.min.js").read_text(encoding="utf-8"),
        (assets / "swagger-ui.min.css").read_text(encoding="utf-8"),
        "",
        None,
    )
    return Response(status_code=200, content_type="text/html", body=page)


def _is_public(path: str) -> bool:
    return any(path == public or path.startswith(public + "/") for public in PUBLIC_PATHS)


def _unsupported_media(event: BaseProxyEvent) -> Response | None:
    content_type = (event.headers.get("content-type") or "").split(";")[0].strip().lower()
    if event.body and content_type not in ("", "application/json"):
        return error_response(
            415,
            "unsupported_media_type",
            f"request bodies must be JSON: send 'Content-Type: application/json' (got {content_type!r})",
        )
    return None


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value if isinstance(value, str | int | float | bool | list | None) else str(value)
        for key, value in details.items()
    }
