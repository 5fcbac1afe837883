"""The command table in cli/commands.py: every command is listed in `sm121 --help`, a
command imports only its own module, and `sm121 --help` (in a process of its own) never
imports aiohttp, whose import alone took seconds on a saturated host."""

from __future__ import annotations

import json
import subprocess
import sys

from support import invoke_cli

from sm121.cli.commands import COMMANDS


def test_help_lists_every_command_of_the_table() -> None:
    out = invoke_cli("--help").stdout
    for command in COMMANDS:
        assert command in out


def _loaded_after(args: list[str]) -> tuple[str, list[str]]:
    """Run the real entry point in a fresh process: its output, and the modules it loaded
    (-X importtime misses modules loaded through importlib, as the command table does)."""
    code = ("import json, sys\nfrom sm121.cli.main import main\ntry:\n"
            f"    main({args!r})\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)
    out, _, last = result.stdout.rstrip().rpartition("\n")
    return out, json.loads(last)


def test_help_imports_no_aiohttp() -> None:
    out, loaded = _loaded_after(["--help"])
    assert "serve" in out and "gateway" in out
    assert "sm121.cli.gateway" in loaded  # every command was built for its line of help
    assert not [name for name in loaded if name.split(".")[0] == "aiohttp"]


def test_a_command_imports_only_its_own_module() -> None:
    _, loaded = _loaded_after(["recipes", "list", "--json"])
    cli = {name for name in loaded if name.startswith("sm121.cli.")}
    assert "sm121.cli.recipes" in cli
    assert not {"sm121.cli.bench", "sm121.cli.gateway", "sm121.cli.serve"} & cli
