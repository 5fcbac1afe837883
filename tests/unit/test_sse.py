"""The SSE parser: events survive any chunking of the byte stream."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sm121.protocols.sse import SSEParser

STREAM = (b'data: {"text": "caf\xc3\xa9"}\n\n: keep-alive\n\nevent: error\ndata: a\r\ndata: b\r\n\r\n'
          b"data: [DONE]\n\n")


def parse(chunks: list[bytes]) -> list:
    parser = SSEParser()
    events = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.flush()


def test_whole_stream() -> None:
    events = parse([STREAM])
    assert [e.data for e in events] == ['{"text": "café"}', "a\nb", "[DONE]"]
    assert events[1].event == "error" and events[-1].is_done


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=20))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert parse(chunks) == parse([STREAM])


def test_last_event_without_blank_line_is_flushed() -> None:
    assert [e.data for e in parse([b"data: tail"])] == ["tail"]
