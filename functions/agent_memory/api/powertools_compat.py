"""Every private Powertools name the service relies on, in one module (Powertools pinned in constraints.txt).

Powertools offers no public hook for what these do, so each use is a small function here and nowhere else:
- `validation_middleware` / `replace_validation_middleware`: `ApiGatewayResolver._request_validation_middleware`,
  replaced by the API's gate (authentication before validation: api/app.py `create_app`);
- `base_path`: `ApiGatewayResolver._get_base_path()`, the stage prefix of links and the OpenAPI server;
- `route_path` and `registered_routes`: `_remove_prefix()`, `_static_routes`, `_dynamic_routes` (404 vs 405);
- `ThreadedResolverLocal`: overrides `HttpResolverLocal._resolve_async` and calls `_resolve()` and `_cors`.

tests/unit/test_powertools_compat.py asserts that each name exists with the expected signature and that the
installed Powertools is the pinned one, so an upgrade that moves any of them fails there first."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import HttpResolverLocal
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Response, Route
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

PINNED_VERSION = "3.37.0"
"""The Powertools version these names were checked against (constraints.txt pins the same)."""

Middleware = Callable[[ApiGatewayResolver, NextMiddleware], Response]


def validation_middleware(app: ApiGatewayResolver) -> Middleware | None:
    """Powertools' request-validation middleware of `app`; None unless built with enable_validation=True."""
    return getattr(app, "_request_validation_middleware", None)


def replace_validation_middleware(app: ApiGatewayResolver, middleware: Middleware) -> None:
    """Run `middleware` where Powertools runs its validation middleware: before any other middleware."""
    app._request_validation_middleware = middleware  # type: ignore[assignment]


def base_path(app: ApiGatewayResolver) -> str:
    """The stage prefix of the current request when the API is called without a custom domain ("" else)."""
    return str(app._get_base_path())


def route_path(app: ApiGatewayResolver, path: str) -> str:
    """The request path without the resolver's `strip_prefixes`, as the routes are matched against it."""
    return str(app._remove_prefix(path))


def registered_routes(app: ApiGatewayResolver) -> list[Route]:
    """Every route of `app` (each with `.method` and the compiled `.rule`)."""
    return [*app._static_routes, *app._dynamic_routes]


class ThreadedResolverLocal(HttpResolverLocal):
    """HttpResolverLocal with each request resolved on one worker thread, never on the event loop.

    Powertools' asynchronous path (`_resolve_async`) runs sync middleware in threads but calls a sync route
    handler on the event loop itself (`_registered_api_adapter_async`: `next_middleware(**route_args)`), so a
    long route (a 100-item batch that embeds, an import) stopped every other request, health included, for
    its whole duration (issue 29). Here the whole synchronous resolution (middleware and route) runs in
    `asyncio.to_thread`, which carries the request's ContextVar state (HttpResolverLocal keeps the event and
    context per request there). One thread per request, instead of one per middleware as well."""

    async def _resolve_async(self) -> dict[str, Any]:  # type: ignore[override]
        return await asyncio.to_thread(self._resolve_on_thread)

    def _resolve_on_thread(self) -> dict[str, Any]:
        return self._resolve().build(self.current_event, self._cors)
