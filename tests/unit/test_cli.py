"""The command line as a user sees it: output, --json, errors without tracebacks."""

from __future__ import annotations

import json

from support import invoke_cli


def test_plan_ds4_agent_prints_the_field_values() -> None:
    out = invoke_cli("plan", "deepseek-v4-flash-eugr-agent", "--profile", "agent").stdout
    assert "needs 2 nodes and no cluster file was given" in out  # whole, never wrapped
    # A recipe's args render as one token each (no value can become an argv token).
    for expected in ("--max-num-batched-tokens=2048", "--max-num-seqs=6",
                     "--max-cudagraph-capture-size=36", "--gpu-memory-utilization=0.78",
                     "--max-model-len=1048576"):
        assert expected in out, expected


def test_plan_json_is_valid_json() -> None:
    out = invoke_cli("plan", "deepseek-v4-flash-eugr-agent", "--profile", "agent", "--json").stdout
    plan = json.loads(out)
    assert plan["engine_args"]["max-cudagraph-capture-size"] == 36
    assert len(plan["nodes"]) == 2
    assert plan["request_policy"]["params"]["repetition_penalty"]["action"] == "strip"


def test_plan_set_override() -> None:
    out = invoke_cli("plan", "tiny-cpu", "--profile", "agent", "--set", "max-num-seqs=3",
                  "--json").stdout
    assert json.loads(out)["engine_args"]["max-num-seqs"] == 3


def test_bad_set_value_is_a_clear_error() -> None:
    result = invoke_cli("plan", "tiny-cpu", "--set", "max-num-seqs", check=False)
    assert result.returncode == 2
    assert "not key=value" in result.stderr and "Traceback" not in result.stderr


def test_error_exit_code_and_hint_without_traceback() -> None:
    result = invoke_cli("plan", "deepseek-v4-flash-eugr-agent", "--profile", "agent", "--set",
                     "gpu-memory-utilization=0.80", check=False)
    assert result.returncode == 2
    assert "gpu-memory-utilization" in result.stderr and "<= 0.78" in result.stderr
    assert "Traceback" not in result.stderr


def test_recipes_list_and_show() -> None:
    rows = json.loads(invoke_cli("recipes", "list", "--json").stdout)
    assert {"tiny-cpu", "glm-5.2"} <= {r["name"] for r in rows}
    shown = json.loads(invoke_cli("recipes", "show", "glm-5.2", "--json").stdout)
    assert shown["parallelism"]["dcp"] == 4
    assert shown["args"]["load-format"] == "instanttensor"


def test_recipes_diff_marks_differing_args() -> None:
    data = json.loads(invoke_cli("recipes", "diff", "deepseek-v4-flash-eugr-agent", "--profiles",
                              "agent,batch", "--json").stdout)
    by_arg = {row["arg"]: row for row in data["args"]}
    assert by_arg["max-num-batched-tokens"]["differs"] is True
    assert (by_arg["max-num-batched-tokens"]["agent"], by_arg["max-num-batched-tokens"]["batch"]) \
        == (2048, 8192)
    assert by_arg["max-num-seqs"]["differs"] is False


def test_help_explains_commands() -> None:
    out = invoke_cli("--help").stdout
    for command in ("recipes", "plan", "serve", "status", "logs", "stop"):
        assert command in out


def test_serve_warns_of_an_engine_open_to_the_network_without_a_key() -> None:
    """`serve --host 0.0.0.0` with no VLLM_API_KEY: anyone who reaches the port may use the
    engine, and the plan says so; loopback, or a key, keeps quiet."""
    from typer.testing import CliRunner

    from sm121.cli.main import app

    def said(host: str, key: str) -> str:
        result = CliRunner().invoke(app, ["serve", "tiny-cpu", "--host", host, "--dry-run"],
                                    env={"VLLM_API_KEY": key})
        assert result.exit_code == 0, result.output
        return result.output

    warned = said("0.0.0.0", "")
    assert "listens on 0.0.0.0:8000 without an API key" in warned
    assert "export VLLM_API_KEY" in warned
    assert "without an API key" not in said("0.0.0.0", "k-123")
    assert "without an API key" not in said("127.0.0.1", "")
