"""One resolver for both runtimes: routes, error mapping (once), the request gate, OpenAPI/Swagger.

`create_app` takes the resolver instance (APIGatewayRestResolver in Lambda, HttpResolverLocal locally), a
lazy provider of the services and an authenticator that turns the incoming event into a Principal. The tenant
comes only from that authenticator.

Every answer that is not a success is the JSON `ErrorBody` `{error, message, details}`: domain errors, request
validation, unknown paths (404), known paths with another method (405, with `Allow`), bodies that are not
UTF-8 JSON (400), other media types (415), Powertools' own service errors and anything unexpected (500)."""

from __future__ import annotations

import binascii
import importlib
import json
import logging
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError, ServiceError
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from .. import __version__
from ..domain import errors
from ..domain.identity import Principal
from . import powertools_compat
from .context import RequestContext, Services, serving
from .models import ErrorBody
from .purge_fence import fence_write
from .routes import console

PREFIX = "/v1"
PUBLIC_PATHS = ("/v1/health", "/swagger", console.CONSOLE_PATH)
"""The review console's page and assets hold no data: its API calls carry the key (routes/console.py)."""
ROOT = "/"
"""Public too: a JSON answer pointing to the documentation and the health check."""

JSON_MEDIA_TYPE = "application/json"
UTF8_CHARSETS = frozenset({"utf-8", "utf8"})
SEND_JSON = "send JSON encoded as UTF-8 with 'Content-Type: application/json'"
NOT_UTF8_MESSAGE = f"the request body is not UTF-8 text: {SEND_JSON}"
"""Also the local server's answer (local_server.ServerGuard), which sees the raw bytes first."""

logger = logging.getLogger(__name__)

