"""Request bodies parsed without freezing the event loop.

One event loop carries every stream the gateway relays, so anything that holds it holds them
all. json.loads and a walk of the result hold it in proportion to the number of JSON values,
and they hold the GIL too: a thread would not free the loop. So:
- a body up to INLINE_BYTES is parsed on the loop (about 100,000 values at most: a few ms);
- a larger one is first counted in a worker process (limits.structure_problem: its strings
  blanked, its brackets counted, C-speed scans), one at a time in one worker, at most
  MAX_WAITING waiting; a body with more values than any agent sends is refused there, and
  only a body within the bounds is then parsed on the loop (bounded by the same counts).
  It reaches the worker as its chunks written to a private temporary file by a thread (a
  write releases the GIL; pickling 60 MB for a pipe would not), and is joined into one
  bytes object only once it has passed.
A 60 MB body of `[[],[],...]` took the loop 47.6 s before this; now it takes the worker about
a second (2-3 s end to end on the shared test machine) while streams go on with gaps under
100 ms (tests/unit/gateway/test_gateway_loop_free.py; docs/gateway-limits.md).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import IO, Any

from aiohttp import web

from sm121.errors import Sm121Error
from sm121.gateway.limits import (
    MAX_JSON_DEPTH,
    deeper_than,
    lone_surrogate,
    may_hold_surrogates,
    structure_problem,
)
from sm121.gateway.replies import Refused

INLINE_BYTES = 256 * 1024  # [[],...] of this size: ~85,000 lists, ~20 ms to parse here
MAX_WAITING = 8  # large bodies counted or waiting for the worker; more get a 503


class BodyParser:
    """The gateway's one worker process for large bodies, started on first use."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._waiting = 0

    async def read(self, request: web.Request, limit: int) -> bytes:
        """The request's body, at most `limit` bytes (else BodyTooLarge); a large one is
        counted off the loop first (a Refused 400 when it holds more than any agent sends).
        Read as its chunks and handed to the worker through a file written by a thread: no
        copy of a large body is made on the loop until it has passed."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.content.iter_any():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"the request body is over {limit:,} bytes")
            chunks.append(chunk)
        if size > INLINE_BYTES:
            await self._check_off_loop(chunks)
        return b"".join(chunks)

    async def _check_off_loop(self, chunks: list[bytes]) -> None:
        if self._waiting >= MAX_WAITING:
            raise Refused(503, f"{MAX_WAITING} large request bodies are being checked already; "
                          "retry shortly", "server_error", "body_check_busy",
                          headers={"Retry-After": "1"})
        self._waiting += 1
        try:
            with tempfile.NamedTemporaryFile(prefix="sm121-body-") as spool:  # 0600
                await asyncio.to_thread(_spool, spool, chunks)  # writes release the GIL
                problem = await asyncio.get_running_loop().run_in_executor(
                    self._executor(), structure_problem_of_file, spool.name)
        except BrokenProcessPool as exc:  # the worker died (out of memory): start another
            self.close()
            raise Refused(503, "the request body could not be checked; retry", "server_error",
                          "body_check_failed") from exc
        finally:
            self._waiting -= 1
        if problem is not None:
            reason, message = problem
            raise Refused(400, message, "invalid_request_error", reason)

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: a fork of a process with a running loop and threads is not safe.
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_yield_to_the_loop)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class BodyTooLarge(Sm121Error):
    """More bytes than the gateway's --max-body-mb (the handler answers 413)."""


def _spool(spool: IO[bytes], chunks: list[bytes]) -> None:
    for chunk in chunks:
        spool.write(chunk)
    spool.flush()


def _yield_to_the_loop() -> None:
    """The worker runs at a lower priority than the gateway: on a busy machine a hostile
    body's count waits, the streams do not."""
    os.nice(10)


def structure_problem_of_file(path: str) -> tuple[str, str] | None:
    """In the worker process: limits.structure_problem of the body spooled at `path`."""
    with open(path, "rb") as handle:
        return structure_problem(handle.read())


def parse_object(raw: bytes) -> dict[str, Any]:
    """A JSON object within the depth limit and of valid Unicode, or a Refused 400."""
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise Refused(400, f"the request body is not valid JSON: {exc}",
                      "invalid_request_error", "malformed_json") from exc
    except RecursionError as exc:
        raise _too_deep() from exc
    if not isinstance(body, dict):
        raise Refused(400, "the request body must be a JSON object", "invalid_request_error",
                      "malformed_json")
    if deeper_than(body, MAX_JSON_DEPTH):
        raise _too_deep()
    if may_hold_surrogates(raw) and (bad := lone_surrogate(body)) is not None:
        raise Refused(400, f"the request body holds an unpaired UTF-16 surrogate (in "
                      f"{ascii(bad[:40])}); JSON text must be valid Unicode",
                      "invalid_request_error", "bad_unicode")
    return body


def _too_deep() -> Refused:
    return Refused(400, f"the request body nests JSON more than {MAX_JSON_DEPTH} levels deep; "
                   "no OpenAI request needs that many", "invalid_request_error", "too_deep")
