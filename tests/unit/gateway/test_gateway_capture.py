"""Capture: opt-in, 0600 files in a 0700 directory, no secrets, optional redaction."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from fake_upstream import FakeUpstream
from gateway_harness import running_gateway

from sm121.gateway.config import CaptureSettings


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def _one_streamed_chat(tmp_path: Path, redact: bool) -> Path:
    folder = tmp_path / "captures"
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url, capture=CaptureSettings(folder, redact)) as gw:
            response = await gw.http.post(
                f"{gw.url}/v1/chat/completions", headers={"Authorization": "Bearer sk-secret"},
                json={"model": "fake", "stream": True,
                      "messages": [{"role": "user", "content": "my private code"}]})
            await response.read()
    finally:
        await fake.stop()
    return folder


async def test_capture_writes_raw_bytes_privately(tmp_path: Path) -> None:
    folder = await _one_streamed_chat(tmp_path, redact=False)
    assert _mode(folder) == 0o700
    files = sorted(folder.iterdir())
    assert len(files) == 3 and all(_mode(f) == 0o600 for f in files)
    request = next(f for f in files if f.name.endswith(".request")).read_bytes()
    response = next(f for f in files if f.name.endswith(".response")).read_bytes()
    meta = json.loads(next(f for f in files if f.name.endswith(".meta.json")).read_text())
    assert b"my private code" in request
    assert response.endswith(b"data: [DONE]\n\n") and b"tok0" in response
    assert meta["status"] == 200 and meta["outcome"] == "ok"
    assert "sk-secret" not in json.dumps(meta)


async def test_redaction_removes_content_but_keeps_structure(tmp_path: Path) -> None:
    folder = await _one_streamed_chat(tmp_path, redact=True)
    everything = b"".join(f.read_bytes() for f in folder.iterdir())
    assert b"my private code" not in everything and b"tok0" not in everything
    assert b"[redacted 15 chars]" in everything and b"completion_tokens" in everything


async def test_no_capture_by_default(tmp_path: Path) -> None:
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url) as gw:
            assert gw.gateway.capture is None
    finally:
        await fake.stop()
