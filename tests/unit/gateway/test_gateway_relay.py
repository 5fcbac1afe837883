"""The relay's response parser: a body split anywhere across reads comes out whole, the
chunks go on as the upstream framed them (less the last chunk, which the client writer adds),
and the end of the body is known. The hostile cases are in test_relay_conformance.py."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from sm121.gateway.relay import RelayProtocol

EVENTS = [b"data: {\"n\": 1}\n\n", b"data: {\"n\": 2}\n\n", b"data: [DONE]\n\n"]
CHUNKED_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
FRAMED = b"".join(b"%x\r\n%b\r\n" % (len(e), e) for e in EVENTS)
LAST = b"0\r\n\r\n"


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.sent = bytearray()
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.extend(data)

    def close(self) -> None:
        self.closing = True


def _feed(wire: bytes, cuts: list[int], method: str = "POST"
          ) -> tuple[RelayProtocol, bytes, bytes]:
    proto = RelayProtocol()
    proto.connection_made(_Transport())
    proto.send(method, "/v1/chat/completions", "upstream", [], b"{}")
    raw, payload = bytearray(), bytearray()

    def sink(r: bytes, p: bytes) -> None:
        raw.extend(r)
        payload.extend(p)

    points = sorted({c % (len(wire) + 1) for c in cuts} | {0, len(wire)})
    for start, end in zip(points, points[1:], strict=False):
        proto.data_received(wire[start:end])
        if proto.head.done() and proto._sink is None:
            proto.attach(sink)
    return proto, bytes(raw), bytes(payload)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_chunked_body_split_anywhere(cuts: list[int]) -> None:
    async def check() -> None:
        proto, raw, payload = _feed(CHUNKED_HEAD + FRAMED + LAST, cuts)
        assert proto.done.done() and proto.done.exception() is None
        assert payload == b"".join(EVENTS)
        assert raw == FRAMED  # as it came, without the last chunk
        assert proto.reusable()  # complete, kept alive, nothing left over

    asyncio.run(check())


def test_trailers_and_chunk_extensions() -> None:
    async def check() -> None:
        wire = (CHUNKED_HEAD + b"5;ext=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n")
        proto, raw, payload = _feed(wire, [len(CHUNKED_HEAD) + 3])
        # The chunk goes on framed as uvicorn frames it: an extension is the upstream's own.
        assert proto.done.done() and payload == b"hello" and raw == b"5\r\nhello\r\n"

    asyncio.run(check())


def test_content_length_body_and_head_details() -> None:
    async def check() -> None:
        wire = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 400 Bad Request\r\n"
                b"Content-Length: 11\r\nX-Thing: a\r\n\r\n{\"e\": true}")
        proto, raw, payload = _feed(wire, [30, 70])
        head = proto.head.result()
        assert (head.status, head.reason, head.headers["X-Thing"]) == (400, "Bad Request", "a")
        assert head.keep_alive and not head.chunked
        assert proto.done.done() and raw == payload == b"{\"e\": true}"

    asyncio.run(check())


def test_a_connection_lost_mid_body_is_a_failure_and_the_partial_chunk_stays_back() -> None:
    async def check() -> None:
        first = len(b"11\r\n") + len(EVENTS[0]) + 2
        proto, raw, payload = _feed(CHUNKED_HEAD + FRAMED[:first + 7], [len(CHUNKED_HEAD) + 5])
        proto.connection_lost(ConnectionResetError())
        assert isinstance(proto.done.exception(), Exception)
        assert raw == FRAMED[:first] and payload == EVENTS[0]  # whole chunks only

    asyncio.run(check())


def test_a_body_delimited_by_close_ends_with_the_connection() -> None:
    async def check() -> None:
        proto, _, payload = _feed(b"HTTP/1.0 200 OK\r\n\r\nall of it", [])
        assert not proto.done.done()
        proto.connection_lost(None)
        assert proto.done.done() and proto.done.exception() is None and payload == b"all of it"
        assert not proto.head.result().keep_alive

    asyncio.run(check())
