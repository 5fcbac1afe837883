"""The relay against hostile upstreams (raw bytes from fake_hostile_upstream.py), through the real
gateway, read by h11 as a correct client must: every answer is well framed (or its connection
closed), goes to the client that asked, and the connection a misbehaving answer came on is
never used again: the next request, after each case, gets its own answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from fake_hostile_upstream import STRAY, FakeHostileUpstream
from gateway_harness import Running, discovered, running_gateway
from wire_client import Answer, exchange


@asynccontextmanager
async def hostile_gateway() -> AsyncIterator[tuple[FakeHostileUpstream, Running]]:
    upstream = await FakeHostileUpstream().start()
    try:
        async with running_gateway(upstream.url) as gw:
            await discovered(gw, 1)
            yield upstream, gw
    finally:
        await upstream.stop()


async def _then_reuse(upstream: FakeHostileUpstream, gw: Running, n: int = 3) -> None:
    """After any case: answers go to their own clients, and no connection stays busy."""
    for i in range(n):
        answer = await exchange(gw.url, f"next-{i}")
        assert (answer.status, answer.complete, answer.ids()) == (200, True, {f"next-{i}"})
    assert not gw.replica.pool.busy


def _well_framed(answer: Answer) -> None:
    assert not answer.broken, answer.broken
    assert answer.complete or answer.closed
    assert not answer.partial_chunk


CASES = [  # behaviour, streamed, status the client gets, whether the body names its own id
    ("cl", False, 200, True),
    ("sse", True, 200, True),
    ("continue", False, 200, True),
    ("drip", False, 200, True),
    ("drip_sse", True, 200, True),
    ("close", False, 200, True),
    ("eof_body", False, 200, True),
    ("stray_after", False, 200, True),
    ("te_cl", False, 503, False),
    ("dup_cl", False, 503, False),
    ("drop", False, 503, False),
    ("s204", False, 204, False),
    ("s304", False, 304, False),
]


@pytest.mark.parametrize(("how", "stream", "status", "own"), CASES, ids=[c[0] for c in CASES])
async def test_each_case_is_well_framed_and_the_next_request_gets_its_own_answer(
        how: str, stream: bool, status: int, own: bool) -> None:
    async with hostile_gateway() as (upstream, gw):
        upstream.plan["a"] = how
        answer = await exchange(gw.url, "a", stream=stream)
        _well_framed(answer)
        assert answer.complete and answer.status == status
        assert answer.ids() == ({"a"} if own else set())
        if status in (204, 304):
            assert answer.body == b""
        await _then_reuse(upstream, gw)


@pytest.mark.parametrize("how", ["te_cl", "dup_cl", "stray_after"])
async def test_the_connection_a_bad_answer_came_on_is_closed_not_reused(how: str) -> None:
    async with hostile_gateway() as (upstream, gw):
        await exchange(gw.url, "warm")  # one pooled connection
        before = upstream.connections
        upstream.plan["a"] = how
        await exchange(gw.url, "a")
        await exchange(gw.url, "b")
        assert upstream.connections == before + 1  # b came on a new connection
        assert len(gw.replica.pool._idle) == 1


async def test_bytes_on_an_idle_connection_spoil_it() -> None:
    async with hostile_gateway() as (upstream, gw):
        for rid in ("alice", "bob", "carol", "dave"):  # the reviewer's four clients in turn
            answer = await exchange(gw.url, rid)
            assert answer.ids() == {rid}
            assert upstream.inject_idle() >= 1  # a stray response while the connection idles
        assert STRAY not in str(gw.replica.summary())


async def test_a_death_mid_chunk_ends_the_stream_cleanly_with_the_error_in_its_own_chunk(
        ) -> None:
    async with hostile_gateway() as (upstream, gw):
        upstream.plan["a"] = "die_chunk"
        answer = await exchange(gw.url, "a", stream=True)
        _well_framed(answer)
        assert answer.complete and answer.status == 200
        assert answer.body.startswith(b'data: {"id": "a"}\n\n')  # the whole event, nothing more
        assert b"upstream_disconnected" in answer.body and answer.body.endswith(b"[DONE]\n\n")
        assert answer.ids() == {"a"}  # the half chunk never got through
        await _then_reuse(upstream, gw)


async def test_a_json_body_cut_mid_chunk_closes_the_clients_connection_on_a_chunk_boundary(
        ) -> None:
    async with hostile_gateway() as (upstream, gw):
        upstream.plan["a"] = "die_json"
        answer = await exchange(gw.url, "a")
        _well_framed(answer)
        assert answer.closed and answer.status == 200 and answer.body == b'{"id"'
        await _then_reuse(upstream, gw)


async def test_head_gets_headers_at_once_and_keeps_the_replica_healthy() -> None:
    async with hostile_gateway() as (upstream, gw):
        for i in range(3):
            answer = await exchange(gw.url, f"h{i}", method="HEAD")
            _well_framed(answer)
            assert (answer.status, answer.complete, answer.body) == (200, True, b"")
            assert answer.headers["content-length"] == str(len(b'{"id": "h0"}'))
        assert gw.replica.healthy and not gw.replica.pool.busy
        assert len(gw.replica.pool._idle) == 1  # a HEAD's connection is reused
        await _then_reuse(upstream, gw)


async def test_a_head_on_a_dead_upstream_does_not_count_against_the_replica() -> None:
    async with hostile_gateway() as (upstream, gw):
        upstream.plan["a"] = "drop"
        for _ in range(3):
            answer = await exchange(gw.url, "a", method="HEAD")
        assert answer.status == 503 and gw.replica.healthy
        assert gw.replica.counts["ejections"] == 0


async def test_dropped_connections_leave_no_connection_busy() -> None:
    async with hostile_gateway() as (upstream, gw):
        upstream.default = "drop"
        answers = await asyncio.gather(*(exchange(gw.url, f"d{i}") for i in range(30)))
        assert {a.status for a in answers} == {503}
        assert not gw.replica.pool.busy  # main left busy=30
        upstream.default = "cl"
        await _then_reuse(upstream, gw)


async def test_an_idle_connection_is_asked_for_unread_bytes_before_reuse() -> None:
    """Bytes the event loop has not handed to the protocol yet (they landed in the socket just
    now) still spoil the connection: acquire() looks at the socket itself."""
    async with hostile_gateway() as (upstream, gw):
        await exchange(gw.url, "a")
        pool = gw.replica.pool
        (idle,) = pool._idle
        upstream.inject_idle()  # in the gateway's socket buffer, not yet read by the loop
        proto, reused = await pool.acquire()
        assert proto is not idle and not reused
        pool.release(proto)
        assert idle.transport is not None and idle.transport.is_closing()
