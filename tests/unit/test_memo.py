"""Request-scoped memos (domain/memo.py): every content-keyed cache of the domain is a registered memo that
`clear_all()` empties; a memo never changes a result, even while another thread clears it; and a new
`functools.lru_cache` in the domain fails here unless it caches the code's own constants (allow-list)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import threading
from pathlib import Path

import pytest

import agent_memory.domain as domain
from agent_memory.domain import memo
from agent_memory.domain.memory import dates, focus, slots, tokens
from agent_memory.domain.memory.relation import relate

DOMAIN = Path(domain.__file__).parent

ALLOWED_LRU_CACHES = {
    ("memory/relation_frames.py", "_compiled"): "compiles the lexicon's own patterns, never a memory's text",
    ("memory/relation_frames.py", "_any_form"): "the lexicon's forms as one pattern; takes no argument",
}
"""Process-level caches the domain may keep: none keyed by content (the settings' maxsize=1 caches of the
configuration are outside the domain)."""


def _cached_functions() -> list[tuple[str, str, str]]:
    """(file, function, decorator) of every function of the domain decorated with a functools cache or a memo."""
    found = []
    for path in sorted(DOMAIN.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for decorator in node.decorator_list:
                text = ast.unparse(decorator)
                if any(name in text for name in ("lru_cache", "functools.cache", "cached_property", "memo(")):
                    found.append((path.relative_to(DOMAIN).as_posix(), node.name, text))
    return found


def test_no_process_level_cache_of_content_in_the_domain():
    caches = [(file, name) for file, name, text in _cached_functions() if "memo(" not in text]
    unknown = [entry for entry in caches if entry not in ALLOWED_LRU_CACHES]
    assert not unknown, (
        f"{unknown}: a process-level cache in the domain keeps what it was given after the request, a purged "
        "memory's text included; use `@memo(maxsize)` from domain/memo.py (request-scoped) instead"
    )
    assert set(ALLOWED_LRU_CACHES) <= set(caches), "the allow-list names a cache that is gone: remove it"


def test_every_memo_of_the_domain_is_registered():
    for module in pkgutil.walk_packages(domain.__path__, "agent_memory.domain."):
        importlib.import_module(module.name)
    declared = {(file, name) for file, name, text in _cached_functions() if "memo(" in text}
    registered = {(name.split(".")[-2], name.rsplit(".", 1)[-1]) for name in memo.MEMOS}
    assert len(declared) >= 14  # the caches this module replaced (text, slots, tokens, focus, dates, ...)
    for file, name in declared:
        assert (Path(file).stem, name) in registered, f"{file}:{name} is not in memo.MEMOS"


def test_clear_all_empties_every_memo():
    focus._traits("Tomas: we moved the standup to Thursday")
    slots.terms("Tomas prefers tabs over spaces")
    assert sum(len(held) for held in memo.MEMOS.values()) > 0
    dropped = memo.clear_all()
    assert dropped > 0
    assert all(len(held) == 0 for held in memo.MEMOS.values())


def test_a_memo_drops_its_oldest_entry_at_maxsize():
    @memo.memo(maxsize=2)
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    calls: list[int] = []
    try:
        assert [double(1), double(2), double(3), double(1)] == [2, 4, 6, 2]
        assert calls == [1, 2, 3, 1]  # 1 was the oldest when 3 came: computed again
        held = memo.MEMOS[f"{__name__}.{double.__qualname__}"]
        assert {key for key, _ in held.items()} == {(3,), (1,)}
        with pytest.raises(TypeError):
            double(x=1)  # positional arguments only: a keyword call cannot share a key with a positional one
    finally:
        memo.MEMOS.pop(f"{__name__}.{double.__qualname__}", None)


TEXTS = [
    "Tomas moved the standup to Thursday at 10am",
    "Caroline: I went to the LGBTQ support group yesterday",
    "Melanie painted a sunrise over the lake in 2022",
    "The billing service replaced Postgres with DynamoDB last week",
    "Ana prefers tabs over spaces",
    "Jon reports to Priya since March 3, 2024",
]


def _results() -> list[object]:
    out: list[object] = []
    for text in TEXTS:
        out.append(focus._traits(text))
        out.append(slots.terms(text))
        out.append(slots.entities(text))
        out.append(tokens.normalize(text))
        out.append(dates.spans_of(text, None))
        for other in TEXTS:
            out.append(relate(text, other))
    return out


def test_results_do_not_depend_on_the_memo_even_when_another_request_clears_it():
    """The threaded local server: one request's end clears the memos while others run. Each value must then be
    what the function computes without any memo."""
    memo.clear_all()
    expected = _results()
    memo.clear_all()
    stop = threading.Event()

    def clear_again_and_again() -> None:
        while not stop.is_set():
            memo.clear_all()

    failures: list[str] = []

    def request() -> None:
        for _ in range(20):
            if _results() != expected:
                failures.append("a result changed")
                return

    clearer = threading.Thread(target=clear_again_and_again)
    workers = [threading.Thread(target=request) for _ in range(3)]
    clearer.start()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    clearer.join()
    assert not failures
    assert _results() == expected  # and warm, after the race


def test_the_frames_prefilter_matches_exactly_where_some_form_matches():
    """relation_frames.found scans a statement once with every form joined (`_any_form`) before trying each
    form: the joined pattern must match a statement exactly when one of the forms does, on the labelled
    write-discipline statements (which state frames) and on their question forms."""
    import json

    from agent_memory.domain.memory import relation_frames as frames

    data = json.loads((Path(__file__).parents[1] / "data" / "write_discipline_cases.json").read_text())
    cases = data["cases"] if isinstance(data, dict) else data
    texts = [step if isinstance(step, str) else step["content"] for case in cases for step in case["steps"]]
    forms = [form for _, each in frames._FRAMES for form in each]
    framed = 0
    for text in texts:
        body = frames.normalize(frames.speaker(text)[1])
        some = any(frames._compiled(form).search(body) for form in forms)
        assert bool(frames._any_form().search(body)) == some, text
        framed += some
    assert framed >= 50  # the set states frames: the prefilter's yes is exercised, not only its no
