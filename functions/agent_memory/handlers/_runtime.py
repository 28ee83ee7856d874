"""What the Lambda entry points share: the libraries X-Ray traces, and services built on first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..api.context import Services

# The only client library the functions call. Powertools' default (patch everything X-Ray supports) would also
# import and patch whatever else happens to be installed (httpx, requests, sqlite3, ...) at every cold start.
TRACED_LIBRARIES = ["botocore"]


def build_aws_services() -> Services:
    from ..settings.service import get_settings
    from ..wiring import build_aws

    return build_aws(get_settings())


class LazyServices:
    """The function's services, built by the first invocation and never at import, so a cold start pays only
    for imports and tests can inject services built on moto or Stubber clients (`set`)."""

    def __init__(self, build: Callable[[], Services] = build_aws_services) -> None:
        self._build = build
        self._value: Services | None = None

    def __call__(self) -> Services:
        if self._value is None:
            self._value = self._build()
        return self._value

    def set(self, value: Services | None) -> None:
        self._value = value
