"""Default boto3 clients with the function's own role (STS, Bedrock), built on first use."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

from .credentials import DEFAULT_CLIENT_CONFIG


def default_client(service_name: str, region: str | None = None, config: Config | None = None) -> Any:
    return boto3.client(service_name, region_name=region or None, config=config or DEFAULT_CLIENT_CONFIG)
