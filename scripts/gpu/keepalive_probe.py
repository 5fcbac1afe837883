"""Does the engine close a kept-alive connection after its answer? Stdlib only (runs on the
GPU host). For each request: the status, the Connection header, and whether the server had
closed the socket a moment after the answer (a read then gives EOF) or kept it open.

The H200's long-input case failed with ServerDisconnectedError on the first request after the
overflow case's 400 to a 350 KB body: if the engine closes after such an answer without
saying so, a client that reuses the connection fails, and the engine is not at fault.

    python3 scripts/gpu/keepalive_probe.py http://127.0.0.1:8000 MODEL MAX_MODEL_LEN
"""

from __future__ import annotations

import http.client
import json
import select
import sys
import time
from urllib.parse import urlsplit


def _closed_after(conn: http.client.HTTPConnection, wait_s: float = 1.0) -> bool:
    sock = conn.sock
    if sock is None:
        return True
    readable, _, _ = select.select([sock], [], [], wait_s)
    if not readable:
        return False
    return sock.recv(1, 0) == b""  # EOF: the server closed it


def probe(url: str, label: str, path: str, body: dict) -> dict:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
    raw = json.dumps(body).encode()
    started = time.monotonic()
    conn.request("POST", path, body=raw, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    result = {"case": label, "body_bytes": len(raw), "status": response.status,
              "connection_header": response.getheader("connection"),
              "seconds": round(time.monotonic() - started, 3),
              "closed_by_server_after": _closed_after(conn)}
    conn.close()
    return result


def main(url: str, model: str, max_model_len: int) -> None:
    small = {"model": model, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
    big_text = "lorem ipsum dolor " * (max_model_len * 4 // 18)  # 4 chars a token: far over
    cases = [
        ("small 200", "/v1/chat/completions", small),
        ("small 400 (bad max_tokens)", "/v1/chat/completions", {**small, "max_tokens": -1}),
        ("big 400 (overflow)", "/v1/chat/completions",
         {**small, "messages": [{"role": "user", "content": big_text}]}),
        ("big 200 (/tokenize)", "/tokenize",
         {"model": model, "messages": [{"role": "user", "content": big_text[:len(big_text) // 4]}]}),
    ]
    for label, path, body in cases:
        print(json.dumps(probe(url, label, path, body)), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
