"""A route module is served because it is in `api/routes/`: `create_app` includes every module there (by name),
so adding a router module needs no line in `api/app.py`. The order of the modules changes no answer: Powertools
tries every static path first, then the dynamic ones in the order they were included, and no dynamic route of
one module matches a path another module serves."""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from agent_memory.api import app as app_module
from agent_memory.api import powertools_compat, routes
from agent_memory.api.app import create_app, route_modules
from agent_memory.api.openapi import openapi_document
from agent_memory.domain.identity import Principal, Scope
from tests.contract.chat_fakes import api_event

ROUTES_DIR = Path(routes.__file__).parent
THROWAWAY = "zz_throwaway_things"


class _Context:
    function_name = "agent-memory-api"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:agent-memory-api"
    aws_request_id = "route-discovery-test"


def _app() -> APIGatewayRestResolver:
    principal = Principal(tenant="acme", namespaces=("*",), scopes=frozenset(Scope), key_id="k1")

    no_services: Any = SimpleNamespace(erasure=None)  # the throwaway route calls none; no purge fence
    return create_app(
        APIGatewayRestResolver(enable_validation=True), lambda: no_services, lambda _event: principal
    )


@pytest.fixture
def throwaway_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A router module in a directory of the `agent_memory.api.routes` package, written as a new route module
    is: nothing else is edited."""
    (tmp_path / f"{THROWAWAY}.py").write_text(
        textwrap.dedent(
            """
            from aws_lambda_powertools.event_handler.api_gateway import Router

            from agent_memory.api.context import current
            from agent_memory.domain.identity import Scope

            router = Router()


            @router.get("/things", summary="Throwaway things", tags=["things"])
            def list_things() -> dict:
                current().allow(Scope.READ)
                return {"things": [], "tenant": current().principal.tenant}
            """
        )
    )
    monkeypatch.setattr(routes, "__path__", [*routes.__path__, str(tmp_path)])
    yield f"{routes.__name__}.{THROWAWAY}"
    sys.modules.pop(f"{routes.__name__}.{THROWAWAY}", None)


def test_every_module_of_api_routes_is_included_in_name_order() -> None:
    on_disk = sorted(p.stem for p in ROUTES_DIR.glob("*.py") if not p.stem.startswith("_"))
    assert [m.__name__.rsplit(".", 1)[1] for m in route_modules()] == on_disk
    assert len(on_disk) >= 12, on_disk


def test_a_new_router_module_is_served_and_documented_with_no_other_edit(throwaway_module: str) -> None:
    assert throwaway_module in [m.__name__ for m in route_modules()]
    response = _app().resolve(
        api_event("GET", "/v1/things", tenant=None, headers={"Authorization": "Bearer k"}), _Context()
    )
    assert response["statusCode"] == 200, response["body"]
    assert '"tenant":"acme"' in response["body"].replace(" ", "")
    assert "/v1/things" in openapi_document()["paths"]


def test_without_the_module_the_path_is_not_served() -> None:
    response = _app().resolve(
        api_event("GET", "/v1/things", tenant=None, headers={"Authorization": "Bearer k"}), _Context()
    )
    assert response["statusCode"] == 404


def _served_by(module: ModuleType) -> list[Any]:
    """The routes `module` alone adds to an app, as `create_app` includes it."""
    app = APIGatewayRestResolver()
    app.include_router(module.router, prefix=app_module.PREFIX)
    if hasattr(module, "pages"):
        app.include_router(module.pages)
    return powertools_compat.registered_routes(app)


def _shadows(route: Any, other: Any) -> bool:
    """`route` could answer a request meant for `other` depending on the order the modules are included: two
    dynamic routes one of which matches the other's path, or the same static path twice. A static path is
    always tried before every dynamic one (Powertools), whatever the order."""
    if route.method != other.method:
        return False
    if route.rule.groups == 0 or other.rule.groups == 0:
        return route.rule.groups == other.rule.groups == 0 and route.path == other.path
    return bool(route.rule.match(re.sub(r"<[^>]+>", "x1", other.path)))


def test_no_route_of_one_module_shadows_a_route_of_another() -> None:
    """What makes the discovery order harmless: which route answers a request does not depend on it."""
    served = {module.__name__: _served_by(module) for module in route_modules()}
    assert sum(len(routes) for routes in served.values()) >= 50
    overlaps = [
        (module, route.method, route.path, other, theirs.path)
        for module, routes in served.items()
        for other, others in served.items()
        if other != module
        for route in routes
        for theirs in others
        if _shadows(route, theirs)
    ]
    assert not overlaps, overlaps


def test_the_shadow_check_sees_a_dynamic_route_that_would_answer_another_modules_path() -> None:
    (broad,) = _served_by(_module("broad", "/memories/<memory_id>/<action>"))
    (narrow,) = _served_by(_module("narrow", "/memories/<memory_id>/reviewed"))
    (static,) = _served_by(_module("static", "/memories/reused"))
    assert _shadows(broad, narrow) and _shadows(narrow, broad) is False
    assert not _shadows(broad, static) and not _shadows(static, broad)
    assert _shadows(static, static)


def _module(name: str, rule: str) -> ModuleType:
    from aws_lambda_powertools.event_handler.api_gateway import Router

    module = ModuleType(name)
    module.router = Router()  # type: ignore[attr-defined]
    module.router.post(rule)(lambda **_: {})  # type: ignore[attr-defined]
    return module
