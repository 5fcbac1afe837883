"""Error replies in the OpenAI shape the engine itself uses, so clients parse them the same:
{"error": {"message", "type", "param", "code"}}; and `Refused`, the gateway's own refusal,
which protocols.refusal_reply renders in each route's shape."""

from __future__ import annotations

from aiohttp import web

from sm121.errors import Sm121Error

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


class Refused(Sm121Error):
    """A request answered by the gateway itself, before the upstream saw it. It carries the
    answer's parts, not a body: the `_errors` middleware renders it once, in the shape of the
    route's protocol (protocols.refusal_reply), whoever raised it."""

    def __init__(self, status: int, message: str, kind: str, reason: str,
                 param: str | None = None, headers: dict[str, str] | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.reason = status, kind, reason
        self.param, self.headers, self.code = param, headers, code
