"""The soak reads the engine's KV usage by the one metric table, older names included: an
engine that exports only vLLM's older gpu_cache_usage_perc (as the monitor already read it)
still shows its KV usage. Served over real HTTP on loopback, as the soak scrapes it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sm121.bench.scenarios.soak.engine_state import engine_state

OLD_NAMES = ("# TYPE vllm:gpu_cache_usage_perc gauge\n"
             'vllm:gpu_cache_usage_perc{model_name="m"} 0.25\n'
             "process_start_time_seconds 1700000000.0\n"
             "process_resident_memory_bytes 1073741824\n")


@pytest.fixture
def old_engine() -> Iterator[str]:
    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = OLD_NAMES.encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_the_soak_reads_kv_usage_by_the_older_vllm_name(old_engine: str) -> None:
    state = engine_state(old_engine, None)
    assert state.engine_up is True
    assert state.kv_usage_pct == 25.0
    assert state.engine_started == 1700000000.0
    assert state.engine_rss_gib == 1.0
