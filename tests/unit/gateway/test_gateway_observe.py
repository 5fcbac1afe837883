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


def _anthropic_stream(deltas: int, start_usage: dict[str, int],
                      end_usage: dict[str, int]) -> bytes:
    """Anthropic Messages events as they go on the wire (`event:` line, then `data:`)."""
    events = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "usage": start_usage}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
        "type": "text_delta", "text": f"token {i} "}}) for i in range(deltas)]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                  "usage": end_usage}),
               ("message_stop", {"type": "message_stop"})]
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    for name, data in events)


def test_anthropic_stream_input_from_message_start_beyond_the_tail() -> None:
    # Anthropic's own shape: the input only in message_start, the output in message_delta;
    # 2,000 deltas put message_start far outside the kept tail.
    raw = _anthropic_stream(2000, {"input_tokens": 25, "output_tokens": 1},
                            {"output_tokens": 2000})
    observer = ResponseObserver(event_stream=True)
    for at in range(0, len(raw), 1000):
        observer.feed(raw[at:at + 1000])
    result = observer.finish()
    assert (result.prompt_tokens, result.completion_tokens) == (25, 2000)
    assert result.events == 2003


def test_anthropic_cached_prompt_tokens_count_as_prompt() -> None:
    # vLLM's shape: message_delta holds the whole usage, with input_tokens net of the cache.
    raw = _anthropic_stream(3, {"input_tokens": 0, "output_tokens": 0},
                            {"input_tokens": 4, "output_tokens": 3,
                             "cache_read_input_tokens": 96})
    observer = ResponseObserver(event_stream=True)
    observer.feed(raw)
    assert (observer.finish().prompt_tokens, observer.result.completion_tokens) == (100, 3)
    body = ResponseObserver(event_stream=False)
    body.feed(json.dumps({"type": "message", "content": [], "usage": {
        "input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 85,
        "output_tokens": 7}}).encode())
    assert (body.finish().prompt_tokens, body.result.completion_tokens) == (100, 7)
