"""What a running endpoint serves, read from its /v1/models: the model ids, each model's
context window (vLLM's `max_model_len` on the model card), and whether it asks for a key.

The answer is a stranger's data: it ends up in shell lines and config files, so every model
id must match the served-model-name rule (model_names.py) before it is used, and a context
window must be a positive integer. A hostile id is refused by name, never printed raw."""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

from sm121.engines.api_key import bearer
from sm121.engines.client_sync import SyncEngineClient
from sm121.engines.engine_error import EngineError
from sm121.engines.model_card import card_context
from sm121.errors import Sm121Error
from sm121.model_names import MODEL_NAME_RULE, is_model_name

DEFAULT_KEY_ENV = "SM121_API_KEY"
DEFAULT_TIMEOUT_S = 10.0
# HOST:PORT without a scheme (`127.0.0.1:18765`, `localhost:8100`, `[::1]:8100`): a URL, not a
# run id (run ids hold no colon).
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}(/.*)?")


@dataclass(frozen=True)
class ServedModel:
    id: str
    max_model_len: int | None  # None: the endpoint does not say


@dataclass(frozen=True)
class Endpoint:
    url: str  # scheme://host[:port][/prefix], without a trailing slash and without /v1
    models: list[ServedModel]
    key_required: bool
    key_env: str  # the variable the key is read from (set or not)


def looks_like_url(target: str) -> bool:
    return target.startswith(("http://", "https://")) or bool(_HOST_PORT.fullmatch(target))


def endpoint_url(target: str) -> str:
    """The endpoint's base URL from what the user typed: `http://`, `https://`, or HOST:PORT
    (read as http). Checked because it is printed into shell lines and config files: no
    whitespace or control characters, a host, no user:password, query or fragment."""
    url = target if target.startswith(("http://", "https://")) else f"http://{target}"
    bad = next((c for c in url if c.isspace() or not c.isprintable()), None)
    parts = urllib.parse.urlsplit(url)
    if bad is not None or not parts.hostname or parts.username or parts.password \
            or parts.query or parts.fragment or any(c in url for c in "'\"`$\\;<>|&"):
        raise Sm121Error(f"{target!r} is not an endpoint URL sm121 connect can print",
                         "give http://HOST:PORT (or HOST:PORT), letters, digits and . - _ : / "
                         "only, without user, query or fragment")
    return url.rstrip("/").removesuffix("/v1")


def discover(url: str, key: str | None, key_env: str = DEFAULT_KEY_ENV,
             timeout_s: float = DEFAULT_TIMEOUT_S, unreachable_hint: str = "") -> Endpoint:
    """/v1/models asked without a key first (a keyless endpoint answers), then with `key`
    when it said 401. Each failure says its own cause: no key, a refused key, no answer."""
    hint = unreachable_hint or "is the gateway or engine running there? (`sm121 status` lists runs)"
    status, data = _get_models(url, None, timeout_s, hint)
    key_required = status in (401, 403)
    if key_required:
        if not key:
            raise Sm121Error(f"{url}/v1/models answers {status}: the endpoint wants an API key",
                             f"export the key in ${key_env}, then run sm121 connect again"
                             + ("" if key_env != DEFAULT_KEY_ENV else
                                " (or --key-env NAME for another variable)"))
        status, data = _get_models(url, key, timeout_s, hint)
        if status in (401, 403):
            raise Sm121Error(f"{url}/v1/models refused the key in ${key_env} (HTTP {status}): "
                             "the key is wrong",
                             f"put the endpoint's key in ${key_env} (the gateway's "
                             "--api-key-file or SM121_GATEWAY_API_KEYS holds the valid ones)")
    if status != 200:
        raise Sm121Error(f"{url}/v1/models answered HTTP {status}",
                         "an sm121 gateway or an OpenAI-compatible engine answers 200 there; "
                         "check the URL's port and path")
    return Endpoint(url, _models(url, data), key_required, key_env)


def _get_models(url: str, key: str | None, timeout_s: float,
                hint: str) -> tuple[int, dict[str, Any]]:
    client = SyncEngineClient(url, bearer(key), timeout_s)
    try:
        status, body = client.request("/v1/models")
    except EngineError as exc:
        raise Sm121Error(f"cannot read {url}/v1/models: {exc.message}", hint) from exc
    try:
        data = json.loads(body) if status == 200 else {}
    except ValueError:
        data = {}
    return status, data if isinstance(data, dict) else {}


def _models(url: str, data: dict[str, Any]) -> list[ServedModel]:
    cards = [c for c in data.get("data") or [] if isinstance(c, dict) and "id" in c]
    if not cards:
        raise Sm121Error(f"{url}/v1/models lists no model", "is the engine up? sm121 status")
    # The window one request may use: llama-server's card gives one slot's (engines.client).
    return [ServedModel(c["id"], card_context(c)) for c in cards]


def choose_model(endpoint: Endpoint, model: str | None) -> ServedModel:
    """The model asked for (or the first listed), once its id passes the served-model-name
    rule: an id that does not is refused by name (as repr, so it cannot break a line)."""
    if model is None:
        chosen = endpoint.models[0]
    else:
        found = [m for m in endpoint.models if m.id == model]
        if not found:
            names = ", ".join(repr(m.id) if not is_model_name(m.id) else m.id
                              for m in endpoint.models)
            raise Sm121Error(f"{endpoint.url} does not serve {model!r}", f"--model one of: {names}")
        chosen = found[0]
    if not is_model_name(chosen.id):
        raise Sm121Error(f"{endpoint.url}/v1/models lists the model id {chosen.id!r}, which is not "
                         "a model name: sm121 connect prints model ids into shell lines and "
                         "config files, so it refuses this one",
                         f"a model name is {MODEL_NAME_RULE}; rename the served model "
                         "(--served-model-name), or pick another with --model")
    return chosen
