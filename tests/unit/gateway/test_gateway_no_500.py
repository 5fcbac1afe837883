"""Every 500 in the gateway is a bug (issue 42): a non-UTF-8 Authorization header and an
unpaired surrogate in the body get 400s; the capture folder is opened without following a
link and refused when another user owns it; an unredacted capture drops the query string;
replay refuses a capture whose id would name a file outside its folder. Through the real
`sm121 gateway` process, the real runner, and `sm121 bench replay`.

Failed on main: every test here (500s with tracebacks; the link's target was chmodded 0700
and received the capture; the query's key was in meta.json; replay read the planted file)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import running_gateway
from support import SM121, free_port, invoke_cli

from sm121.gateway.config import CaptureSettings

KEY = "no-500-key-7f3a"
CHAT = b'{"model": "fake", "messages": [{"role": "user", "content": "hi"}]}'


def _raw(url: str, request: bytes) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def _post(path: str, body: bytes, *headers: bytes) -> bytes:
    lines = [b"POST " + path.encode() + b" HTTP/1.1", b"Host: 127.0.0.1",
             b"Content-Type: application/json", b"Connection: close",
             b"Content-Length: " + str(len(body)).encode(), *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def test_bad_authorization_bytes_and_lone_surrogates_get_400(
        caplog: pytest.LogCaptureFixture) -> None:
    fake = await FakeUpstream().start()
    try:
        async with running_gateway(fake.url, api_keys=(KEY,)) as gw:
            for path in ("/v1/chat/completions", "/v1/messages", "/tokenize"):
                status, body = await asyncio.to_thread(
                    _raw, gw.url, _post(path, CHAT, b"Authorization: Bearer \xff\xfe"))
                assert status == 400 and b"Authorization" in body, (path, body)
            good = f"Authorization: Bearer {KEY}".encode()
            for hostile in (b'{"model": "fake", "user": "\\ud800", "messages": []}',
                            b'{"model": "fake", "messages": [{"role": "user", '
                            b'"content": "a\\udfffb"}]}',
                            b'{"model": "fake", "messages": [], "\\ud800": 1}'):
                status, body = await asyncio.to_thread(
                    _raw, gw.url, _post("/v1/chat/completions", hostile, good))
                assert status == 400 and b"surrogate" in body, body
            # A paired surrogate escape is an ordinary emoji.
            emoji = b'{"model": "fake", "user": "\\ud83d\\ude00", "messages": []}'
            status, _ = await asyncio.to_thread(
                _raw, gw.url, _post("/v1/chat/completions", emoji, good))
            assert status == 200
    finally:
        await fake.stop()
    assert fake.requests == 1
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text


def _gateway_exit(tmp_path: Path, capture: Path) -> tuple[int | None, str]:
    """`sm121 gateway --capture DIR`: its exit status within 60 s (None: it kept serving,
    stopped here by its process group)."""
    log = tmp_path / "gateway.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([*SM121, "gateway", "--upstream", "http://127.0.0.1:9",
                                    "--listen", f"127.0.0.1:{free_port()}", "--capture",
                                    str(capture)], stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        return process.wait(timeout=60), log.read_text()
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        return None, log.read_text()


def test_a_capture_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    link = tmp_path / "captures"
    link.symlink_to(target)
    status, log = _gateway_exit(tmp_path, link)
    assert status == 2 and "symbolic link" in log, log
    assert stat.S_IMODE(target.stat().st_mode) == 0o755 and not list(target.iterdir())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder another user owns")
def test_a_capture_folder_another_user_owns_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chmod(theirs, 0o777)
    os.chown(theirs, 65534, 65534)
    status, log = _gateway_exit(tmp_path, theirs)
    assert status == 2 and "belongs to another user" in log, log
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o777


async def test_an_unredacted_capture_drops_the_query_string(tmp_path: Path) -> None:
    fake = await FakeUpstream().start()
    folder = tmp_path / "cap"
    try:
        async with running_gateway(fake.url, capture=CaptureSettings(folder)) as gw:
            reply = await gw.http.post(f"{gw.url}/v1/chat/completions?key=sk-query-secret-1",
                                       data=CHAT, headers={"Content-Type": "application/json"})
            assert reply.status == 200
            await reply.read()
    finally:
        await fake.stop()
    for _ in range(50):
        if list(folder.glob("*.meta.json")):
            break
        time.sleep(0.05)
    [meta] = folder.glob("*.meta.json")
    assert json.loads(meta.read_text())["path"] == "/v1/chat/completions"
    assert not any("sk-query-secret-1" in f.read_text(errors="replace")
                   for f in folder.iterdir())


async def test_replay_refuses_a_capture_id_that_leaves_the_folder(tmp_path: Path) -> None:
    """A planted meta.json whose id is ../elsewhere/private: replay would read (and send)
    elsewhere/private.request."""
    private = tmp_path / "elsewhere"
    private.mkdir()
    (private / "private.request").write_text(json.dumps(
        {"model": "fake", "messages": [{"role": "user", "content": "PRIVATE-NOTES-31"}]}))
    folder = tmp_path / "capture"
    folder.mkdir()
    meta = {"id": "../elsewhere/private", "time": 1.0, "arrived": 1.0, "method": "POST",
            "path": "/v1/chat/completions", "status": 200, "session": "h:abc"}
    (folder / "0123456789abcdef.meta.json").write_text(json.dumps(meta))
    fake = await FakeUpstream().start()
    try:
        result = invoke_cli("bench", "replay", str(folder), "--url", fake.url, check=False)
    finally:
        await fake.stop()
    assert result.returncode == 2, result.stdout + result.stderr
    assert "../elsewhere/private" in " ".join(result.stderr.split())
    assert fake.requests == 0
