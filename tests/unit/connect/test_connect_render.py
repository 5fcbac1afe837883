"""`sm121 connect`'s settings per agent, as each consumer reads them: bash for the shell
lines, tomllib and json for the config fragments. Pure: an Endpoint value, no network (the
same settings drive the real client libraries in tests/unit/gateway/test_connect.py)."""

from __future__ import annotations

import json
import subprocess
import tomllib

import pytest

from sm121.connect.agents import Agent, ClientSettings, limits_for, settings
from sm121.connect.endpoint import Endpoint, ServedModel, choose_model, endpoint_url, looks_like_url
from sm121.connect.render import blocks, checked, fragment, shell_lines, toml_text
from sm121.errors import Sm121Error

URL = "http://127.0.0.1:8100"


def _settings(agent: Agent, keyed: bool = False, context: int | None = 65536) -> ClientSettings:
    endpoint = Endpoint(URL, [ServedModel("org/coder-7b:q4", context)], keyed, "MYKEY")
    return settings(agent, endpoint, endpoint.models[0])


def _bash_env(lines: list[str], *names: str, env: dict[str, str] | None = None) -> list[str]:
    """What bash has in `names` after eval of the lines."""
    script = "\n".join(lines) + "\n" + "".join(f'echo "{n}=${{{n}-unset}}"\n' for n in names)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", **(env or {})}).stdout
    return out.splitlines()


def test_the_limits_leave_room_for_the_reply() -> None:
    assert limits_for(65536) is not None and limits_for(65536).__dict__ == {
        "context": 65536, "output": 16384, "headroom": 8192, "compact_at": 40960}
    assert limits_for(1_000_000).output == 32_768  # type: ignore[union-attr]
    assert limits_for(None) is None


def test_claude_code_gets_the_window_the_output_limit_and_every_alias() -> None:
    s = _settings(Agent.CLAUDE_CODE)
    got = _bash_env(shell_lines(s), "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
                    "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
                    "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL",
                    "CLAUDE_CODE_AUTO_COMPACT_WINDOW", "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
                    "ANTHROPIC_API_KEY", env={"ANTHROPIC_API_KEY": "sk-stale"})
    model = "org/coder-7b:q4"
    assert got == [f"ANTHROPIC_BASE_URL={URL}", f"ANTHROPIC_MODEL={model}",
                   f"ANTHROPIC_DEFAULT_SONNET_MODEL={model}",
                   f"ANTHROPIC_DEFAULT_OPUS_MODEL={model}",
                   f"ANTHROPIC_DEFAULT_HAIKU_MODEL={model}",
                   f"CLAUDE_CODE_SUBAGENT_MODEL={model}",
                   "CLAUDE_CODE_AUTO_COMPACT_WINDOW=65536", "CLAUDE_CODE_MAX_OUTPUT_TOKENS=16384",
                   "ANTHROPIC_API_KEY=unset"]
    env = json.loads(fragment(s.edits[0]))["env"]
    assert env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "65536" and env["ANTHROPIC_AUTH_TOKEN"] == "sm121"


def test_a_keyed_endpoint_puts_no_key_reference_in_any_file() -> None:
    """The key reaches the agent through the shell ("$MYKEY" expanded there), never as text
    in a settings file: a literal "$MYKEY" in settings.json would be sent as the key."""
    for agent in Agent:
        s = _settings(agent, keyed=True)
        for edit in s.edits:
            assert "$MYKEY" not in fragment(edit) and "SECRET" not in fragment(edit)
        got = _bash_env(shell_lines(s), *s.env_from, env={"MYKEY": "SECRET"})
        assert all(line.endswith("=SECRET") for line in got)
        assert not any("SECRET" in line for line in shell_lines(s))
    opencode = json.loads(fragment(_settings(Agent.OPENCODE, keyed=True).edits[0]))
    assert opencode["provider"]["sm121"]["options"]["apiKey"] == "{env:MYKEY}"  # OpenCode's own


