"""Each agent's settings for one endpoint and model, by the agent's own documented names
(docs/connect.md cites the page or source file of each).

Each agent speaks one protocol (Claude Code: Anthropic Messages; Codex: Responses; OpenCode,
aider and the OpenAI SDK: chat completions) and reads its endpoint from its own variables or
config file. Besides where and which model, each is handed the endpoint's limits: the served
context window, an output limit, and the prompt size at which it should compact or trim.
A key is never part of the settings: only the name of the variable that holds it."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sm121.connect.endpoint import Endpoint, ServedModel

ANY_KEY = "sm121"  # what a client that insists on a key is given when the endpoint has none
PROVIDER = "sm121"  # the provider / profile name sm121 owns in an agent's config
MAX_OUTPUT_TOKENS = 32_768  # Claude Code's own default ceiling for one reply is about this
# An agent checks its size after a turn, then adds the next tool output before it asks again:
# the compaction point leaves room for that growth (Claude Code keeps 13,000 tokens for it).
TURN_HEADROOM_TOKENS = 13_000


class Agent(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    OPENCODE = "opencode"
    AIDER = "aider"
    OPENAI_SDK = "openai-sdk"


PROTOCOL = {Agent.CLAUDE_CODE: "messages", Agent.CODEX: "responses", Agent.OPENCODE: "chat",
            Agent.AIDER: "chat", Agent.OPENAI_SDK: "chat, responses"}


@dataclass(frozen=True)
class Limits:
    """The served context window and what an agent is told from it: a reply gets at most
    `output` tokens, and a session past `compact_at` (= context - output - headroom) is
    compacted, so the next turn (up to `headroom` tokens more) plus its reply still fits the
    window the gateway enforces."""

    context: int
    output: int
    headroom: int
    compact_at: int


def limits_for(context: int | None) -> Limits | None:
    if context is None:
        return None
    output = max(1, min(MAX_OUTPUT_TOKENS, context // 4))
    headroom = min(TURN_HEADROOM_TOKENS, context // 8)
    return Limits(context, output, headroom, context - output - headroom)


KeyPath = tuple[str, ...]


@dataclass(frozen=True)
class ConfigEdit:
    """Keys sm121 sets in one config file: each entry's value replaces what is at its key
    path (the parents are made when missing); everything else in the file is kept."""

    path: str  # as shown, `~` for the home directory
    format: str  # "json" or "toml"
    entries: tuple[tuple[KeyPath, Any], ...]
    # Keys removed from the file: credentials the agent would otherwise send to the endpoint
    # (a settings file's value overrides the shell, so an `unset` cannot reach them).
    removes: tuple[KeyPath, ...] = ()

    def tree(self) -> dict[str, Any]:
        root: dict[str, Any] = {}
        for keys, value in self.entries:
            node = root
            for key in keys[:-1]:
                node = node.setdefault(key, {})
            node[keys[-1]] = value
        return root


@dataclass
class ClientSettings:
    agent: str
    protocol: str
    base_url: str  # as this client wants it (with or without /v1)
    model: str
    key_env: str | None  # the variable the key is read from, when the endpoint needs one
    limits: Limits | None
    env: dict[str, str] = field(default_factory=dict)  # literal values
    env_from: dict[str, str] = field(default_factory=dict)  # NAME -> the variable it copies
    unset: list[str] = field(default_factory=list)
    edits: list[ConfigEdit] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    example: str = ""  # code, for the SDK
    notes: list[str] = field(default_factory=list)

    def command_line(self) -> str:
        return shlex.join(self.command)


def settings(agent: Agent, endpoint: Endpoint, model: ServedModel) -> ClientSettings:
    key_env = endpoint.key_env if endpoint.key_required else None
    s = ClientSettings(agent.value, PROTOCOL[agent], endpoint.url, model.id, key_env,
                       limits_for(model.max_model_len))
    _BUILDERS[agent](s, endpoint.url)
    if s.limits is None:
        s.notes.append("the endpoint does not say its context window (no max_model_len in "
                       "/v1/models): no limits are handed over, so the agent assumes its own")
    return s


def _key(s: ClientSettings, name: str) -> None:
    """NAME carries the key: copied from the key's variable, or a placeholder without keys."""
    if s.key_env:
        s.env_from[name] = s.key_env
    else:
        s.env[name] = ANY_KEY


