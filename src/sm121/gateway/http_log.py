"""The logger for the gateway's HTTP server (aiohttp's protocol layer).

aiohttp logs a request it cannot even parse (a header line over 8 KiB, too many headers, a
broken request line) with a full traceback at ERROR, although it answered the client with a
plain 400 and nothing failed. A hostile client could fill the log with tracebacks that look
like gateway crashes. Such records become one INFO line here; a real unhandled exception in
a handler stays an ERROR with its traceback.
"""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError


class _MalformedRequestsAreInfo(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and 400 <= exc.code < 500:
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg = "refused a malformed HTTP request from %s with %d: %s"
            record.args = (remote, exc.code, exc.message.splitlines()[0] if exc.message else "")
            record.exc_info = record.exc_text = None
        return True


http_log = logging.getLogger("sm121.gateway.http")
http_log.addFilter(_MalformedRequestsAreInfo())
