"""What `bench replay` needs from a capture (session id, arrival, first byte, finish, token
counts) and the queue-wait header `bench agents` records, through the real gateway app in
front of the fake upstream (its usage chunk gives the token counts)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_upstream import FakeUpstream
from gateway_harness import running_gateway

from sm121.gateway.config import CaptureSettings
from sm121.gateway.handlers import QUEUE_WAIT_HEADER


async def test_the_capture_records_session_times_and_tokens(tmp_path: Path) -> None:
    folder = tmp_path / "captures"
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url, capture=CaptureSettings(folder, True)) as gw:
            response = await gw.http.post(
                f"{gw.url}/v1/chat/completions", headers={"x-session-id": "agent-7"},
                json={"model": "fake", "stream": True, "stream_options": {
                    "include_usage": True},
                      "messages": [{"role": "user", "content": "private"}]})
            await response.read()
            wait = response.headers[QUEUE_WAIT_HEADER]
    finally:
        await fake.stop()
    assert float(wait) >= 0
    meta = json.loads(next(folder.glob("*.meta.json")).read_text())
    # Redacted: the client-chosen id is a digest that keeps its kind, never the raw id.
    assert meta["session"].startswith("h:") and "agent-7" not in meta["session"]
    assert meta["redacted"]
    assert meta["arrived"] <= meta["first_byte"] <= meta["finished"]
    assert isinstance(meta["completion_tokens"], int) and meta["queue_wait_s"] >= 0
    assert b"private" not in b"".join(f.read_bytes() for f in folder.iterdir())