# Most specific first: the first matching class decides the status.
STATUS_BY_ERROR: list[tuple[type[errors.DomainError], int]] = [
    (errors.Misconfigured, 500),
    (errors.NotConfigured, 501),
    (errors.UpstreamUnavailable, 503),
    (errors.UpstreamFailed, 502),
    (errors.Unauthenticated, 401),
    (errors.RateLimited, 429),
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


def error_response(
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    all_headers = dict(headers or {})
    if status == 401:
        all_headers["WWW-Authenticate"] = 'Bearer realm="agent-memory"'
    return Response(
        status_code=status,
        content_type=JSON_MEDIA_TYPE,
        body=ErrorBody(error=code, message=message, details=details or {}).model_dump_json(),
        headers=all_headers or None,
    )


def _validation_response(error: RequestValidationError) -> Response:
    """400 for a body that is not JSON at all, 422 naming each field that breaks the schema."""
    problems = []
    for item in error.errors():
        location = ".".join(str(part) for part in item.get("loc", ()) if part != "body") or "body"
        problems.append({"field": location, "problem": item.get("msg", "invalid"), "type": item.get("type")})
    if any(p["type"] == "json_invalid" for p in problems):
        return error_response(
            400, "malformed_json", f"the request body is not valid JSON: {SEND_JSON}", {"problems": problems}
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
    validation = powertools_compat.validation_middleware(app)
    if validation is None:
        raise ValueError("create_app needs a resolver built with enable_validation=True")
    _add_error_handlers(app)
    _add_gate(app, validation, services, authenticate)
    _add_routes(app)
    return app


def _add_error_handlers(app: ApiGatewayResolver) -> None:
    """Every refusal as the ErrorBody: domain errors by their status, request validation, an unsupported media
    type, an unknown path or method, Powertools' own errors, and anything unexpected (500, logged)."""

    @app.exception_handler(errors.DomainError)
    def _domain_error(error: errors.DomainError) -> Response:
        status = status_for(error)
        # 503 after bounded retries (domain/retry.py) and 429 from a rate limit: tell the client when to retry.
        retry_after = error.details.get("retry_after_seconds")
        if retry_after is None and status == 503:
            retry_after = 5
        wait = {"Retry-After": str(retry_after)} if retry_after is not None and status in (429, 503) else None
        return error_response(status, error.code, error.message, _jsonable(error.details), wait)

    @app.exception_handler(RequestValidationError)
    def _invalid_request(error: RequestValidationError) -> Response:
        return _validation_response(error)

    @app.exception_handler(RequestUnsupportedContentType)
    def _unsupported_content_type(_: RequestUnsupportedContentType) -> Response:
        # A body route called without a body but with another media type (with a body, the gate refuses first).
        return _media_type_refusal(_content_type(app.current_event)[0])

    @app.not_found
    def _no_route(_: NotFoundError) -> Response:
        return _not_found_or_not_allowed(app)

    @app.exception_handler(ServiceError)
    def _service_error(error: ServiceError) -> Response:
        return error_response(error.status_code, "http_error", str(error.msg))

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response:
        logger.exception("unhandled error", exc_info=error)
        return error_response(500, "internal_error", "the service failed on this request; retry later")


def _add_gate(
    app: ApiGatewayResolver,
    validation: powertools_compat.Middleware,
    services: Callable[[], Services],
    authenticate: Authenticator,
) -> None:
    def gate(app: ApiGatewayResolver, next_middleware: NextMiddleware) -> Response:
        """The first step of every request, matched or not: authentication (public paths excepted) and the
        request context, then the body's media type, charset and encoding, then Powertools' request
        validation and the route. Installed in place of the validation middleware because Powertools runs
        that before any other middleware: an unauthenticated caller would otherwise learn about the request's
        shape, and a body would be parsed before its media type is checked."""
        event = app.current_event
        if _is_public(event.path):
            return _body_refusal(event) or validation(app, next_middleware)
        try:
            principal = authenticate(event)
        except errors.DomainError as error:
            return error_response(status_for(error), error.code, error.message)
        context = RequestContext(principal=principal, services=services(), headers=event.headers)
        with serving(context):
            refused = _body_refusal(event)
            if refused is not None:
                return refused
            try:
                fence_write(event, context)  # 409 purge_in_progress: a running purge's scope
            except errors.DomainError as error:
                return error_response(status_for(error), error.code, error.message, _jsonable(error.details))
            return validation(app, next_middleware)

    powertools_compat.replace_validation_middleware(app, gate)


def _add_routes(app: ApiGatewayResolver) -> None:
    """The service's index and health, every router under /v1, the console's pages and /swagger."""

    @app.get(ROOT, include_in_schema=False)
    def root() -> dict[str, Any]:
        base = powertools_compat.base_path(app).rstrip("/")
        return {
            "name": "Agent Memory API",
            "version": __version__,
            "authentication": "Authorization: Bearer <api key> on every /v1 route except /v1/health",
            "links": {
                "documentation": f"{base}/swagger",
                "openapi": f"{base}/swagger?format=json",
                "health": f"{base}{PREFIX}/health",
                "console": f"{base}{console.CONSOLE_PATH}",
            },
        }

    @app.get(f"{PREFIX}/health", summary="Liveness (no authentication)", tags=["admin"], security=[{}])
    def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    for module in route_modules():
        app.include_router(module.router, prefix=PREFIX)
        if hasattr(module, "pages"):
            app.include_router(module.pages)

    @app.get("/swagger", include_in_schema=False)
    def swagger() -> Response[str]:
        return _swagger(app)


def route_modules() -> list[ModuleType]:
    """Every module of `api/routes/` (a name without a leading underscore), by name: a new module is served
    without an edit here. Each has a `router` (served under /v1) and may have `pages` (served at the root;
    public only under a `PUBLIC_PATHS` path, as the console's). Their order does not change which route answers: Powertools tries static paths first, and no
    dynamic route of one module matches another's path (`tests/unit/test_route_discovery.py`)."""
    from . import routes

    names = sorted(m.name for m in pkgutil.iter_modules(routes.__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"{routes.__name__}.{name}") for name in names]


def _not_found_or_not_allowed(app: ApiGatewayResolver) -> Response:
    """404 for a path no route has; 405 with `Allow` for a path that exists with other methods."""
    event = app.current_event
    method = event.http_method.upper()
    path = powertools_compat.route_path(app, event.path)
    routes = powertools_compat.registered_routes(app)
    allowed = sorted({route.method.upper() for route in routes if route.rule.match(path)})
    if allowed:
        return error_response(
            405,
            "method_not_allowed",
            f"{method} is not allowed on {path}; use {', '.join(allowed)}",
            {"method": method, "allowed": allowed},
            headers={"Allow": ", ".join(allowed)},
        )
    return error_response(
        404,
        "not_found",
        f"no route {method} {path}; the API is described at /swagger",
        {"method": method, "path": path},
    )


def _swagger(app: ApiGatewayResolver) -> Response[str]:
    """The OpenAPI document (`?format=json`) or the Swagger UI page, both built on request.

    Written here rather than with `enable_swagger()` because that method imports Powertools' OpenAPI object
    model when the route is registered, which is 150–190 ms of every Lambda cold start on this machine
    (bench/cold_start.py), although only /swagger needs it. The page itself is Powertools' own: the same
    schema generator, HTML template and bundled Swagger UI assets, loaded only here. The refusals are added
    by `responses.describe_refusals`, as in docs/openapi.json."""
    from pathlib import Path

    from aws_lambda_powertools.event_handler.openapi import swagger_ui
    from aws_lambda_powertools.event_handler.openapi.models import Server
    from aws_lambda_powertools.event_handler.openapi.swagger_ui import generate_swagger_html

    from .responses import describe_refusals

    base_path = powertools_compat.base_path(
        app
    )  # the stage prefix, when the API is called without a custom domain
    schema = app.get_openapi_json_schema(servers=[Server(url=base_path or "/")], **openapi_metadata())
    spec = json.dumps(describe_refusals(json.loads(schema)))
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
    return path == ROOT or any(path == public or path.startswith(public + "/") for public in PUBLIC_PATHS)


def _content_type(event: BaseProxyEvent) -> tuple[str, dict[str, str]]:
    """The media type (lower case: media types and parameter names are case-insensitive) and parameters."""
    media, *parameters = (event.headers.get("content-type") or "").split(";")
    params = {}
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        params[name.strip().lower()] = value.strip().strip('"')
    return media.strip().lower(), params


def _media_type_refusal(media_type: str) -> Response:
    return error_response(
        415,
        "unsupported_media_type",
        f"request bodies must be JSON: send 'Content-Type: application/json' (got {media_type!r})",
        {"media_type": media_type},
    )


def _unsupported_media(event: BaseProxyEvent) -> Response | None:
    media_type, params = _content_type(event)
    if event.body and media_type not in ("", JSON_MEDIA_TYPE):
        return _media_type_refusal(media_type)
    charset = params.get("charset")
    if event.body and charset is not None and charset.lower() not in UTF8_CHARSETS:
        return error_response(
            400,
            "unsupported_charset",
            f"request bodies must be UTF-8: {SEND_JSON} (or charset=utf-8), not charset={charset}",
            {"charset": charset},
        )
    return None


def _body_refusal(event: BaseProxyEvent) -> Response | None:
    """415 for another media type, 400 for another charset, a body that is not UTF-8 (in Lambda it can come
    base64-encoded) or JSON nested beyond what the parser can follow. For a JSON body with a UTF-8 charset
    the header is reduced to `application/json`, the one spelling Powertools' validation recognizes."""
    refused = _unsupported_media(event)
    if refused is not None:
        return refused
    if _content_type(event)[0] == JSON_MEDIA_TYPE:
        headers = event.raw_event.get("headers")
        name = next((name for name in headers or {} if name.lower() == "content-type"), None)
        if name is not None and isinstance(headers, dict):
            event.raw_event["headers"] = {**headers, name: JSON_MEDIA_TYPE}
    if not event.body:
        return None
    try:
        event.decoded_body  # noqa: B018 - decodes once (cached) and proves the text is UTF-8
    except (UnicodeDecodeError, binascii.Error, ValueError):
        return error_response(400, "malformed_json", NOT_UTF8_MESSAGE)
    try:
        event.json_body  # noqa: B018 - parsed once (cached); a syntax error is left to the validation (400)
    except RecursionError:
        return error_response(
            400, "malformed_json", f"the request body is nested too deeply to parse: {SEND_JSON}"
        )
    except json.JSONDecodeError:
        pass  # a syntax error: the validation answers 400 malformed_json with the position
    except ValueError as error:  # valid syntax the parser still refuses, e.g. an integer over 4,300 digits
        return error_response(
            400, "malformed_json", f"the request body cannot be parsed ({error}): {SEND_JSON}"
        )
    return None


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value if isinstance(value, str | int | float | bool | list | None) else str(value)
        for key, value in details.items()
    }
