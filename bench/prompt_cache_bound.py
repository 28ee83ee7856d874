"""The least a session's prompt can cost under the prompt-cache rules, whatever the TTLs and cache points: a
clairvoyant lower bound (issue 33). Not a benchmark itself: `prompt_cache.py` prints it beside each row.

Input: the session's model requests in order (when each was sent, its blocks' bytes and token counts, as
`prompt_cache_simulator.converse_blocks` gives them). The bound holds for the layout those requests have
(the same bytes in the same order) and for any choice of TTL per cache point per request, any placement of
the cache points and any number of them, made by a policy that knows every future gap.

The relaxation, token by token. A token first appears in some request and, when each request's prompt
extends the previous one (no trimming), stays in every later request. In each request a token is either

- read (cost `read`, 0.1×): only if it is *available*, i.e. it was cached by the previous request with a
  TTL longer than the gap since;
- written with a TTL (cost `write(ttl)`: 1.25× for 5 minutes, 2× for an hour): then it is available in the
  next request if the gap to it is shorter than that TTL;
- sent uncached (1×): not available next.

A token that is read may stay available for free (a longer cache point written later in the same request
covers it): the relaxation grants that whenever the next gap is shorter than the longest TTL. Real requests
are constrained further (a cache point caches a whole prefix, at most four per request, TTLs non-increasing,
a minimum cacheable length, the provider's 20-block lookback, a read refreshes only the entry it hits), so no
real policy pays less than the cheapest path of every token; the tokens first seen in one request share
their path, so the bound is a small dynamic programme per request (`cheapest_path`).

Without pauses the bound is the familiar floor: each token written once at 1.25× and read at 0.1× in every
later request, the last request's new tokens sent uncached.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agent_memory.domain.sessions.cache_ttl import TTL_SECONDS
from agent_memory.domain.sessions.config import CacheTtl, ModelProfile


@dataclass(frozen=True)
class Request:
    """One model request as the cache sees it: when it was sent, and its blocks (digest, tokens) in prefix
    order."""

    at: datetime
    blocks: tuple[tuple[bytes, int], ...]

    @property
    def tokens(self) -> int:
        return sum(tokens for _, tokens in self.blocks)


@dataclass(frozen=True)
class Bound:
    """The clairvoyant bound of a session, in "tokens at the base input price" (`units`), beside the tokens
    sent (`sent`, what no caching pays). `None` when a request's prompt does not extend the previous one
    (history trimmed): the token relaxation needs it."""

    units: float
    sent: int
    pause_units: float
    """Of `units`: what the pauses that outlive every TTL add (the bound minus the bound of the same session
    with those pauses shortened to nothing): what was cached before them is paid again after them."""
    long_write_units: float = 0.0
    """Of `units`: what the gaps longer than the shortest TTL (but not every TTL) add: the dearer write of
    the tokens that must outlive them. The rest, `units - pause_units - long_write_units`, is the floor of
    a session without such gaps: each token written once at the cheapest rate, then read."""

    @property
    def share(self) -> float:
        return 100 * self.units / self.sent


def cheapest_path(profile: ModelProfile, gaps_after: Sequence[float | None]) -> float:
    """The cheapest cost of one token over the requests it appears in, given the gap after each of them
    (None after the last): a dynamic programme over "available in the next request" (yes / no)."""
    ttls: list[CacheTtl] = ["5m", "1h"] if profile.supports_1h_ttl else ["5m"]
    longest = max(TTL_SECONDS[ttl] for ttl in ttls)
    best: dict[bool, float] = {False: 0.0}  # state: available in the current request
    for gap in gaps_after:
        moves: list[tuple[bool, float]] = []
        for available, cost in best.items():
            if available:  # read; stays available while some TTL outlives the next gap
                moves.append((gap is not None and gap < longest, cost + profile.cache_read_multiplier))
                continue
            moves.append((False, cost + 1.0))  # sent uncached
            moves += [  # written with a TTL
                (gap is not None and gap < TTL_SECONDS[ttl], cost + profile.write_multiplier(ttl))
                for ttl in ttls
            ]
        best = {}
        for state, cost in moves:
            best[state] = min(cost, best.get(state, cost))
    return min(best.values())


def clairvoyant_bound(requests: Sequence[Request], profile: ModelProfile) -> Bound | None:
    """The least the session's input could cost (see the module docstring), or None when a request does
    not extend the previous one."""
    shortest, longest = TTL_SECONDS["5m"], TTL_SECONDS["1h"] if profile.supports_1h_ttl else TTL_SECONDS["5m"]
    gaps: list[float | None] = [
        (later.at - earlier.at).total_seconds() for earlier, later in itertools.pairwise(requests)
    ]
    gaps.append(None)
    # The same paths with the pauses that outlive every TTL shortened to nothing, then also the gaps that
    # outlive the shortest: the differences are those gaps' shares of the bound.
    calm = [None if gap is None else (0.0 if gap >= longest else gap) for gap in gaps]
    brisk = [None if gap is None else (0.0 if gap >= shortest else gap) for gap in gaps]
    units = [0.0, 0.0, 0.0]
    for index, request in enumerate(requests):
        previous = requests[index - 1].blocks if index else ()
        if request.blocks[: len(previous)] != previous:
            return None
        new = request.tokens - sum(tokens for _, tokens in previous)
        for slot, pattern in enumerate((gaps, calm, brisk)):
            units[slot] += new * cheapest_path(profile, pattern[index:])
    total, without_pauses, floor = units
    sent = sum(request.tokens for request in requests)
    return Bound(total, sent, total - without_pauses, without_pauses - floor)
