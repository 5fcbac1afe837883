"""The one streaming client of sm121 bench (the sending and timing; what the protocols' bodies
and events look like is protocols/). It asks for token ids and usage, timestamps every
chunk on a monotonic clock, counts ids (never chunks) and cross-checks them against usage.
Every prompt is salted (and sent with `cache_salt` where the server takes it), so a
measurement never silently hits the prefix cache. `stream=False` is the fallback for servers
without token ids: counts from usage, one timestamp per request. Two APIs: `completions` (a
prompt) and `chat` (messages, optional tools); both stream token ids and usage the same way."""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from sm121.engines.api_key import api_key as engine_api_key
from sm121.engines.api_key import bearer
from sm121.engines.client import EngineClient, raise_for_status
from sm121.errors import Sm121Error
from sm121.protocols.routes import Api, route_of
from sm121.protocols.sse import SSEParser
from sm121.protocols.stream_readers import take_chat_event, take_chat_reply
from sm121.protocols.token_ids import check_usage

APIS = tuple(api.value for api in Api)  # messages and responses: bench agents only
PROMPT_APIS = (Api.COMPLETIONS.value, Api.CHAT.value)  # what complete() and chat() send over


@dataclass
class StreamRecord:
    """One request as the client saw it; times are time.monotonic() seconds."""

    label: str
    submitted: float
    prompt_chars: int = 0
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    finished: float | None = None
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # chat: assembled deltas
    headers: dict[str, str] = field(default_factory=dict)  # response headers (gateway's)

    @property
    def tokens(self) -> int:
        return sum(self.chunk_tokens)

    @property
    def first_token(self) -> float | None:
        return next((t for t, n in zip(self.chunk_times, self.chunk_tokens, strict=True)
                     if n > 0), None)

    @property
    def ttft(self) -> float | None:
        first = self.first_token
        return None if first is None else first - self.submitted

    @property
    def prompt_tokens(self) -> int | None:
        return None if self.usage is None else self.usage.get("prompt_tokens")

    @property
    def cached_tokens(self) -> int | None:
        details = (self.usage or {}).get("prompt_tokens_details") or {}
        return details.get("cached_tokens")

    def to_json(self, t0: float) -> dict[str, Any]:
        """Times relative to the scenario's t0, so a results file needs no clock of its own."""
        return {
            "label": self.label,
            "submitted": round(self.submitted - t0, 6),
            "first_token": None if self.first_token is None else round(self.first_token - t0, 6),
            "finished": None if self.finished is None else round(self.finished - t0, 6),
            "chunk_times": [round(t - t0, 6) for t in self.chunk_times],
            "chunk_tokens": list(self.chunk_tokens),
            "completion_tokens": self.tokens,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "finish_reason": self.finish_reason,
        }


