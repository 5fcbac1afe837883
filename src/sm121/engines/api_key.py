"""The API key sm121 presents to an engine: readiness, bench and probe send it, and a 401
stops them at once with this message instead of retrying until a timeout.

vLLM takes its key from VLLM_API_KEY (sm121 refuses `--api-key` on the command line), so the
launcher's VLLM_API_KEY is the key of an engine it started; SM121_API_KEY names the key of any
other endpoint (a gateway, an engine started elsewhere)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from sm121.engines.engine_error import EngineError

ENGINE_KEY_ENV = "VLLM_API_KEY"
CLIENT_KEY_ENV = "SM121_API_KEY"


def api_key(engine_first: bool, env: Mapping[str, str] | None = None) -> str | None:
    """Readiness asks the engine sm121 started (its own key first); the bench asks whatever
    endpoint it is given (SM121_API_KEY first)."""
    source = os.environ if env is None else env
    order = (ENGINE_KEY_ENV, CLIENT_KEY_ENV) if engine_first else (CLIENT_KEY_ENV, ENGINE_KEY_ENV)
    return next((source[name] for name in order if source.get(name)), None)


def bearer(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def unauthorized(url: str, status: int) -> EngineError:
    said = "401 Unauthorized" if status == 401 else f"{status} Forbidden"
    return EngineError(f"{url} answered {said}: it requires an API key, and the key sm121 sent "
                      "(if any) was refused",
                      f"export {ENGINE_KEY_ENV} (the key the engine was started with) or "
                      f"{CLIENT_KEY_ENV}; sm121 sends it as a Bearer token", status)
