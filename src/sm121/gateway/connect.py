"""`sm121 connect`: the exact settings that point an agent at a running endpoint.

Each agent speaks one protocol (Claude Code: Anthropic Messages; Codex: Responses; OpenCode,
aider and the OpenAI SDK: chat completions) and reads its endpoint from its own variables or
config file. The settings are built from what the endpoint itself says (its /v1/models, and
whether it asks for a key); a key is never printed, only the variable that holds it.
The names were checked against each client's documentation (docs/connect.md links them).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from sm121.engines.api_key import bearer
from sm121.engines.client_sync import SyncEngineClient
from sm121.engines.engine_error import EngineError
from sm121.errors import Sm121Error

DEFAULT_KEY_ENV = "SM121_API_KEY"
ANY_KEY = "sm121"  # what a client that insists on a key is given when the endpoint has none
PROVIDER = "sm121"


class Agent(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    OPENCODE = "opencode"
    AIDER = "aider"
    OPENAI_SDK = "openai-sdk"


PROTOCOL = {Agent.CLAUDE_CODE: "messages", Agent.CODEX: "responses", Agent.OPENCODE: "chat",
            Agent.AIDER: "chat", Agent.OPENAI_SDK: "chat, responses"}


@dataclass(frozen=True)
class Endpoint:
    url: str  # without a trailing slash and without /v1
    models: list[str]
    key_required: bool


@dataclass
class ClientSettings:
    agent: str
    protocol: str
    base_url: str  # as this client wants it (with or without /v1)
    model: str
    key_env: str | None  # the variable the key is read from, when the endpoint needs one
    env: dict[str, str] = field(default_factory=dict)  # values; "$NAME" reads another variable
    unset: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # path -> whole content
    command: str = ""
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def discover(url: str, key: str | None, timeout_s: float = 10.0) -> Endpoint:
    """What the endpoint serves and whether it wants a key: /v1/models asked without one
    first (a keyless gateway answers), then with `key` when it said 401."""
    base = url.rstrip("/").removesuffix("/v1")
    status, data = _get_models(base, None, timeout_s)
    key_required = status == 401
    if key_required:
        if not key:
            raise Sm121Error(f"{base}/v1/models answers 401: the endpoint wants an API key",
                             f"export the key in ${DEFAULT_KEY_ENV} (or --key-env NAME), "
                             "then run sm121 connect again")
        status, data = _get_models(base, key, timeout_s)
    if status != 200:
        raise Sm121Error(f"{base}/v1/models answered HTTP {status}",
                         "is it an sm121 gateway or an engine? `sm121 status` lists the runs")
    models = [str(m["id"]) for m in data.get("data") or [] if isinstance(m, dict) and "id" in m]
    if not models:
        raise Sm121Error(f"{base}/v1/models lists no model", "is the engine up? sm121 status")
    return Endpoint(base, models, key_required)


def _get_models(base: str, key: str | None, timeout_s: float) -> tuple[int, dict[str, Any]]:
    client = SyncEngineClient(base, bearer(key), timeout_s)
    try:
        status, body = client.request("/v1/models")
    except EngineError as exc:
        raise Sm121Error(f"cannot read {base}/v1/models: {exc.message}",
                         "check the URL, or give a run id (`sm121 status` lists them)") from exc
    try:
        data = json.loads(body) if status == 200 else {}
    except ValueError:
        data = {}
    return status, data if isinstance(data, dict) else {}


def choose_model(endpoint: Endpoint, model: str | None) -> str:
    if model is None:
        return endpoint.models[0]
    if model not in endpoint.models:
        raise Sm121Error(f"{endpoint.url} does not serve {model!r}",
                         f"--model one of: {', '.join(endpoint.models)}")
    return model


def settings(agent: Agent, endpoint: Endpoint, model: str,
             key_env: str = DEFAULT_KEY_ENV) -> ClientSettings:
    env_key = key_env if endpoint.key_required else None
    key = f"${key_env}" if endpoint.key_required else ANY_KEY
    build = _BUILDERS[agent]
    return build(endpoint.url, model, key, env_key)


def _claude_code(url: str, model: str, key: str, key_env: str | None) -> ClientSettings:
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_AUTH_TOKEN": key, "ANTHROPIC_MODEL": model,
           "ANTHROPIC_DEFAULT_HAIKU_MODEL": model}
    return ClientSettings(
        Agent.CLAUDE_CODE.value, PROTOCOL[Agent.CLAUDE_CODE], url, model, key_env, env,
        unset=["ANTHROPIC_API_KEY"], command="claude",
        notes=["ANTHROPIC_BASE_URL has no /v1: Claude Code adds /v1/messages",
               "ANTHROPIC_AUTH_TOKEN goes as Authorization: Bearer, which the gateway checks",
               "the same variables may go in the env block of ~/.claude/settings.json"])


def _codex(url: str, model: str, key: str, key_env: str | None) -> ClientSettings:
    env_name = key_env or DEFAULT_KEY_ENV
    q = json.dumps  # a JSON string is a TOML basic string (quotes and escapes alike)
    config = (f"model = {q(model)}\nmodel_provider = {q(PROVIDER)}\n\n"
              f"[model_providers.{PROVIDER}]\n"
              f"name = {q(PROVIDER)}\nbase_url = {q(url + '/v1')}\n"
              f'wire_api = "responses"\nenv_key = {q(env_name)}\n')
    env = {} if key_env else {env_name: ANY_KEY}
    return ClientSettings(
        Agent.CODEX.value, PROTOCOL[Agent.CODEX], f"{url}/v1", model, key_env, env,
        files={"~/.codex/config.toml": config}, command="codex",
        notes=["Codex posts to base_url + /responses with the key of env_key as Bearer"])


def _opencode(url: str, model: str, key: str, key_env: str | None) -> ClientSettings:
    options: dict[str, str] = {"baseURL": f"{url}/v1"}
    if key_env:
        options["apiKey"] = f"{{env:{key_env}}}"
    config = {"$schema": "https://opencode.ai/config.json",
              "provider": {PROVIDER: {"npm": "@ai-sdk/openai-compatible", "name": PROVIDER,
                                      "options": options,
                                      "models": {model: {"name": model}}}},
              "model": f"{PROVIDER}/{model}"}
    return ClientSettings(
        Agent.OPENCODE.value, PROTOCOL[Agent.OPENCODE], f"{url}/v1", model, key_env,
        files={"opencode.json": json.dumps(config, indent=2) + "\n"}, command="opencode",
        notes=["opencode.json in the project, or ~/.config/opencode/opencode.json"])


def _aider(url: str, model: str, key: str, key_env: str | None) -> ClientSettings:
    env = {"OPENAI_API_BASE": f"{url}/v1", "OPENAI_API_KEY": key}
    return ClientSettings(
        Agent.AIDER.value, PROTOCOL[Agent.AIDER], f"{url}/v1", model, key_env, env,
        command=f"aider --model openai/{model}",
        notes=["openai/ makes aider use its OpenAI-compatible client; its warning about an "
               "unknown context window is harmless (--no-show-model-warnings)"])


def _openai_sdk(url: str, model: str, key: str, key_env: str | None) -> ClientSettings:
    env = {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": key}
    code = ("from openai import OpenAI\n\n"
            "client = OpenAI()  # reads OPENAI_BASE_URL and OPENAI_API_KEY\n"
            f"chat = client.chat.completions.create(model={model!r}, "
            'messages=[{"role": "user", "content": "hi"}])\n'
            f'reply = client.responses.create(model={model!r}, input="hi")\n')
    return ClientSettings(
        Agent.OPENAI_SDK.value, PROTOCOL[Agent.OPENAI_SDK], f"{url}/v1", model, key_env, env,
        files={"example.py": code}, command="python3 example.py")


_BUILDERS = {Agent.CLAUDE_CODE: _claude_code, Agent.CODEX: _codex, Agent.OPENCODE: _opencode,
             Agent.AIDER: _aider, Agent.OPENAI_SDK: _openai_sdk}


def shell_lines(s: ClientSettings) -> list[str]:
    """The settings as a shell user types them: exports, unsets, files, the command."""
    lines = [f"export {name}={_shell_value(value)}" for name, value in s.env.items()]
    lines += [f"unset {name}" for name in s.unset]
    if s.key_env and not any(v == f"${s.key_env}" for v in s.env.values()):
        lines.insert(0, f"# the endpoint wants a key: export {s.key_env}=... first")
    elif s.key_env:
        lines.insert(0, f"# the endpoint wants a key: {s.key_env} must hold it")
    for path, content in s.files.items():
        lines += ["", f"# {path}", *content.rstrip("\n").split("\n")]
    return [*lines, "", s.command]


def _shell_value(value: str) -> str:
    if value.startswith("$"):
        return f'"{value}"'  # expanded by the shell: the key is never printed
    return shlex.quote(value)
