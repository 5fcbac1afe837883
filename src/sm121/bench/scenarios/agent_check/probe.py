"""The HTTP side of agent-check: one aiohttp session, and every exchange kept as evidence."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
from pydantic import ValidationError

from sm121.bench.scenarios.agent_check.model import CaseFailed, Exchange
from sm121.engines.adapter import ForcedToolCalls
from sm121.protocols.replies import ReplyPart
from sm121.protocols.sse import SSEParser

Parsed = TypeVar("Parsed", bound=ReplyPart)


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any  # parsed JSON, or the text when the body is not JSON

    @property
    def ok(self) -> bool:
        return self.status == 200 and isinstance(self.body, dict)

    def json(self) -> dict[str, Any]:
        """The reply's JSON object as received ({} for anything else)."""
        return self.body if isinstance(self.body, dict) else {}

    def parsed(self, model: type[Parsed], what: str) -> Parsed:
        """The reply read as the protocol's `model`; a reply that does not fit fails the
        case, naming what did not."""
        try:
            return model.model_validate(self.json())
        except ValidationError as exc:
            raise CaseFailed(f"{what}: the reply is not a {model.__name__}: "
                             f"{str(exc)[:300]}") from exc


@dataclass
class StreamReply:
    status: int
    chunks: list[dict[str, Any]] = field(default_factory=list)  # parsed data events, in order
    done: bool = False  # the stream ended with [DONE]
    error_body: Any = None


@dataclass(frozen=True)
class Facts:
    """What the suite learns about the server once, before the cases run."""

    model: str
    max_model_len: int | None = None
    # The engine its model card names (owned_by), when sm121 has its adapter: how a forced
    # tool call that comes back as text is explained (cases_tools.no_forced_call).
    engine: str | None = None
    forced_calls: ForcedToolCalls | None = None


class Probe:
    """One case's view of the server: requests go out, exchanges are recorded."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, facts: Facts) -> None:
        self.session = session
        self.base_url = base_url
        self.facts = facts
        self.evidence: list[Exchange] = []

    @property
    def model(self) -> str:
        return self.facts.model

    async def get(self, path: str, *, shown: Callable[[Any], Any] | None = None) -> Reply:
        """`shown` picks what of the reply the evidence keeps (e.g. not a server's paths)."""
        async with self.session.get(f"{self.base_url}{path}") as response:
            reply = Reply(response.status, await _body(response))
        kept = shown(reply.body) if shown and reply.ok else reply.body
        self.evidence.append(Exchange.of("GET", path, None, reply.status, kept))
        return reply

    async def post(self, path: str, body: dict[str, Any], *, record: Any = None,
                   shown: Callable[[Any], Any] | None = None) -> Reply:
        """`record` replaces the body in the evidence (e.g. a summary of a huge prompt)."""
        async with self.session.post(f"{self.base_url}{path}", json=body) as response:
            reply = Reply(response.status, await _body(response))
        kept = shown(reply.body) if shown and reply.ok else reply.body
        self.evidence.append(Exchange.of("POST", path, record or body, reply.status, kept))
        return reply

    async def stream(self, path: str, body: dict[str, Any]) -> StreamReply:
        body = {**body, "stream": True}
        async with self.session.post(f"{self.base_url}{path}", json=body) as response:
            result = StreamReply(response.status)
            if response.status != 200:
                result.error_body = await _body(response)
            else:
                await _read_events(response, result)
        shown = result.error_body if result.status != 200 else {
            "chunks": len(result.chunks), "done": result.done,
            "last": result.chunks[-1] if result.chunks else None}
        self.evidence.append(Exchange.of("POST", path, body, result.status, shown))
        return result


# One case: it asks the server through its probe and returns why it passed (or raises).
Case = Callable[[Probe], Awaitable[str]]


async def _read_events(response: aiohttp.ClientResponse, result: StreamReply) -> None:
    parser = SSEParser()
    async for data in response.content.iter_any():
        for event in parser.feed(data):
            if event.is_done:
                result.done = True
            else:
                try:
                    result.chunks.append(json.loads(event.data))
                except json.JSONDecodeError:
                    result.chunks.append({"unparsed": event.data})
    for event in parser.flush():
        result.done = result.done or event.is_done


async def _body(response: aiohttp.ClientResponse) -> Any:
    text = await response.text(errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
