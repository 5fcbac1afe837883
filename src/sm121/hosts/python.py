"""What `python` means in a command: on this machine, the interpreter that runs sm121 (the
one that has the engine installed); on another node, whatever `python` is there.

The one owner of that rule: serving, the start scripts, the flag check and the gateway
launcher all ask here."""

from __future__ import annotations

import sys
from collections.abc import Sequence

PYTHON = "python"


def this_python(argv: Sequence[str], on_this_machine: bool = True) -> list[str]:
    """argv with a leading `python` made this interpreter when it runs on this machine."""
    if on_this_machine and argv and argv[0] == PYTHON:
        return [interpreter(), *argv[1:]]
    return list(argv)


def interpreter(on_this_machine: bool = True, elsewhere: str = PYTHON) -> str:
    """The Python to run: this one here, `elsewhere` (as the node names it) on a node."""
    return sys.executable if on_this_machine else elsewhere


def python_module(module: str, *args: str) -> list[str]:
    """`python -m MODULE ARGS` as it runs on this machine."""
    return this_python([PYTHON, "-m", module, *args])
