"""The watch: per-session comparisons, early-divergence warnings, bounded memory."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from sm121.locality.watch import LocalityWatch, WatchLimits


class ByteTokenizer:
    """One token per byte of the rendered messages; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, body: dict[str, Any]) -> list[int]:
        self.calls += 1
        return list("".join(m["content"] for m in body["messages"]).encode())


def _turn(system: str, turns: int) -> dict[str, Any]:
    messages = [{"role": "system", "content": system + " " + "rules " * 40}]
    messages += [{"role": "user", "content": f"step {i} " * 10} for i in range(turns)]
    return {"messages": messages}


async def test_first_request_of_a_session_is_not_tokenized() -> None:
    tokenizer = ByteTokenizer()
    watch = LocalityWatch(tokenizer, block_size=16)
    assert await watch.observe("s", _turn("sys", 1), 100) is None
    assert tokenizer.calls == 0


async def test_append_only_session_reuses_most_of_each_prompt() -> None:
    tokenizer = ByteTokenizer()
    watch = LocalityWatch(tokenizer, block_size=16)
    results = [await watch.observe("s", _turn("sys", n), 100) for n in range(1, 5)]
    assert results[0] is None
    assert all(r is not None and r.kept_fraction > 0.9 and r.changed == "appended"
               for r in results[1:])
    assert tokenizer.calls == 4  # both prompts once, then one per turn


async def test_moving_timestamp_warns_after_repeated_early_divergence(
        caplog: pytest.LogCaptureFixture) -> None:
    results: list[tuple[bool, bool]] = []
    watch = LocalityWatch(ByteTokenizer(), block_size=16, limits=WatchLimits(warn_after=3),
                          on_result=lambda _s, _r, early, warn: results.append((early, warn)))
    with caplog.at_level(logging.WARNING, logger="sm121.gateway.locality"):
        for n in range(1, 6):
            await watch.observe("s", _turn(f"time 10:0{n}", n), 100)
    assert [w for _, w in results] == [False, False, True, False]
    assert all(early for early, _ in results)
    assert "put dynamic prompt fields last" in caplog.text
    report = watch.report()["sessions"][0]
    assert report["warnings"] == 1 and report["last"]["first_block"] == 0
    assert report["last"]["changed"].startswith("messages[0].content")


async def test_sessions_are_bounded_and_evictions_reported() -> None:
    evicted: list[str] = []
    watch = LocalityWatch(ByteTokenizer(), block_size=16, limits=WatchLimits(max_sessions=3),
                          on_evict=evicted.append)
    for i in range(5):
        await watch.observe(f"s{i}", _turn("x", 1), 100)
    assert evicted == ["s0", "s1"]
    assert [s["session"] for s in watch.report()["sessions"]] == ["s4", "s3", "s2"]


async def test_a_failing_tokenizer_never_raises() -> None:
    skipped: list[str] = []

    async def broken(_: dict[str, Any]) -> list[int]:
        raise RuntimeError("no /tokenize here")

    watch = LocalityWatch(broken, block_size=16, on_skip=skipped.append)
    await watch.observe("s", _turn("x", 1), 100)
    assert await watch.observe("s", _turn("x", 2), 100) is None
    assert skipped == ["tokenize"]


async def test_submit_skips_when_too_many_are_pending() -> None:
    skipped: list[str] = []
    watch = LocalityWatch(ByteTokenizer(), block_size=16, limits=WatchLimits(max_pending=2),
                          on_skip=skipped.append)
    for i in range(5):
        watch.submit(f"s{i}", _turn("x", 1), 100)
    await watch.drain()
    assert skipped == ["busy"] * 3
    assert json.dumps(watch.report())  # the report is plain JSON


async def test_a_session_evicted_while_tokenizing_gets_no_label_back() -> None:
    """Regression: a comparison that finished after its session was evicted re-created the
    session's metric label, so client-chosen session ids grew /metrics without bound."""
    labels: dict[str, float] = {}
    release = asyncio.Event()

    async def slow(body: dict[str, Any]) -> list[int]:
        await release.wait()
        return list("".join(m["content"] for m in body["messages"]).encode())

    watch = LocalityWatch(slow, block_size=16, limits=WatchLimits(max_sessions=2),
                          on_result=lambda s, r, *_: labels.__setitem__(s, r.reusable_fraction),
                          on_evict=lambda s: labels.pop(s, None))
    await watch.observe("old", _turn("x", 1), 100)
    watch.submit("old", _turn("x", 2), 100)  # waits in /tokenize
    await asyncio.sleep(0)
    for i in range(3):
        await watch.observe(f"new{i}", _turn("x", 1), 100)  # evicts "old"
    release.set()
    await watch.drain()
    live = {s["session"] for s in watch.report()["sessions"]}
    assert "old" not in live and set(labels) <= live
    assert watch._bytes == sum(s.footprint for s in watch._sessions.values())
