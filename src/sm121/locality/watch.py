"""The per-session locality watch: each prompt compared with the session's previous one.

Tokenizing happens off the request path, in background tasks, bounded in number: the watch
must never slow the request it watches. A session's first request is not tokenized at all
(there is nothing to compare it with yet); its body is kept and tokenized only if a second
request arrives, so one-shot requests cost nothing.
"""

from __future__ import annotations

import asyncio
import logging
from array import array
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sm121.locality.divergence import Divergence, as_tokens, changed_field, compare

log = logging.getLogger("sm121.gateway.locality")

TokenizeFn = Callable[[dict[str, Any]], Awaitable[list[int]]]
# Called with the session, its comparison, whether it diverged early, and whether this one
# triggers a warning.
ResultFn = Callable[[str, Divergence, bool, bool], None]
SkipFn = Callable[[str], None]
_VIEW_FIELDS = ("model", "messages", "tools", "prompt", "add_generation_prompt",
                "continue_final_message", "chat_template", "chat_template_kwargs", "documents",
                "add_special_tokens")


@dataclass
class SessionLocality:
    session: str
    requests: int = 0
    compared: int = 0
    early: int = 0
    streak: int = 0  # consecutive early divergences
    warnings: int = 0
    reusable_sum: float = 0.0
    last: Divergence | None = None
    view: dict[str, Any] | None = field(default=None, repr=False)
    tokens: array[int] | None = field(default=None, repr=False)
    footprint: int = 0  # bytes held for this session, roughly
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def summary(self) -> dict[str, Any]:
        return {
            "session": self.session, "requests": self.requests, "compared": self.compared,
            "early": self.early, "streak": self.streak, "warnings": self.warnings,
            "mean_reusable_fraction": (self.reusable_sum / self.compared
                                       if self.compared else None),
            "last": self.last.to_dict() if self.last else None,
        }


@dataclass
class WatchLimits:
    early_fraction: float = 0.5
    warn_after: int = 3
    max_sessions: int = 512
    max_pending: int = 64
    max_bytes: int = 256 * 1024 * 1024


class LocalityWatch:
    def __init__(self, tokenize: TokenizeFn, block_size: int, limits: WatchLimits | None = None,
                 on_result: ResultFn | None = None, on_skip: SkipFn | None = None,
                 on_evict: Callable[[str], None] | None = None) -> None:
        self.tokenize = tokenize
        self.block_size = block_size
        self.limits = limits or WatchLimits()
        self._on_result = on_result or (lambda *_: None)
        self._on_skip = on_skip or (lambda _: None)
        self._on_evict = on_evict or (lambda _: None)
        self._sessions: OrderedDict[str, SessionLocality] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._bytes = 0

    def submit(self, session: str, body: dict[str, Any], body_bytes: int,
               tokens: list[int] | None = None) -> None:
        """Schedule the comparison in the background; skipped when too many are pending."""
        if len(self._tasks) >= self.limits.max_pending:
            self._on_skip("busy")
            return
        task = asyncio.create_task(self.observe(session, body, body_bytes, tokens))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def observe(self, session: str, body: dict[str, Any], body_bytes: int,
                      tokens: list[int] | None = None) -> Divergence | None:
        state = self._session(session)
        async with state.lock:
            state.requests += 1
            view = {k: body[k] for k in _VIEW_FIELDS if k in body}
            try:
                result = await self._compare(state, view, tokens)
            except Exception as exc:  # a failed analysis must never hurt serving
                log.debug("locality analysis failed for %s: %r", session, exc)
                self._on_skip("tokenize")
                state.tokens, result = None, None  # the next turn re-tokenizes this view
            if self._sessions.get(session) is not state:
                # Evicted while it was tokenized: its metric labels are gone and must stay
                # gone, or client-chosen session ids would grow /metrics without bound.
                return None
            if result is not None:
                self._record(state, result)
            self._remember(state, view, body_bytes)
            return result

    async def _compare(self, state: SessionLocality, view: dict[str, Any],
                       tokens: list[int] | None) -> Divergence | None:
        previous_view = state.view
        if previous_view is None:
            state.tokens = as_tokens(tokens) if tokens is not None else None
            return None
        previous = state.tokens if state.tokens is not None else as_tokens(
            await self.tokenize(previous_view))
        current = as_tokens(tokens if tokens is not None else await self.tokenize(view))
        result = compare(previous, current, self.block_size, changed_field(previous_view, view))
        state.tokens = current
        return result

    def _record(self, state: SessionLocality, result: Divergence) -> None:
        early = (result.previous_tokens >= self.block_size
                 and result.kept_fraction < self.limits.early_fraction)
        state.compared += 1
        state.reusable_sum += result.reusable_fraction
        state.last = result
        state.early += early
        state.streak = state.streak + 1 if early else 0
        warn = early and state.streak % self.limits.warn_after == 0
        if warn:
            state.warnings += 1
            log.warning(
                "session %s diverges early turn after turn (%d in a row): the prompt changed "
                "at token %d of %d (block %d, %.0f%% reusable) in %s; put dynamic prompt "
                "fields last", state.session, state.streak, result.first_divergence,
                result.prompt_tokens, result.first_block, 100 * result.reusable_fraction,
                result.changed)
        self._on_result(state.session, result, early, warn)

    def _remember(self, state: SessionLocality, view: dict[str, Any], body_bytes: int) -> None:
        self._bytes -= state.footprint
        state.view = view
        state.footprint = body_bytes + (len(state.tokens) * 8 if state.tokens is not None else 0)
        self._bytes += state.footprint
        self._evict()

    def _session(self, session: str) -> SessionLocality:
        state = self._sessions.get(session)
        if state is None:
            state = self._sessions[session] = SessionLocality(session)
        self._sessions.move_to_end(session)
        return state

    def _evict(self) -> None:
        while len(self._sessions) > 1 and (len(self._sessions) > self.limits.max_sessions
                                           or self._bytes > self.limits.max_bytes):
            name, state = self._sessions.popitem(last=False)
            self._bytes -= state.footprint
            self._on_evict(name)

    def report(self) -> dict[str, Any]:
        return {"block_size": self.block_size,
                "sessions": [s.summary() for s in reversed(self._sessions.values())]}

    async def drain(self) -> None:
        """Wait for pending analyses (tests and shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