def test_codex_gets_a_named_profile_and_the_window_on_its_command_line() -> None:
    s = _settings(Agent.CODEX, keyed=True)
    config = tomllib.loads(fragment(s.edits[0]))
    assert "model" not in config and "model_provider" not in config  # the default is untouched
    assert config["profiles"]["sm121"] == {"model": "org/coder-7b:q4", "model_provider": "sm121"}
    assert config["model_providers"]["sm121"] == {
        "name": "sm121", "base_url": f"{URL}/v1", "wire_api": "responses", "env_key": "MYKEY"}
    assert s.command == ["codex", "--profile", "sm121", "-c", "model_context_window=65536",
                         "-c", "model_auto_compact_token_limit=40960"]
    assert "env_key" not in tomllib.loads(fragment(_settings(Agent.CODEX).edits[0])
                                          )["model_providers"]["sm121"]


def test_opencode_gets_limit_context_and_output_in_its_provider() -> None:
    s = _settings(Agent.OPENCODE)
    config = json.loads(fragment(s.edits[0]))
    assert "model" not in config  # the default model is untouched: --model on the command
    model = config["provider"]["sm121"]["models"]["org/coder-7b:q4"]
    assert model["limit"] == {"context": 65536 - 8192, "output": 16384}  # compacts at 40960
    assert s.command == ["opencode", "--model", "sm121/org/coder-7b:q4"]


def test_aider_gets_model_metadata_under_its_openai_name() -> None:
    s = _settings(Agent.AIDER)
    metadata = json.loads(fragment(s.edits[0]))
    assert metadata == {"openai/org/coder-7b:q4": {
        "max_tokens": 16384, "max_input_tokens": 40960, "max_output_tokens": 16384,
        "litellm_provider": "openai", "mode": "chat"}}
    assert _bash_env(shell_lines(s), "OPENAI_API_BASE") == [f"OPENAI_API_BASE={URL}/v1"]


@pytest.mark.parametrize("agent", list(Agent))
def test_without_a_served_window_no_limit_is_invented(agent: Agent) -> None:
    s = _settings(agent, context=None)
    text = "\n".join(blocks(s, "sm121 connect X --shell"))
    assert "65536" not in text and "AUTO_COMPACT" not in text and "limit" not in text.split(
        "# --- notes")[0]
    assert any("does not say its context window" in note for note in s.notes)


@pytest.mark.parametrize("agent", list(Agent))
def test_eval_of_the_shell_lines_starts_nothing(agent: Agent) -> None:
    """The agent's command is a comment in the shell form: eval only sets variables."""
    lines = shell_lines(_settings(agent))
    assert lines[-1].startswith("# then run: ")
    assert all(line.startswith(("# ", "export ", "unset ")) for line in lines)


def test_a_control_character_in_any_printed_line_refuses_the_output() -> None:
    with pytest.raises(Sm121Error, match="control character"):
        checked(["# fine", "# run X\nexport EVIL=1"])


def test_an_endpoint_model_id_outside_the_rule_is_refused_by_name() -> None:
    endpoint = Endpoint(URL, [ServedModel("m`id`", 4096), ServedModel("ok", 4096)], False, "K")
    with pytest.raises(Sm121Error) as refused:
        choose_model(endpoint, None)
    assert "'m`id`'" in refused.value.message and "letter or digit" in refused.value.hint
    assert choose_model(endpoint, "ok").id == "ok"


def test_host_port_is_a_url_and_a_run_id_is_not() -> None:
    assert looks_like_url("127.0.0.1:18765") and looks_like_url("localhost:8100/")
    assert looks_like_url("[::1]:8100") and not looks_like_url("tiny-cpu-agent-20261203-1")
    assert endpoint_url("127.0.0.1:18765") == "http://127.0.0.1:18765"
    assert endpoint_url("http://h:1/v1/") == "http://h:1"
    for bad in ("http://u:p@h:1", "http://h:1/?q=1", "http://h:1/$(id)", "http://h:1/ x", "http://"):
        with pytest.raises(Sm121Error):
            endpoint_url(bad)


def test_the_toml_writer_is_proven_by_reading_it_back() -> None:
    tree = {"model_providers": {"sm121": {"name": "a \"b\"\n", "n": 3, "on": True,
                                          "http_headers": {"X-Y": "z"}}}, "odd.key": {"k": "v"}}
    assert tomllib.loads(toml_text(tree)) == tree
