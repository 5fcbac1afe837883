"""Error replies in the OpenAI shape the engine itself uses, so clients parse them the same
(protocols/routes.openai_error); and `Refused`, the gateway's own refusal, which
`refusal_reply` renders in the shape of the request's protocol."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from sm121.errors import Sm121Error
from sm121.protocols.routes import Protocol, openai_error

SSE_CONTENT_TYPE = "text/event-stream"


def error_body(status: int, message: str, kind: str, param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    return openai_error(status, message, kind, param, code)


def error_reply(status: int, message: str, kind: str, param: str | None = None,
                headers: dict[str, str] | None = None, code: str | None = None
                ) -> web.Response:
    return web.json_response(error_body(status, message, kind, param, code), status=status,
                             headers=headers)


class Refused(Sm121Error):
    """A request answered by the gateway itself, before the upstream saw it. It carries the
    answer's parts, not a body: the `_errors` middleware renders it once, in the shape of the
    route's protocol (refusal_reply), whoever raised it."""

    def __init__(self, status: int, message: str, kind: str, reason: str,
                 param: str | None = None, headers: dict[str, str] | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.reason = status, kind, reason
        self.param, self.headers, self.code = param, headers, code


def refusal_reply(protocol: Protocol | None, refusal: Refused) -> web.Response:
    """The gateway's own answer to a request of `protocol` (None: not a generation route), in
    its shape (Anthropic's on /v1/messages: {"type": "error", "error": {"type", "message"}};
    OpenAI's elsewhere), for every refusal (401, 404, 413, policy, context)."""
    shape = protocol.error_body if protocol is not None else openai_error
    body = shape(refusal.status, refusal.message, refusal.kind, refusal.param, refusal.code)
    return web.json_response(body, status=refusal.status, headers=refusal.headers)
