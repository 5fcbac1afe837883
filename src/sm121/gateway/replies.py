"""Error replies in the OpenAI shape the engine itself uses, so clients parse them the same:
{"error": {"message", "type", "param", "code"}}."""

from __future__ import annotations

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
