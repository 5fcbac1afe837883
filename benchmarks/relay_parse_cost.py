"""What the relay's response parsing costs per request and per streamed chunk, in this process,
without sockets' or a busy machine's noise: this checkout's gateway/relay.py against another
checkout's (--baseline-src), the minimum of several repeats each.

    .venv/bin/python benchmarks/relay_parse_cost.py --baseline-src ../main

Per request: a chunked SSE head as aiohttp writes it, one event, the end, the check that the
connection may be reused. Per chunk: 50 events a request, 1 or 5 events a read.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import socket
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        b"Date: Tue, 01 Dec 2026 21:00:00 GMT\r\nServer: Python/3.11 aiohttp/3.14.5\r\n\r\n")
EVENT = (b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,'
         b'"delta":{"content":" tok"}}]}\n\n')
CHUNK = b"%x\r\n%b\r\n" % (len(EVENT), EVENT)
LAST = b"0\r\n\r\n"


class _Transport(asyncio.Transport):
    """Writes go nowhere; the socket is a real one, for the pool's look at an idle one."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def write(self, data: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._sock if name == "socket" else default


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def per_request(relay: ModuleType, sock: socket.socket, n: int) -> float:
    proto = relay.RelayProtocol()
    proto.connection_made(_Transport(sock))
    started = time.perf_counter()
    for _ in range(n):
        if hasattr(proto, "quiet"):
            proto.quiet()
        proto.send("POST", "/v1/chat/completions", "h", [("Content-Type", "application/json")],
                   b"{}")
        proto.data_received(HEAD)
        proto.attach(lambda raw, payload: None)
        proto.data_received(CHUNK)
        proto.data_received(LAST)
        assert proto.reusable()
        proto.recycle()
    return 1e6 * (time.perf_counter() - started) / n


def per_chunk(relay: ModuleType, sock: socket.socket, n: int, per_read: int) -> float:
    proto = relay.RelayProtocol()
    proto.connection_made(_Transport(sock))
    reads = 0
    started = time.perf_counter()
    for _ in range(n):
        proto.send("POST", "/v1/chat/completions", "h", [], b"{}")
        proto.data_received(HEAD)
        proto.attach(lambda raw, payload: None)
        for _ in range(50 // per_read):
            proto.data_received(CHUNK * per_read)
            reads += 1
        proto.data_received(LAST)
        assert proto.reusable()
        proto.recycle()
    return 1e6 * (time.perf_counter() - started) / (reads * per_read)


async def measure(relays: dict[str, ModuleType], repeats: int) -> dict[str, dict[str, float]]:
    sock, _peer = socket.socketpair()
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in relays}
    for _ in range(repeats):
        for name, relay in relays.items():  # interleaved, so drift hits both alike
            f = figures[name]
            f.setdefault("us_per_request", []).append(per_request(relay, sock, 2000))
            for per_read in (1, 5):
                f.setdefault(f"us_per_chunk_{per_read}_per_read", []).append(
                    per_chunk(relay, sock, 200, per_read))
    return {name: {k: round(min(v), 3) for k, v in f.items()} for name, f in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, help="another checkout, for before/after")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    relays = {"this": load(here / "src/sm121/gateway/relay.py", "relay_this")}
    if args.baseline_src:
        relays["baseline"] = load(args.baseline_src / "src/sm121/gateway/relay.py",
                                  "relay_baseline")
    for name, row in asyncio.run(measure(relays, args.repeats)).items():
        print(f"{name:<9} " + "  ".join(f"{k} {v:.2f}" for k, v in row.items()))


if __name__ == "__main__":
    main()
