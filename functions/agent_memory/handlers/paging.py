"""How a paged sweep's targets are cut into pages: shared by the list handlers (dreaming, curator) and the
state-machine definitions that drive them (infra/workflows/_asl.py `paged_sweep`)."""

from __future__ import annotations

PAGE_TARGETS = 1_000
"""Targets per page of a paged sweep: one ListTargets answer and one Distributed Map run. 1,000 targets of
realistic names take about 150,000 bytes, within the 256 KiB a state may carry (the list handlers also
check the bytes)."""

MAX_SWEEP_TARGETS = 100_000
"""Targets one execution sweeps at most (every page of it): 100 pages, a few hundred parent history events
(tests/infra/test_infra_sweep_scale.py computes them against Step Functions' 25,000)."""
