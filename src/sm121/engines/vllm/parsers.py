"""The parser names a vLLM version knows: tool-call parsers, reasoning parsers, tokenizer modes.

A recipe names them with `tool-call-parser`, `reasoning-parser` and `tokenizer-mode`; a name
the engine does not know makes vLLM refuse to boot, which on a cluster is found out 20 minutes
in. The names ship as package data, one file per engine version
(`data/vllm-parsers-MAJOR.MINOR.txt`), so a laptop planning for a cluster checks them without
vLLM installed. A file read from an engine's own registries is `complete` (an unknown name
is an error); a list marked incomplete (e.g. gathered from release notes) only warns. The 0.21
file was read from the 0.21.0 wheel's source (the GPU testbed's engine, a CUDA build that does
not import here). Regenerate from an installed vLLM with:

    python -m sm121.engines.vllm.parsers > src/sm121/engines/data/vllm-parsers-0.32.txt
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

TOOL_CALL_PARSER = "tool-call-parser"
REASONING_PARSER = "reasoning-parser"
TOKENIZER_MODE = "tokenizer-mode"
PARSER_FLAGS = (TOOL_CALL_PARSER, REASONING_PARSER, TOKENIZER_MODE)

_VERSION = re.compile(r"(\d+)\.(\d+)")
_SECTION = re.compile(r"^\[([a-z-]+)\]$")


@dataclass(frozen=True)
class ParserNames:
    """The names one engine version registers, and where the list came from."""

    version: str  # MAJOR.MINOR
    complete: bool  # generated from the installed engine's own registries
    source: str
    names: dict[str, frozenset[str]]  # flag -> names

    def known(self, flag: str) -> frozenset[str]:
        return self.names.get(flag, frozenset())


def minor_version(engine_version: str | None) -> str | None:
    """`0.21.1rc1.dev339 + DSpark overlay` -> `0.21`; None when no version is given."""
    match = _VERSION.search(engine_version or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None


def parser_names(engine_version: str | None) -> ParserNames | None:
    """The known names for this engine version, or None when sm121 has no list for it."""
    version = minor_version(engine_version)
    return _load(version) if version else None


@cache
def _load(version: str) -> ParserNames | None:
    path = resources.files("sm121.engines").joinpath(f"data/vllm-parsers-{version}.txt")
    if not path.is_file():
        return None
    return parse_parser_file(version, path.read_text())


def parse_parser_file(version: str, text: str) -> ParserNames:
    names: dict[str, set[str]] = {}
    section: str | None = None
    complete, source = False, ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# complete:"):
            complete = line.split(":", 1)[1].strip() == "yes"
        elif line.startswith("# source:"):
            source = line.split(":", 1)[1].strip()
        elif not line or line.startswith("#"):
            continue
        elif match := _SECTION.match(line):
            section = match.group(1)
            names.setdefault(section, set())
        elif section is not None:
            names[section].add(line)
    return ParserNames(version, complete, source,
                       {flag: frozenset(values) for flag, values in names.items()})


def _read_from_installed_vllm() -> list[str]:
    from typing import get_args

    from vllm import __version__
    from vllm.config.model import TokenizerMode
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    sections = {
        TOOL_CALL_PARSER: ToolParserManager.list_registered(),
        REASONING_PARSER: ReasoningParserManager.list_registered(),
        TOKENIZER_MODE: list(get_args(TokenizerMode)),
    }
    lines = [f"# vllm {__version__}: parser names registered by the installed engine",
             "# complete: yes",
             "# source: python -m sm121.engines.vllm.parsers (vLLM's ToolParserManager, "
             "ReasoningParserManager and TokenizerMode)"]
    for flag, values in sections.items():
        lines += ["", f"[{flag}]", *sorted(values)]
    return lines


if __name__ == "__main__":
    print("\n".join(_read_from_installed_vllm()))