def _claude_code(s: ClientSettings, url: str) -> None:
    s.base_url = url
    s.env.update({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_MODEL": s.model})
    # /model sonnet, opus, haiku, background tasks and subagents ask for these names
    for alias in ("ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
                  "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"):
        s.env[alias] = s.model
    if s.limits:
        s.env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(s.limits.context)
        s.env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(s.limits.output)
    _key(s, "ANTHROPIC_AUTH_TOKEN")
    s.unset.append("ANTHROPIC_API_KEY")
    s.edits.append(ConfigEdit("~/.claude/settings.json", "json",
                              tuple((("env", k), v) for k, v in s.env.items()),
                              removes=claude_code_credentials(s.env)))
    s.command = ["claude"]
    s.notes += ["ANTHROPIC_BASE_URL has no /v1: Claude Code adds /v1/messages",
                "ANTHROPIC_AUTH_TOKEN goes as Authorization: Bearer, which the gateway checks; "
                "ANTHROPIC_API_KEY (X-Api-Key) must be unset"]
    if s.key_env:
        s.notes.append(f"settings.json holds no key: export ANTHROPIC_AUTH_TOKEN=\"${s.key_env}\" "
                       "in the shell that runs claude")


# What Claude Code sends a key from besides ANTHROPIC_AUTH_TOKEN: the X-Api-Key variable,
# the helper whose output it sends as both headers, and headers it adds to every request.
# Left in settings.json (whose env overrides the shell), the user's real Anthropic key would
# go to the endpoint sm121 points it at.
CLAUDE_CODE_CREDENTIALS: tuple[KeyPath, ...] = (
    ("env", "ANTHROPIC_API_KEY"), ("env", "ANTHROPIC_AUTH_TOKEN"),
    ("env", "ANTHROPIC_CUSTOM_HEADERS"), ("apiKeyHelper",))


def claude_code_credentials(written_env: dict[str, str]) -> tuple[KeyPath, ...]:
    """The credential keys sm121 removes from settings.json: all but one it sets itself."""
    return tuple(k for k in CLAUDE_CODE_CREDENTIALS
                 if not (k[0] == "env" and k[-1] in written_env))


def _codex(s: ClientSettings, url: str) -> None:
    s.base_url = f"{url}/v1"
    provider: dict[str, Any] = {"name": PROVIDER, "base_url": s.base_url, "wire_api": "responses"}
    if s.key_env:
        provider["env_key"] = s.key_env  # without keys: none, so Codex sends no Authorization
    s.edits.append(ConfigEdit("~/.codex/config.toml", "toml", (
        (("model_providers", PROVIDER), provider),
        (("profiles", PROVIDER), {"model": s.model, "model_provider": PROVIDER}))))
    s.command = ["codex", "--profile", PROVIDER]
    if s.limits:  # a profile cannot hold these (Codex's ConfigProfile has no such fields)
        s.command += ["-c", f"model_context_window={s.limits.context}",
                      "-c", f"model_auto_compact_token_limit={s.limits.compact_at}"]
    s.notes.append("the sm121 profile and provider leave Codex's default model and provider "
                   "as they were; Codex posts to base_url + /responses")
    if s.key_env:
        s.notes.append(f"Codex reads the key from ${s.key_env} (env_key)")


def _opencode(s: ClientSettings, url: str) -> None:
    s.base_url = f"{url}/v1"
    options: dict[str, str] = {"baseURL": s.base_url}
    if s.key_env:
        options["apiKey"] = f"{{env:{s.key_env}}}"  # OpenCode reads the variable itself
    model: dict[str, Any] = {"name": s.model}
    if s.limits:  # OpenCode compacts past context - output: the headroom comes off its context
        model["limit"] = {"context": s.limits.context - s.limits.headroom,
                          "output": s.limits.output}
    provider = {"npm": "@ai-sdk/openai-compatible", "name": PROVIDER, "options": options,
                "models": {s.model: model}}
    s.edits.append(ConfigEdit("~/.config/opencode/opencode.json", "json",
                              ((("provider", PROVIDER), provider),)))
    s.command = ["opencode", "--model", f"{PROVIDER}/{s.model}"]
    s.notes.append("the sm121 provider leaves OpenCode's default model as it was; "
                   "opencode.json in a project works too")


def _aider(s: ClientSettings, url: str) -> None:
    s.base_url = f"{url}/v1"
    s.env["OPENAI_API_BASE"] = s.base_url
    _key(s, "OPENAI_API_KEY")
    name = f"openai/{s.model}"
    if s.limits:
        metadata = {"max_tokens": s.limits.output, "max_input_tokens": s.limits.compact_at,
                    "max_output_tokens": s.limits.output, "litellm_provider": "openai",
                    "mode": "chat"}
        s.edits.append(ConfigEdit("~/.aider.model.metadata.json", "json",
                                  (((name,), metadata),)))
    s.command = ["aider", "--model", name]
    s.notes.append("openai/ makes aider use its OpenAI-compatible client; the model metadata "
                   "file gives it the window, which sizes its chat-history summaries")


def _openai_sdk(s: ClientSettings, url: str) -> None:
    s.base_url = f"{url}/v1"
    s.env["OPENAI_BASE_URL"] = s.base_url
    _key(s, "OPENAI_API_KEY")
    m = json.dumps(s.model)
    s.example = ("from openai import OpenAI\n\n"
                 "client = OpenAI()  # reads OPENAI_BASE_URL and OPENAI_API_KEY\n"
                 f"chat = client.chat.completions.create(model={m}, max_tokens=256, "
                 'messages=[{"role": "user", "content": "hi"}])\n'
                 f'reply = client.responses.create(model={m}, input="hi", '
                 "max_output_tokens=256)\n")
    s.command = ["python3", "example.py"]
    if s.limits:
        s.notes.append(f"the window is {s.limits.context:,} tokens: keep prompt + max_tokens "
                       "within it (the gateway answers 400 past it)")


_BUILDERS = {Agent.CLAUDE_CODE: _claude_code, Agent.CODEX: _codex, Agent.OPENCODE: _opencode,
             Agent.AIDER: _aider, Agent.OPENAI_SDK: _openai_sdk}
