"""The command table in cli/commands.py: every command is listed in `sm121 --help`, a
command imports only its own module, and `sm121 --help` (a real process) never imports
aiohttp, whose import alone took seconds on a saturated host."""

from __future__ import annotations

import json
import subprocess
import sys

from support import SM121, invoke_cli

from sm121.cli.commands import COMMANDS


def test_help_lists_every_command_of_the_table() -> None:
    out = invoke_cli("--help").stdout
    for command in COMMANDS:
        assert command in out


def test_help_imports_no_aiohttp() -> None:
    result = subprocess.run([sys.executable, "-X", "importtime", *SM121[1:], "--help"],
                            capture_output=True, text=True, timeout=120, check=True)
    assert "serve" in result.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "sm121.cli.gateway" in {name.strip() for name in imported}  # the walk saw them all
    assert not [name for name in imported if name.split(".")[0] == "aiohttp"]


def test_a_command_imports_only_its_own_module() -> None:
    code = ("import json, sys\nfrom sm121.cli.main import main\ntry:\n"
            "    main(['recipes', 'list', '--json'])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('sm121.cli.'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert "sm121.cli.recipes" in loaded
    assert not {"sm121.cli.bench", "sm121.cli.gateway", "sm121.cli.serve"} & set(loaded)
