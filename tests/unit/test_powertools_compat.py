"""The private Powertools names the service uses are all in api/powertools_compat.py, and still there with the
signatures it calls them with. A Powertools upgrade that renames or reshapes one fails here, naming it,
instead of breaking the API's gate, its 404/405 answers or the local server at run time."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, HttpResolverLocal, Response
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Route
from aws_lambda_powertools.shared.version import VERSION

from agent_memory.api import powertools_compat
from agent_memory.api.app import create_app
from agent_memory.domain.errors import Unauthenticated

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "functions" / "agent_memory"


def test_the_installed_powertools_is_the_pinned_one() -> None:
    pins = dict(
        line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line
    )
    assert VERSION == powertools_compat.PINNED_VERSION == pins["aws_lambda_powertools"], (
        "Powertools changed: check every name in api/powertools_compat.py, then update PINNED_VERSION"
    )


def test_the_private_methods_keep_the_signatures_the_compat_module_calls() -> None:
    assert list(inspect.signature(ApiGatewayResolver._get_base_path).parameters) == ["self"]
    assert list(inspect.signature(ApiGatewayResolver._remove_prefix).parameters) == ["self", "path"]
    assert list(inspect.signature(HttpResolverLocal._resolve).parameters) == ["self"]
    assert inspect.iscoroutinefunction(HttpResolverLocal._resolve_async)
    assert list(inspect.signature(HttpResolverLocal._resolve_async).parameters) == ["self"]
    assert hasattr(HttpResolverLocal(), "_cors")


def test_the_private_attributes_hold_what_the_compat_module_expects() -> None:
    app = APIGatewayRestResolver(enable_validation=True)
    assert callable(powertools_compat.validation_middleware(app))
    assert powertools_compat.validation_middleware(APIGatewayRestResolver()) is None

    @app.get("/things/<thing>")
    def thing(thing: str) -> dict[str, str]:
        return {"thing": thing}

    routes = powertools_compat.registered_routes(app)
    assert all(isinstance(route, Route) for route in routes)
    assert [(route.method, bool(route.rule.match("/things/x"))) for route in routes] == [("GET", True)]


def test_the_replaced_validation_middleware_runs_first_for_every_request() -> None:
    # the API's gate answers 401 before Powertools would validate or even match the route
    def refuse(event: object) -> object:
        raise Unauthenticated("no key")

    app = create_app(APIGatewayRestResolver(enable_validation=True), lambda: None, refuse)  # type: ignore[arg-type,return-value]
    event = {
        "path": "/v1/memories",
        "httpMethod": "POST",
        "headers": {"Content-Type": "application/json"},
        "body": "{not json",
        "requestContext": {"stage": "prod"},
    }
    assert app.resolve(event, None)["statusCode"] == 401  # type: ignore[arg-type]
    assert isinstance(Response(status_code=200), Response)


def _private_powertools_uses(path: Path) -> list[str]:
    """`x._name` where `_name` is an attribute of a Powertools resolver class (the service's own are not)."""
    names = {
        name
        for cls in (ApiGatewayResolver, HttpResolverLocal)
        for name in dir(cls)
        if re.match(r"_[a-z]", name)
    }
    names |= {"_request_validation_middleware", "_static_routes", "_dynamic_routes", "_cors"}
    source = path.read_text(encoding="utf-8")
    if "aws_lambda_powertools.event_handler" not in source:
        return []  # only a module that has a resolver can reach into one
    tree = ast.parse(source)
    return [
        f"{path.relative_to(PACKAGE)}:{node.lineno} {node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in names
    ]


def test_no_other_module_uses_a_private_powertools_name() -> None:
    compat = PACKAGE / "api" / "powertools_compat.py"
    assert _private_powertools_uses(compat), "the scan sees nothing in the compat module: it is broken"
    offenders = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != compat
        for use in _private_powertools_uses(path)
    ]
    assert offenders == []
