"""The agent readiness check: a chat request carrying tools, refused with 400, fails the
serve naming the fix. Served by a stdlib HTTP server on loopback that answers like vLLM does
without tool calling (a stand-in for the one reply under test; the real engine is in
tests/integration/test_agent_readiness.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sm121.launch.readiness import NotReady, check_tool_request
from sm121.plan.model import ReadinessProbe

VLLM_400 = {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice and '
                                 "--tool-call-parser to be set", "code": 400}}


class Handler(BaseHTTPRequestHandler):
    status = 400
    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        Handler.seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        payload = json.dumps(VLLM_400 if self.status == 400 else {"choices": []}).encode()
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ReadinessProbe]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield ReadinessProbe(url=f"http://127.0.0.1:{httpd.server_address[1]}", model="m",
                         prompt="hi", max_tokens=1, timeout_s=5, tools=True)
    httpd.shutdown()


def test_a_400_to_a_tool_request_names_the_fix(server: ReadinessProbe) -> None:
    Handler.status = 400
    with pytest.raises(NotReady) as caught:
        check_tool_request(server)
    text = str(caught.value)
    assert "refuses tool calls" in text and "enable-auto-tool-choice" in text
    assert "add tool-call-parser" in text
    sent = Handler.seen[-1]
    assert sent["tools"] and sent["tool_choice"] == "auto"


def test_an_accepted_tool_request_passes(server: ReadinessProbe) -> None:
    Handler.status = 200
    check_tool_request(server)
