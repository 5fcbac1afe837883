"""The one Server-Sent Events parser in sm121: bytes in, events out, incrementally.

Chunk boundaries from the network fall anywhere (inside a line, inside a UTF-8 sequence), so
the parser buffers bytes and only decodes complete lines."""

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
        self._buffer += chunk
        events: list[SSEEvent] = []
        while True:
            line, sep, rest = self._split_line(self._buffer)
            if not sep:
                return events
            self._buffer = rest
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)

    def flush(self) -> list[SSEEvent]:
        """End of stream: a last event without its blank line still counts."""
        events = self.feed(b"\n") if self._buffer else []
        if self._data:
            events.append(self._emit())
        return events

    @staticmethod
    def _split_line(buffer: bytes) -> tuple[bytes, bytes, bytes]:
        """The first line and its terminator (CRLF, LF or CR); no terminator yet: wait."""
        cr, lf = buffer.find(b"\r"), buffer.find(b"\n")
        if lf >= 0 and (cr < 0 or lf < cr):
            return buffer[:lf], b"\n", buffer[lf + 1:]
        if cr < 0 or cr + 1 == len(buffer):  # a CR at the end may be half of a CRLF
            return buffer, b"", b""
        sep = b"\r\n" if buffer[cr + 1:cr + 2] == b"\n" else b"\r"
        return buffer[:cr], sep, buffer[cr + len(sep):]

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
