"""`sm121 connect` end to end: the real CLI (its own process) against a real gateway in front
of the session's real tiny vLLM engine. The context window handed over is the engine's own
(max_model_len from /v1/models, through the gateway); the probe's one-token requests are
answered by the engine on each agent's protocol; and what `eval "$(sm121 connect ...
--shell)"` leaves in a real bash drives the real client library to a real answer."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator

import pytest
from support import SM121, TinyEngine, run_cli
from support.gateway_process import spawned_gateway

pytestmark = pytest.mark.integration

ANTHROPIC_CLIENT = """\
import os, anthropic
client = anthropic.Anthropic(base_url=os.environ["ANTHROPIC_BASE_URL"], api_key=None,
                             auth_token=os.environ["ANTHROPIC_AUTH_TOKEN"], max_retries=0)
reply = client.messages.create(model=os.environ["ANTHROPIC_DEFAULT_SONNET_MODEL"], max_tokens=4,
                               messages=[{"role": "user", "content": "hi"}])
print("output_tokens", reply.usage.output_tokens)
"""

OPENAI_CLIENT = """\
import openai
client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY, as eval left them
reply = client.responses.create(model="tiny", input="hi", max_output_tokens=4)
print("output_tokens", reply.usage.output_tokens)
"""


@pytest.fixture(scope="module")
def gateway_url(tiny_engine: TinyEngine, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[str]:
    with spawned_gateway(tmp_path_factory.mktemp("gateway-connect"), "--upstream",
                         tiny_engine.base_url, "--recipe", "tiny-cpu",
                         ready="/v1/models") as gateway:
        yield gateway.url


def _engine_window(tiny_engine: TinyEngine) -> int:
    import urllib.request

    with urllib.request.urlopen(f"{tiny_engine.base_url}/v1/models", timeout=10) as response:
        return int(json.load(response)["data"][0]["max_model_len"])


@pytest.mark.parametrize("agent", ["claude-code", "codex", "opencode"])
def test_the_probe_and_the_limits_come_from_the_real_engine(
        gateway_url: str, tiny_engine: TinyEngine, agent: str) -> None:
    settings = json.loads(run_cli("connect", gateway_url, "--agent", agent, "--json",
                                  timeout=120).stdout)
    window = _engine_window(tiny_engine)
    assert settings["limits"]["context"] == window
    limits = settings["limits"]
    assert limits["compact_at"] + limits["output"] + limits["headroom"] == window
    assert all(p["ok"] and p["status"] == 200 for p in settings["probe"]), settings["probe"]
    paths = {"claude-code": ["/v1/messages", "/v1/messages/count_tokens"],
             "codex": ["/v1/responses"], "opencode": ["/v1/chat/completions"]}[agent]
    assert [p["path"] for p in settings["probe"]] == paths


@pytest.mark.parametrize(("agent", "client"), [("claude-code", ANTHROPIC_CLIENT),
                                               ("openai-sdk", OPENAI_CLIENT)])
def test_eval_of_the_shell_form_drives_the_real_client(gateway_url: str, agent: str,
                                                       client: str) -> None:
    connect = shlex.join([*SM121, "connect", gateway_url, "--agent", agent, "--shell"])
    script = f'eval "$({connect})" || exit 9\nexec {shlex.quote(sys.executable)} -c "$CLIENT"\n'
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=180,
                            env={**_clean_env(), "CLIENT": client})
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.split("output_tokens", 1)[1]) >= 1


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_CODE_"))}
