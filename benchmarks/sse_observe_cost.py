"""What reading a streamed response costs the gateway per request, side by side in one run:
gateway/observe.py's ResponseObserver (a byte count per chunk, the usage event found from the
end) against the cheapest reader built on sse.py's SSEParser that learns the same facts
(every chunk parsed into events, the last event naming usage decoded).

    .venv/bin/python benchmarks/sse_observe_cost.py [--events 200] [--per-read 1] [--repeats 9]

A stream is `--events` chat deltas as vLLM sends them, then the usage event and [DONE];
`--per-read` events arrive per chunk. Both readers must agree on the event count and on
the token counts, or the run stops. Prints microseconds per request (the minimum of the
repeats) and the ratio."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from sm121.gateway.observe import ResponseObserver
from sm121.protocols.sse import SSEParser

DELTA = (b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,'
         b'"model":"tiny","choices":[{"index":0,"delta":{"content":" tok"},'
         b'"logprobs":null,"finish_reason":null}]}\n\n')
USAGE = (b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,'
         b'"model":"tiny","choices":[],"usage":{"prompt_tokens":812,"total_tokens":1012,'
         b'"completion_tokens":200}}\n\n')
DONE = b"data: [DONE]\n\n"


def stream(events: int, per_read: int) -> list[bytes]:
    body = [DELTA] * events + [USAGE]
    chunks = [b"".join(body[i:i + per_read]) for i in range(0, len(body), per_read)]
    return [*chunks, DONE]


def with_observer(chunks: list[bytes]) -> tuple[int, int | None, int | None]:
    observer = ResponseObserver(event_stream=True)
    for chunk in chunks:
        observer.feed(chunk)
    seen = observer.finish()
    return seen.events, seen.prompt_tokens, seen.completion_tokens


def with_sse_parser(chunks: list[bytes]) -> tuple[int, int | None, int | None]:
    parser = SSEParser()
    events, usage_data = 0, None
    for chunk in chunks:
        for event in parser.feed(chunk):
            if event.is_done:
                continue
            events += 1
            if '"usage"' in event.data:
                usage_data = event.data
    for event in parser.flush():
        events += not event.is_done
    usage = (json.loads(usage_data).get("usage") or {}) if usage_data else {}
    return events, usage.get("prompt_tokens"), usage.get("completion_tokens")


def per_request_us(reader: Callable[[list[bytes]], object], chunks: list[bytes],
                   n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        reader(chunks)
    return 1e6 * (time.perf_counter() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--per-read", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--requests", type=int, default=200, help="per repeat")
    args = parser.parse_args()
    chunks = stream(args.events, args.per_read)
    facts = with_observer(chunks)
    if facts != with_sse_parser(chunks) or facts != (args.events + 1, 812, 200):
        raise SystemExit(f"the readers disagree: {facts} vs {with_sse_parser(chunks)}")
    observer = min(per_request_us(with_observer, chunks, args.requests)
                   for _ in range(args.repeats))
    sse = min(per_request_us(with_sse_parser, chunks, args.requests)
              for _ in range(args.repeats))
    print(f"{args.events} events, {args.per_read} per read, {len(chunks)} chunks; "
          f"min of {args.repeats} x {args.requests} requests")
    print(f"observe.py ResponseObserver: {observer:8.1f} us/request")
    print(f"sse.py SSEParser reader:     {sse:8.1f} us/request")
    print(f"ratio (SSEParser / observer): {sse / observer:.1f}x")


if __name__ == "__main__":
    main()