class BenchClient:
    """OpenAI-compatible completions over one aiohttp session (use as `async with`)."""

    def __init__(self, base_url: str, model: str, *, stream: bool = True,
                 cache_salt: bool = False, api_key: str | None = None,
                 api: str = "completions") -> None:
        if api not in APIS:
            raise Sm121Error(f"unknown API {api!r}", f"one of: {', '.join(APIS)}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.stream = stream
        self.api = api
        self.cache_salt = cache_salt
        # Count a stream's tokens by the server's own running count per chunk
        # (`timings_per_token`: llama-server, which returns no token ids): the probe turns it
        # on once the plain stream proved uncountable.
        self.counts_from_timings = False
        self.run_salt = secrets.token_hex(4)
        self._counter = itertools.count()
        # Also for probe and model resolution, which pass no key: the endpoint's key from the
        # environment, so a keyed engine is a clear 401 error, not an unexplained one.
        self._headers = bearer(api_key or engine_api_key(engine_first=False))
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> BenchClient:
        # Generous: a starved API server (tokenising a long prompt on a loaded host) can take
        # tens of seconds to accept a connection; that is a slow server, not a dead one.
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=600, sock_read=1800)
        # A fresh connection per request: reusing a pooled one races the server's keep-alive
        # timeout ("Server disconnected") after the idle pauses a scenario has.
        connector = aiohttp.TCPConnector(force_close=True, limit=0)
        self._session = aiohttp.ClientSession(timeout=timeout, headers=self._headers,
                                              connector=connector)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("BenchClient used outside `async with`")
        return self._session

    def new_salt(self) -> str:
        return f"{self.run_salt}-{next(self._counter)}"

    def cache_salt_field(self, tag: str) -> dict[str, str]:
        """For prompts that carry their own salt tag (exact-length prompts, locality)."""
        return {"cache_salt": tag} if self.cache_salt else {}

    async def complete(self, prompt: str | list[int], max_tokens: int, label: str, *,
                       salt: bool = True, ignore_eos: bool = True,
                       extra: dict[str, str] | None = None,
                       into: StreamRecord | None = None,
                       headers: dict[str, str] | None = None) -> StreamRecord:
        """One completion. With salt, a unique tag opens the prompt (and goes in cache_salt
        when the server takes it): the request cannot reuse another's prefix cache. `into`
        is filled as chunks arrive, so a scenario can watch a stream that is still running."""
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens,
                                "temperature": 0, "ignore_eos": ignore_eos, **(extra or {})}
        if salt:
            tag = self.new_salt()
            if isinstance(prompt, str):
                prompt = f"[{tag}] {prompt}"
            body.update(self.cache_salt_field(tag))
        # A Messages or Responses run (bench agents) sends its helper requests (the probe,
        # prompts of exact length) over chat: the same engine, with token ids to count.
        api = self.api if self.api in PROMPT_APIS else "chat"
        if api == "chat":
            if not isinstance(prompt, str):
                raise Sm121Error(f"{label}: a prompt of token ids cannot be sent over chat",
                                 "run this scenario with --api completions")
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        record = into if into is not None else StreamRecord(label=label, submitted=0.0)
        record.prompt_chars = len(prompt) if isinstance(prompt, str) else 0
        return await self._send(api, body, record, label, headers)

    async def chat(self, messages: list[dict[str, Any]], max_tokens: int, label: str, *,
                   tools: list[dict[str, Any]] | None = None, ignore_eos: bool = True,
                   extra: dict[str, str] | None = None, headers: dict[str, str] | None = None,
                   into: StreamRecord | None = None) -> StreamRecord:
        """One chat completion of these messages as they are (no salt added: an agent's
        conversation carries its own, once per session, so its prefix cache works)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "max_tokens": max_tokens, "temperature": 0,
                                "ignore_eos": ignore_eos, **(extra or {})}
        if tools:
            body["tools"] = tools
        record = into if into is not None else StreamRecord(label=label, submitted=0.0)
        record.prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
        return await self._send("chat", body, record, label, headers)

    async def _send(self, api: str, body: dict[str, Any], record: StreamRecord, label: str,
                    headers: dict[str, str] | None = None) -> StreamRecord:
        """Streamed: token ids and usage asked for, every chunk timed. Whole (no stream): one
        timestamp, the tokens counted from the reply's ids or else from usage."""
        record.label, record.submitted = label, time.monotonic()
        path = route_of(api)
        if self.stream:
            body.update(stream=True, return_token_ids=True,
                        stream_options={"include_usage": True})
            if self.counts_from_timings:
                # The cumulative count per chunk (exact), and logprobs entries as well.
                body.update(timings_per_token=True)
            await self.stream_events(path, body, record, headers,
                                     lambda data, now: take_chat_event(data, now, record))
            check_usage(record.tokens, record.usage, record.label)
            return record
        body["stream"] = False
        async with self.session.post(f"{self.base_url}{path}", json=body,
                                     headers=headers) as response:
            await raise_for_status(response, record.label)
            record.headers = dict(response.headers)
            payload = await response.json()
        record.finished = time.monotonic()
        counted = take_chat_reply(payload, record)
        tokens = check_usage(counted, record.usage, record.label) if counted is not None \
            else int((record.usage or {}).get("completion_tokens") or 0)
        record.chunk_times, record.chunk_tokens = [record.finished], [tokens]
        return record

    async def stream_events(self, path: str, body: dict[str, Any], record: StreamRecord,
                            headers: dict[str, str] | None,
                            take: Callable[[str, float], None]) -> None:
        """POST `body` and hand each server-sent event's data, with the time its bytes
        arrived, to `take`; the response headers and the finish time go on `record`. Every
        protocol's stream is read here (chat and completions, Messages, Responses)."""
        parser = SSEParser()
        async with self.session.post(f"{self.base_url}{path}", json=body,
                                     headers=headers) as response:
            await raise_for_status(response, record.label)
            record.headers = dict(response.headers)
            async for data in response.content.iter_any():
                now = time.monotonic()
                # Line by line: the parser rescans its buffer per line, so one large burst
                # fed whole costs quadratic time and stalls the loop (and every timestamp).
                for line in data.splitlines(keepends=True):
                    for event in parser.feed(line):
                        take(event.data, now)
                await asyncio.sleep(0)  # let timers and other streams run between reads
            for event in parser.flush():
                take(event.data, time.monotonic())
        record.finished = time.monotonic()

    @property
    def engine(self) -> EngineClient:
        """The engine client over this session: /v1/models, /tokenize, /metrics."""
        return EngineClient(self.session, self.base_url)

    async def get_json(self, path: str) -> Any:
        async with self.session.get(f"{self.base_url}{path}") as response:
            await raise_for_status(response, path)
            return await response.json()

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        async with self.session.post(f"{self.base_url}{path}", json=body) as response:
            await raise_for_status(response, path)
            return await response.json()

    async def get_text(self, path: str) -> str | None:
        """A page that may not exist (e.g. /metrics behind a proxy): None when absent."""
        async with self.session.get(f"{self.base_url}{path}") as response:
            return await response.text() if response.status == 200 else None

