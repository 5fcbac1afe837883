"""Hostile request bodies for fuzzing the gateway, as hypothesis strategies, and a sender
that turns each into an outcome label ("200", "400", "gateway_500", "client:...").

Classes (the `kind` of a case): random JSON, OpenAI bodies with wrong types, valid bodies,
deep nesting, huge strings, invalid UTF-8, raw binary, truncated JSON, bodies sent chunked,
huge or many headers. Used by tests/unit/gateway/test_gateway_fuzz.py (fake upstream, many
bodies) and tests/integration/test_gateway_fuzz_engine.py (the real engine, fewer).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from hypothesis import strategies as st

REQUEST_ID_HEADER = "X-Sm121-Request-Id"  # on every answer that went through the proxy path
ROUTES = ("/v1/chat/completions", "/v1/completions", "/tokenize", "/v1/responses",
          "/v1/chat/completions", "/v1/chat/completions", "/nope")
VALID_ROUTES = ROUTES[:3]
_PARAMS = ("model", "messages", "prompt", "input", "stream", "max_tokens", "stop", "tools",
           "user", "stream_options", "n", "temperature", "repetition_penalty", "guided_grammar",
           "logprobs", "suffix")
KINDS = ("random_json", "wrong_types", "valid", "deep", "huge_string", "invalid_utf8",
         "binary", "truncated", "chunked", "huge_headers")
_NEED_VALID = frozenset({"valid", "invalid_utf8", "truncated", "chunked", "huge_headers"})


@dataclass(frozen=True)
class Case:
    kind: str
    path: str
    data: bytes
    headers: dict[str, str] = field(default_factory=dict)
    chunks: int = 0  # > 0: sent with chunked transfer encoding in this many pieces


_short_text = st.text(max_size=12)
json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | _short_text
json_any = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(_short_text, inner, max_size=3), max_leaves=6)
_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant"]),
                                  "content": st.text(max_size=24)})


def _valid_body(max_tokens: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "model": st.just("MODEL"),
        "messages": st.lists(_message, min_size=1, max_size=2),
        "prompt": st.text(min_size=1, max_size=24),  # vLLM refuses an empty prompt
        "stream": st.booleans(),
        "max_tokens": st.integers(1, max_tokens),
    })


def _encode(body: Any) -> bytes:
    return json.dumps(body).encode()


def _tame(body: Any, max_tokens: int) -> Any:
    """Keep an engine's work per request small: a real engine given a valid body with no
    max_tokens would generate up to its whole context."""
    if isinstance(body, dict):
        tokens = body.get("max_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens > max_tokens:
            body["max_tokens"] = max_tokens
        if isinstance(body.get("n"), int) and not isinstance(body["n"], bool):
            body["n"] = min(body["n"], 2)
    return body


@st.composite
def cases(draw: st.DrawFn, max_tokens: int = 4, max_huge: int = 64 * 1024,
          huge_sizes: st.SearchStrategy[int] | None = None) -> Case:
    """`huge_sizes`: the huge strings' lengths in characters (default 1,000 to max_huge)."""
    kind = draw(st.sampled_from(KINDS))
    path = draw(st.sampled_from(ROUTES))
    valid = _encode(draw(_valid_body(max_tokens))) if kind in _NEED_VALID else b""
    headers = {"Content-Type": "application/json"}
    if kind == "random_json":
        return Case(kind, path, _encode(_tame(draw(json_any), max_tokens)), headers)
    if kind == "wrong_types":
        body = draw(st.dictionaries(st.sampled_from(_PARAMS), json_any, max_size=6))
        return Case(kind, path, _encode(_tame(body, max_tokens)), headers)
    if kind == "valid":
        return Case(kind, draw(st.sampled_from(VALID_ROUTES)), valid, headers)
    if kind == "deep":
        depth = draw(st.integers(1, 5000))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        inner = opener * depth + "1" + closer * depth
        return Case(kind, path, f'{{"model": "MODEL", "messages": {inner}}}'.encode(), headers)
    if kind == "huge_string":
        size = draw(huge_sizes if huge_sizes is not None else st.integers(1_000, max_huge))
        char = draw(st.sampled_from("x\u00e9\u4e2d\\\""))
        body = {"model": "MODEL", "max_tokens": 1,
                "messages": [{"role": "user", "content": char * size}]}
        return Case(kind, path, _encode(body), headers)
    if kind == "invalid_utf8":
        junk = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80",
                                     b"\x80", b"\xe2\x82"]))
        cut = valid.index(b'"content": "') + len(b'"content": "')
        return Case(kind, path, valid[:cut] + junk + valid[cut:], headers)
    if kind == "binary":
        return Case(kind, path, draw(st.binary(max_size=256)), headers)
    if kind == "truncated":
        return Case(kind, path, valid[:draw(st.integers(0, len(valid) - 1))], headers)
    if kind == "chunked":
        return Case(kind, draw(st.sampled_from(VALID_ROUTES)), valid, headers,
                    chunks=draw(st.integers(1, 8)))
    return Case(kind, path, valid, {**headers, **draw(_huge_headers())})


@st.composite
def _huge_headers(draw: st.DrawFn) -> dict[str, str]:
    """One header over aiohttp's 8 KiB line limit, or up to 200 headers (its limit is 128)."""
    value = draw(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=64))
    if draw(st.booleans()):
        return {"X-Fuzz": value + "v" * draw(st.integers(100, 40_000))}
    return {f"X-Fuzz-{i}": value for i in range(draw(st.integers(1, 200)))}


async def _pieces(data: bytes, count: int) -> AsyncIterator[bytes]:
    step = max(1, len(data) // count)
    for start in range(0, len(data), step):
        yield data[start:start + step]


async def send(http: aiohttp.ClientSession, base_url: str, case: Case, model: str,
               timeout_s: float = 30.0) -> str:
    """One case through the gateway; its outcome as a label. "gateway_500" is a 5xx the
    gateway made itself (no request id: an unhandled exception), as opposed to one it
    passed on from the upstream."""
    data: Any = case.data.replace(b"MODEL", model.encode())
    if case.chunks:
        data = _pieces(data, case.chunks)
    try:
        async with http.post(base_url + case.path, data=data, headers=case.headers,
                             timeout=aiohttp.ClientTimeout(total=timeout_s)) as response:
            await response.read()
            if response.status >= 500 and REQUEST_ID_HEADER not in response.headers:
                return "gateway_500"
            return str(response.status)
    except TimeoutError:
        return "timeout"
    except aiohttp.ClientError as exc:
        return f"client:{type(exc).__name__}"


async def send_all(http: aiohttp.ClientSession, base_url: str, batch: list[Case], model: str,
                   timeout_s: float = 30.0) -> list[str]:
    """A batch of cases at once: concurrency is part of the fuzz."""
    return await asyncio.gather(*(send(http, base_url, c, model, timeout_s) for c in batch))


@dataclass
class Tally:
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, kind: str, outcome: str) -> None:
        self.outcomes[(kind, outcome)] += 1

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())

    def by_kind(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = {}
        for (kind, outcome), count in sorted(self.outcomes.items()):
            table.setdefault(kind, {})[outcome] = count
        return table

    def failures(self) -> dict[tuple[str, str], int]:
        return {k: v for k, v in self.outcomes.items() if k[1] in ("gateway_500", "timeout")}


def rss_bytes(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int | str = "self") -> float:
    """User plus system CPU time of a process so far (what a test costs on an idle machine)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid: int | str = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))
