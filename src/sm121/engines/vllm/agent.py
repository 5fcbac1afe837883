"""The agent-facing engine settings: tool calling, reasoning, tokenizer mode, chat template.

Coding agents send `tools` in almost every request; vLLM answers such a request with 400
unless `--enable-auto-tool-choice` and `--tool-call-parser` are set. These rules catch, before
a boot: a parser name the engine version does not know, auto tool choice without a parser
(vLLM refuses to start), and a profile meant for agents that cannot take a tool call.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from sm121.engines.adapter import ForcedToolCalls
from sm121.engines.vllm.parsers import PARSER_FLAGS, TOOL_CALL_PARSER, ParserNames, parser_names
from sm121.findings import Finding
from sm121.recipes.schema import ArgValue, Recipe, Severity

AUTO_TOOL_CHOICE = "enable-auto-tool-choice"
# "agent", "agents", "agent-2048", "coding agents": the profile is for agent traffic.
_AGENT_PURPOSE = re.compile(r"\bagents?\b", re.IGNORECASE)
TOOL_CALLING_FIX = (f"add `{AUTO_TOOL_CHOICE}: true` and `{TOOL_CALL_PARSER}: NAME` (the "
                    "parser matching the model's chat template, e.g. hermes for <tool_call> "
                    "JSON) to the recipe's args or this profile")

# vLLM decodes a forced call under structured outputs: `required` by a JSON schema of an array
# of calls, a named function by that function's parameters, so no text can come first.
FORCED_CALLS = ForcedToolCalls()


def is_agent_purpose(purpose: str) -> bool:
    return bool(_AGENT_PURPOSE.search(purpose))


def has_tool_calling(args: Mapping[str, ArgValue]) -> bool:
    return args.get(AUTO_TOOL_CHOICE) is True and bool(args.get(TOOL_CALL_PARSER))


def check_parser_names(recipe: Recipe, args: Mapping[str, ArgValue], source: str,
                       field: str) -> list[Finding]:
    """Each parser name against the list of the engine version the recipe runs."""
    names = parser_names(recipe.engine.version)
    findings: list[Finding] = []
    for flag in PARSER_FLAGS:
        value = args.get(flag)
        if not isinstance(value, str) or names is None:
            continue
        if value in names.known(flag) or value in recipe.engine.extra_known_args:
            continue
        findings.append(_unknown_name(names, flag, value, source, f"{field}.{flag}"))
    return findings


def check_tool_calling(args: Mapping[str, ArgValue], purpose: str | None, source: str,
                       field: str) -> list[Finding]:
    """Merged args of one profile: a parser without auto choice is fine (named tool choice
    only); auto choice without a parser refuses to boot; an agent profile needs both."""
    if args.get(AUTO_TOOL_CHOICE) is True and not args.get(TOOL_CALL_PARSER):
        return [Finding(
            severity=Severity.ERROR, source=source, field=f"{field}.{AUTO_TOOL_CHOICE}",
            message=f"is set without {TOOL_CALL_PARSER}: vLLM refuses to start",
            fix=f"add `{TOOL_CALL_PARSER}: NAME`, or remove {AUTO_TOOL_CHOICE}",
        )]
    if purpose is not None and is_agent_purpose(purpose) and not has_tool_calling(args):
        return [Finding(
            severity=Severity.WARNING, source=source, field=field,
            message=f"this profile is for agents ({purpose!r}) but has no tool calling: every "
                    "request that carries `tools` gets HTTP 400 from vLLM",
            fix=TOOL_CALLING_FIX,
        )]
    return []


def _unknown_name(names: ParserNames, flag: str, value: str, source: str,
                  field: str) -> Finding:
    close = difflib.get_close_matches(value, sorted(names.known(flag)), n=3)
    if names.complete:
        return Finding(
            severity=Severity.ERROR, source=source, field=field,
            message=f"{value!r} is not a {flag} of vLLM {names.version}: the engine refuses to start",
            allowed=", ".join(close) if close else f"a name of `vllm serve --{flag}`",
            fix="correct the name, or list it under engine.extra_known_args for a patched build",
        )
    return Finding(
        severity=Severity.WARNING, source=source, field=field,
        message=f"{value!r} is not among the {flag} names sm121 knows for vLLM {names.version} "
                f"(a partial list assembled from vLLM's source: "
                f"engines/data/vllm-parsers-{names.version}.txt)",
        allowed=", ".join(close),
        fix="check `vllm serve --help` of that build, or list the name under "
            "engine.extra_known_args",
    )
