"""The API key sm121 presents to an engine: readiness, bench and probe send it, and a 401
stops them at once with this message instead of retrying until a timeout.

An engine takes its key from an env var its adapter names (`api_key_env`; sm121 refuses
`--api-key` on the command line), so the launcher's variable of that name is the key of an
engine it started; SM121_API_KEY names the key of any other endpoint (a gateway, an engine
started elsewhere)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from sm121.engines.engine_error import EngineError
from sm121.engines.registry import adapters

CLIENT_KEY_ENV = "SM121_API_KEY"


def engine_key_envs() -> tuple[str, ...]:
    """The env vars the registered engines take their API key from (their adapters')."""
    return tuple(dict.fromkeys(adapter.api_key_env for adapter in adapters()))


def api_key(engine_first: bool, env: Mapping[str, str] | None = None) -> str | None:
    """Readiness asks the engine sm121 started (its own key first); the bench asks whatever
    endpoint it is given (SM121_API_KEY first)."""
    source = os.environ if env is None else env
    engine = engine_key_envs()
    order = (*engine, CLIENT_KEY_ENV) if engine_first else (CLIENT_KEY_ENV, *engine)
    return next((source[name] for name in order if source.get(name)), None)


def bearer(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def unauthorized(url: str, status: int) -> EngineError:
    said = "401 Unauthorized" if status == 401 else f"{status} Forbidden"
    return EngineError(f"{url} answered {said}: it requires an API key, and the key sm121 sent "
                      "(if any) was refused",
                      f"export {' or '.join(engine_key_envs())} (the key the engine was "
                      "started with) or "
                      f"{CLIENT_KEY_ENV}; sm121 sends it as a Bearer token", status)
