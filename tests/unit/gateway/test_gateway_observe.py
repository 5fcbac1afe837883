"""What the gateway reads from responses: events, usage and errors, across any chunking."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sm121.gateway.observe import ResponseObserver


def _stream(n: int, usage: bool = True, error: bool = False) -> bytes:
    events = [json.dumps({"choices": [{"delta": {"content": f"t{i}\n\n"}}]}) for i in range(n)]
    if error:
        events.append(json.dumps({"error": {"message": "engine fell over"}}))
    if usage:
        events.append(json.dumps({"choices": [], "usage": {"prompt_tokens": 9,
                                                           "completion_tokens": n}}))
    return b"".join(f"data: {e}\n\n".encode() for e in [*events, "[DONE]"])


@settings(deadline=None)  # a loaded machine must not fail a correctness test
@given(st.lists(st.integers(1, 700), min_size=1, max_size=40))
def test_any_chunking_gives_the_same_counts(cuts: list[int]) -> None:
    raw, observer, at = _stream(300), ResponseObserver(event_stream=True), 0
    for size in cuts:
        observer.feed(raw[at:at + size])
        at += size
    observer.feed(raw[at:])
    result = observer.finish()
    assert result.events == 301 and result.completion_tokens == 300
    assert result.prompt_tokens == 9 and result.error is None


def test_error_event_is_noticed() -> None:
    observer = ResponseObserver(event_stream=True)
    observer.feed(_stream(3, usage=False, error=True))
    assert observer.finish().error == "engine fell over"


def test_non_stream_usage() -> None:
    observer = ResponseObserver(event_stream=False)
    observer.feed(b'{"usage": {"input_tokens": 4, ')
    observer.feed(b'"output_tokens": 2}}')
    result = observer.finish()
    assert (result.prompt_tokens, result.completion_tokens) == (4, 2)
