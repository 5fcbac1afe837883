"""Session admission as the request path sees it: a session's working set counted from its
request (and corrected by the usage its turns report), the gate asked before a replica is
picked, the protocol's overload answer when a session waited too long, long-lane jobs counted
against the reserve, and the /sm121/sessions report.

Counting a prompt: a new session's first request is counted exactly by the upstream's own
/tokenize (one call per new session, which is about to be admitted or queued anyway); its
tokens per byte are kept, so its later turns are counted from their body's bytes at no cost,
and each turn's reported usage (prompt and completion tokens) corrects both. A prompt that
cannot be tokenized is counted by its bytes, which overstates it (a token covers at least a
byte): such a session is admitted conservatively until its first usage report.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry

from sm121.gateway.replicas import Replica
from sm121.gateway.replies import Refused
from sm121.gateway.routing import AFFINITY, Route
from sm121.gateway.session_gate import SessionGate, SessionRefused
from sm121.gateway.session_table import SessionSettings
from sm121.locality.tokenize import TokenizeError, tokenize
from sm121.memory.working_set import WorkingSet
from sm121.protocols.routes import Protocol, overload_answer

log = logging.getLogger("sm121.gateway")
SESSION_WAIT_HEADER = "X-Sm121-Session-Wait"  # seconds the session waited for admission
SIZES_KEPT = 4096  # sessions whose sizes are remembered (bounded: ids come from clients)


@dataclass
class _Size:
    tokens_per_byte: float = 1.0  # 1.0: not yet measured (bytes overstate tokens)
    last_prompt: int = 0
    growth: int = 0  # the last turn-to-turn growth of its prompt


@dataclass(frozen=True)
class Admitted:
    """What a request's admission decided: the replica it must go to (None: route as
    usual), and whether it was a turn of a session (to be ended)."""

    home: Replica | None
    turn: bool
    waited_s: float = 0.0  # how long its session waited to be admitted (a new one only)

    def headers(self) -> dict[str, str]:
        """X-Sm121-Session-Wait on a session's turns: 0 for a turn of an active session."""
        return {SESSION_WAIT_HEADER: f"{self.waited_s:.6f}"} if self.turn else {}


PASS = Admitted(None, False)


class SessionAdmission:
    def __init__(self, settings: SessionSettings, registry: CollectorRegistry,
                 http: Callable[[], aiohttp.ClientSession],
                 auth: Callable[[], Mapping[str, str]]) -> None:
        self.gate = SessionGate(settings, registry)
        self._http, self._auth = http, auth
        self._sizes: OrderedDict[str, _Size] = OrderedDict()

    async def admit(self, session: str, protocol: Protocol, body: dict[str, Any],
                    nbytes: int, view: Callable[[], dict[str, Any] | None],
                    pool: Sequence[Replica]) -> Admitted:
        """Before a replica is picked: a turn of an active session passes at once; a new
        session is admitted (or waits); a long job, or admission off, routes as usual."""
        gate = self.gate
        if gate.settings.mode == "off":
            return PASS
        home = gate.active_home(session, pool)
        size = self._size(session)
        output = protocol.requested_output(body) or 0
        on = gate.on_for(pool)
        if home is not None:
            gate.resize(session, self._working_set(size, round(nbytes * size.tokens_per_byte),
                                                   output))
            return Admitted(home if on else None, True)
        if not on:
            # auto, before every replica reported its pool: every session passes and routes
            # as usual, but is counted, so that the sessions already at work stay active
            # once admission is on.
            ws = self._working_set(size, round(nbytes * size.tokens_per_byte), output)
            gate.adopt(session, ws, pool)
            return Admitted(None, True)
        tokens = await self._count(size, nbytes, view, pool)
        if tokens >= min(r.spec.long_prompt_tokens for r in pool):
            return PASS  # a long job: the reserve holds it while it runs (long_job)
        try:
            home, waited = await gate.enter(session, self._working_set(size, tokens, output),
                                            pool)
        except SessionRefused as exc:
            raise overload_refusal(protocol, exc) from None
        return Admitted(home, True, waited)

    def finish(self, session: str, admitted: Admitted, nbytes: int,
               prompt_tokens: int | None, completion_tokens: int | None) -> None:
        """The end of a turn, with the usage the upstream reported (None: not reported)."""
        if not admitted.turn:
            return
        ws = None
        if prompt_tokens:
            size = self._size(session)
            if nbytes:
                size.tokens_per_byte = min(1.0, prompt_tokens / nbytes)
            ws = self._working_set(size, prompt_tokens, completion_tokens or 0, exact=True)
        self.gate.turn_done(session, ws)

    def long_job(self, replica: Replica, tokens: int) -> Callable[[], None]:
        return self.gate.long_job(replica, tokens)

    def _size(self, session: str) -> _Size:
        size = self._sizes.get(session)
        if size is None:
            size = self._sizes[session] = _Size()
            while len(self._sizes) > SIZES_KEPT:
                self._sizes.popitem(last=False)
        self._sizes.move_to_end(session)
        return size

    def _working_set(self, size: _Size, prompt: int, output: int, exact: bool = False
                     ) -> WorkingSet:
        """Its last prompt plus the growth expected by its next turn: the larger of the last
        turn-to-turn growth and the reply it asks for (or got)."""
        if exact and size.last_prompt and prompt > size.last_prompt:
            size.growth = prompt - size.last_prompt
        if exact:
            size.last_prompt = prompt
        return WorkingSet(prompt, max(size.growth, output))

    async def _count(self, size: _Size, nbytes: int, view: Callable[[], dict[str, Any] | None],
                     pool: Sequence[Replica]) -> int:
        """A new session's prompt in tokens: by /tokenize on a healthy replica, else by its
        bytes and what an earlier turn of it showed."""
        replica = next((r for r in pool if r.healthy), None)
        chat = view() if replica is not None else None
        if chat is not None and replica is not None:
            try:
                counted = await tokenize(self._http(), replica.url, chat, self._auth())
            except TokenizeError as exc:
                log.info("could not count a new session's prompt: %s", exc)
            else:
                if nbytes:
                    size.tokens_per_byte = min(1.0, counted.count / nbytes)
                return counted.count
        return round(nbytes * size.tokens_per_byte)

    def report(self, replicas: Sequence[Replica]) -> dict[str, Any]:
        return self.gate.report(replicas)


def home_route(admitted: Admitted, tried: Sequence[Replica]) -> Route | None:
    """An admitted session's request goes to its session's replica (never split), unless
    that one already failed this request at the door."""
    home = admitted.home
    return Route(home, AFFINITY) if home is not None and home not in tried else None


def overload_refusal(protocol: Protocol, refused: SessionRefused) -> Refused:
    """The protocol's own overload answer (OpenAI routes: 429; Anthropic Messages: 529
    overloaded_error), with Retry-After: both SDKs retry it, honouring the header."""
    status, kind = overload_answer(protocol)
    if refused.reason == "queue_full":
        why = "the queue of sessions waiting for room in the KV pool is full"
    else:
        why = (f"this new session waited {refused.waited_s:.0f} s for room in the KV pool "
               f"({refused.ahead} sessions ahead of it)")
    return Refused(status, f"{why}; the sessions already admitted keep their cache and "
                   f"speed. Retry in {refused.retry_after_s} s", kind, "sessions",
                   headers={"Retry-After": str(refused.retry_after_s),
                            "X-Should-Retry": "true"})
