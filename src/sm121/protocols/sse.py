"""The one Server-Sent Events parser in sm121: bytes in, events out, incrementally.

Chunk boundaries from the network fall anywhere (inside a line, inside a UTF-8 sequence), so
the parser buffers bytes and only decodes complete lines.

The gateway's hot path does not use it: gateway/observe.py forwards the bytes untouched and
only needs the event count and the last usage and error events, so it counts blank lines in
C per chunk and parses one bounded tail at the end. Per 200-event chat stream this parser
costs 3.4x as much with one event a chunk and 7.9x with five (benchmarks/sse_observe_cost.py,
both readers in one run, on a loaded 2-core host); everything that needs the events
themselves (bench, agent-check, the capture's redaction) reads them here."""

from __future__ import annotations

from dataclasses import dataclass, field

DONE = "[DONE]"


@dataclass(frozen=True)
class SSEEvent:
    data: str
    event: str | None = None
    id: str | None = None

    @property
    def is_done(self) -> bool:
        return self.data == DONE


@dataclass
class SSEParser:
    _buffer: bytes = b""
    _data: list[str] = field(default_factory=list)
    _event: str | None = None
    _id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Linear in the bytes fed: lines are found by position, the buffer sliced once."""
        buffer = self._buffer + chunk
        events: list[SSEEvent] = []
        position = 0
        while True:
            end, next_start = self._line_end(buffer, position)
            if end < 0:
                break
            event = self._line(buffer[position:end].decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
            position = next_start
        self._buffer = buffer[position:]
        return events

    def flush(self) -> list[SSEEvent]:
        """End of stream: a last event without its blank line still counts."""
        events = self.feed(b"\n") if self._buffer else []
        if self._data:
            events.append(self._emit())
        return events

    @staticmethod
    def _line_end(buffer: bytes, start: int) -> tuple[int, int]:
        """End of the line starting at `start` and where the next begins (CRLF, LF or CR);
        (-1, -1) when the line is not complete yet."""
        lf = buffer.find(b"\n", start)
        # Look for a CR only before that LF: scanning the whole rest per line is quadratic.
        cr = buffer.find(b"\r", start, lf if lf >= 0 else len(buffer))
        if lf >= 0 and cr < 0:
            return lf, lf + 1
        if cr < 0 or cr + 1 == len(buffer):  # a CR at the end may be half of a CRLF
            return -1, -1
        return cr, cr + (2 if buffer[cr + 1:cr + 2] == b"\n" else 1)

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._emit() if self._data else None
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        return None

    def _emit(self) -> SSEEvent:
        event = SSEEvent(data="\n".join(self._data), event=self._event, id=self._id)
        self._data, self._event, self._id = [], None, None
        return event
