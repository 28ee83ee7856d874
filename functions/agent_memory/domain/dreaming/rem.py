"""The REM stage of the dreaming sweep: recurring themes of the recent recalls and each candidate's
reinforcement by them (the formula is in the `sweep` module docstring; the arithmetic in `scoring.py`)."""

from __future__ import annotations

import time as _time
from datetime import datetime

from .config import DreamingConfig
from .scoring import LightState, RemState, rem_reinforcement


class RemStage:
    def __init__(self, config: DreamingConfig) -> None:
        self.config = config

    def run(self, light: LightState, as_of: datetime) -> RemState:
        started = _time.perf_counter()
        rem = rem_reinforcement(
            light.candidates,
            light.recall_term_days,
            light.recall_term_items,
            light.rem_recalls,
            self.config,
            as_of,
        )
        rem.seconds = _time.perf_counter() - started
        return rem
