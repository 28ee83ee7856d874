"""The OpenAPI document of /v1, generated from the routes and models (the committed docs/openapi.json is
checked against it by the tests). `python -m agent_memory.api.openapi > docs/openapi.json` refreshes it."""

from __future__ import annotations

import json
from typing import Any, NoReturn

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from ..domain.errors import Unauthenticated
from .app import create_app, openapi_metadata
from .responses import describe_refusals


def _no_services() -> NoReturn:  # the document is built without touching storage
    raise RuntimeError("services are not available while generating the OpenAPI document")


def _no_auth(_event: Any) -> NoReturn:
    raise Unauthenticated("not serving requests")


def openapi_document() -> dict:
    app = create_app(APIGatewayRestResolver(enable_validation=True), _no_services, _no_auth)
    schema = app.get_openapi_json_schema(**openapi_metadata())
    return describe_refusals(json.loads(schema))


def main() -> None:
    print(json.dumps(openapi_document(), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
