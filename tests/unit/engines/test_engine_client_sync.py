"""The engine client's sync twin on real HTTP bytes: a stdlib server on loopback answers as
a server in front of an engine may (no /health route, a refused key, a 500), and the twin
keeps the async client's rules and its one error, EngineError with the status."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sm121.engines.client_sync import SyncEngineClient
from sm121.engines.engine_error import EngineError
from sm121.errors import Sm121Error
from sm121.launch.readiness import NotReady, api_answers, health_ok

METRICS = ('# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{engine="0"} 7.0\n'
           'vllm:cache_config_info{block_size="16"} 1.0\n')
ROUTES: dict[str, tuple[int, bytes]] = {
    "/v1/models": (200, json.dumps({"data": [{"id": "m", "max_model_len": 64}]}).encode()),
    "/metrics": (200, METRICS.encode()),
    "/tokenize": (500, b"engine dead"),
}


class Handler(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        if self.headers.get("Authorization") == "Bearer wrong":
            status, body = 401, b"{}"
        else:
            status, body = ROUTES.get(self.path, (404, b"not found"))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_models_metrics_and_health_fall_back_like_the_async_client(url: str) -> None:
    client = SyncEngineClient(url)
    assert client.models()["data"][0]["max_model_len"] == 64
    assert "vllm:prompt_tokens_total" in client.metrics_text()
    assert client.healthy()  # no /health route (404): /v1/models answers instead
    assert health_ok(url) and api_answers(url)


def test_a_refused_key_is_an_engine_error_with_its_status(url: str) -> None:
    with pytest.raises(EngineError) as caught:
        SyncEngineClient(url, {"Authorization": "Bearer wrong"}).models()
    assert caught.value.status == 401 and "requires an API key" in caught.value.message
    assert isinstance(caught.value, Sm121Error)
    with pytest.raises(NotReady, match="401 Unauthorized"):
        api_answers(url, api_key="wrong")


def test_an_error_answer_names_status_and_body(url: str) -> None:
    with pytest.raises(EngineError) as caught:
        SyncEngineClient(url).tokenize({"prompt": "hi"})
    assert caught.value.status == 500 and "engine dead" in caught.value.message


def test_no_answer_is_an_engine_error_without_status() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(EngineError) as caught:
        SyncEngineClient(url, timeout_s=2).metrics_text()
    assert caught.value.status is None and caught.value.message.startswith(f"{url}/metrics: ")
    assert not SyncEngineClient(url).healthy(2) and not health_ok(url, 2)
    assert not api_answers(url)
