"""The response-head limit counts the head, not the body that arrives in the same read.

An engine writes a small head and a large body at once (a /tokenize of 85,000 tokens is about
600 KB of JSON); one read of the upstream socket then holds the head and up to 256 KB of body.
The limit counted the whole read as head, failed a well-formed response with "the upstream's
response head is too large" (a 503 to the client), and ejected a healthy replica: seen on
agent-check's overflow case through the gateway."""

from __future__ import annotations

import asyncio

import pytest

from sm121.gateway.relay import RelayProtocol, UpstreamClosed


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.sent = b""
        self.closing = False

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.sent += bytes(data)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True


def _connected() -> RelayProtocol:
    proto = RelayProtocol()
    proto.connection_made(_Transport())
    proto.send("POST", "/tokenize", "engine", [("Content-Type", "application/json")], b"{}")
    return proto


async def test_a_small_head_with_a_large_body_in_one_read_is_a_response() -> None:
    body = b'{"tokens": [' + b"1, " * 200_000 + b'1]}'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    proto = _connected()
    received: list[bytes] = []
    proto.data_received(head % len(body) + body[:256 * 1024])  # one read: head and 256 KB
    answered = await asyncio.wait_for(proto.head, 1)
    assert answered.status == 200 and answered.length == len(body)
    proto.attach(lambda raw, payload: received.append(payload))
    proto.data_received(body[256 * 1024:])
    await asyncio.wait_for(proto.done, 1)
    assert b"".join(received) == body


async def test_a_head_that_is_itself_too_large_is_still_refused() -> None:
    proto = _connected()
    proto.data_received(b"HTTP/1.1 200 OK\r\nX-Junk: " + b"a" * (70 * 1024))
    with pytest.raises(UpstreamClosed, match="head is too large"):
        await asyncio.wait_for(proto.head, 1)
