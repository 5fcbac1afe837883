"""`python` in a command means this interpreter on this machine, and stays as written on a
node over ssh: one rule (hosts/python.py) for serving, start scripts and the flag check."""

from __future__ import annotations

import sys

from sm121.hosts.python import interpreter, python_module, this_python


def test_python_is_this_interpreter_here_only() -> None:
    assert this_python(["python", "-m", "vllm"]) == [sys.executable, "-m", "vllm"]
    assert this_python(["python", "-m", "vllm"], on_this_machine=False) == ["python", "-m", "vllm"]
    assert this_python(["vllm", "serve"]) == ["vllm", "serve"]
    assert this_python(["/opt/py/bin/python", "-V"]) == ["/opt/py/bin/python", "-V"]
    assert python_module("sm121.gateway", "g.json") == [sys.executable, "-m", "sm121.gateway",
                                                        "g.json"]
    assert interpreter() == sys.executable
    assert interpreter(on_this_machine=False, elsewhere="python3") == "python3"
