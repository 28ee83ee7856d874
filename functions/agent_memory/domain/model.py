"""The base of the service's pydantic models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """A pydantic model whose validator and serializer are built when the class is first used, not when its
    module is imported. A Lambda cold start imports about 60 models and one request uses a handful: deferring
    saves ~45 ms of import (bench/cold_start.py). Subclasses' own `model_config` is merged with this one."""

    model_config = ConfigDict(defer_build=True)
