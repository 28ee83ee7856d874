"""The one settings object every builder takes: the service's settings and those of the wings it wires.

Entry points (the Lambda handlers through `wiring.process`, the CLI, the local server) read the environment
once, here; the builders only read what they are handed. `RuntimeSettings.of(settings)` keeps the older
calling form (`build_local(Settings(...))`): the other parts come from the environment at that boundary."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.dreaming import DreamingSettings, get_dreaming_settings
from ..settings.handlers import HandlerSettings, get_handler_settings
from ..settings.service import Settings, get_settings
from ..settings.skills import CuratorSettings, SkillsSettings, get_curator_settings, get_skills_settings


@dataclass(frozen=True)
class RuntimeSettings:
    service: Settings
    dreaming: DreamingSettings
    skills: SkillsSettings
    curator: CuratorSettings
    handlers: HandlerSettings

    @classmethod
    def from_environment(cls) -> RuntimeSettings:
        """Every part from the environment (the cached readers of `settings/`)."""
        return cls.of(get_settings())

    @classmethod
    def of(cls, settings: Settings | RuntimeSettings) -> RuntimeSettings:
        """`settings` itself, or the service settings given with the other parts read from the environment."""
        if isinstance(settings, RuntimeSettings):
            return settings
        return cls(
            service=settings,
            dreaming=get_dreaming_settings(),
            skills=get_skills_settings(),
            curator=get_curator_settings(),
            handlers=get_handler_settings(),
        )
