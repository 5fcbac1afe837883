"""Error replies in the OpenAI shape the engine itself uses, so clients parse them the same:
{"error": {"message", "type", "param", "code"}}."""

from __future__ import annotations

import json

from aiohttp import web

SSE_CONTENT_TYPE = "text/event-stream"


def error_body(status: int, message: str, kind: str, param: str | None = None,
               code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param,
                      "code": code or status}}


def error_reply(status: int, message: str, kind: str, param: str | None = None,
                headers: dict[str, str] | None = None, code: str | None = None
                ) -> web.Response:
    return web.json_response(error_body(status, message, kind, param, code), status=status,
                             headers=headers)


def error_event(message: str, kind: str, status: int = 502) -> bytes:
    """An SSE error event followed by the stream's normal end, so a client's loop exits."""
    payload = json.dumps(error_body(status, message, kind))
    return f"data: {payload}\n\ndata: [DONE]\n\n".encode()
