"""The gateway as a process of its own: `python -m sm121.gateway CONFIG.json`.

What a launcher (serve --gateway) decides goes into a GatewayConfig, written as JSON without
its secrets; this entry point reads it back, takes the API keys from the environment (as the
`sm121 gateway` command does), and serves until SIGTERM. So the library starts a gateway from
a config value, never through the CLI's argv."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sm121.errors import Sm121Error
from sm121.gateway.api_keys import KEYS_ENV, UPSTREAM_KEY_ENV, load_api_keys
from sm121.gateway.config import GatewayConfig
from sm121.gateway.session_table import SessionSettings

SECRETS = ("api_keys", "upstream_api_key")  # never on disk: read from the environment
_CONFIG = TypeAdapter(GatewayConfig)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def write_config(config: GatewayConfig, path: Path) -> None:
    data = _CONFIG.dump_python(config, mode="json", exclude=set(SECRETS))
    path.write_text(json.dumps(data, indent=2) + "\n")
    os.chmod(path, 0o600)


def read_config(path: Path, env: Mapping[str, str] | None = None) -> GatewayConfig:
    """The config a launcher wrote, with the keys of `env` (default: this process's)."""
    source = os.environ if env is None else env
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise Sm121Error(f"cannot read the gateway config {path}: {exc}",
                         "it is written by `sm121 serve --gateway`; serve again") from exc
    data["api_keys"] = load_api_keys(None, source.get(KEYS_ENV, ""))
    data["upstream_api_key"] = source.get(UPSTREAM_KEY_ENV)
    try:
        return _CONFIG.validate_python(data)
    except ValidationError as exc:
        raise Sm121Error(f"the gateway config {path} is not valid: {exc.errors()[0]['msg']}",
                         "it is written by `sm121 serve --gateway`; serve again") from exc


def ready_lines(config: GatewayConfig) -> list[str]:
    """What a started gateway says about itself (its log's first lines)."""
    lines = [f"gateway on {config.base_url}; routing: {config.routing.mode}; API keys: "
             f"{len(config.api_keys) or 'none'}; capture: {config.capture.directory or 'off'}",
             sessions_line(config.sessions)]
    for spec in config.upstreams:
        rules = ", ".join(f"{rule.action.value} {name}"
                          for name, rule in spec.policy.params.items()) or "none"
        lines.append(f"  -> {spec.name}: {spec.url}; policy: {rules}; max in flight "
                     f"{spec.max_inflight}, long lane {spec.long_lane} (>= "
                     f"{spec.long_prompt_tokens:,} tokens)")
    if config.registry is not None:
        lines.append(f"  -> and the upstreams in {config.registry} (watched)")
    return lines


def sessions_line(settings: SessionSettings) -> str:
    """Whether session admission is on, and why (the log says when `auto` turns it on)."""
    knobs = (f"new sessions wait up to {settings.wait_s:g} s, idle after "
             f"{settings.idle_s:g} s")
    if settings.mode == "off":
        return "  session admission: off (--sessions off): every session is admitted"
    if settings.count is not None:
        return (f"  session admission: on, at most {settings.count} active sessions per "
                f"replica (--sessions {settings.count}); {knobs}")
    return (f"  session admission: auto: on once every upstream reports its KV pool (block "
            f"count and size), the active sessions' working sets then fit the pool less "
            f"{settings.reserve:.0%}; {knobs}; see /sm121/sessions")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m sm121.gateway CONFIG.json", file=sys.stderr)
        return 2
    from sm121.gateway.app import serve_forever  # aiohttp: only once there is a config

    try:
        config = read_config(Path(argv[0]))
    except Sm121Error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)

    def ready() -> None:
        for line in ready_lines(config):
            print(line, file=sys.stderr, flush=True)

    serve_forever(config, on_ready=ready)
    return 0
