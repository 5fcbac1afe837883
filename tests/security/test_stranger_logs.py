"""`sm121 logs` and an engine log that holds strangers' strings (what the engine logged of a
prompt, a model name), through the real command line writing to a pipe (not a terminal): by
default every control character but the log's newlines and tabs is spelled out, as on a
terminal, since a pipe often ends in one (`| less -R`, `| tail`); `--raw` writes the bytes as
the engine wrote them, invalid UTF-8 included. With and without --follow.

The run is a stand-in (support/fake_run.py): the log file is this test's, the process a
`sleep` that the context stops, which ends --follow."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from support import SM121
from support.fake_run import fake_run
from support.hostile_text import TERMINAL

LINES = [f"INFO 01-01 00:00:0{i} logger.py:42] Received request: prompt {value!r}"
         for i, value in enumerate(TERMINAL.values())]
LOG = ("\n".join(["INFO\tstarting", *LINES, *TERMINAL.values(), "done"]) + "\n").encode() \
    + b"bytes \xff\xfe not UTF-8\n"


def _log(folder: Path) -> Path:
    path = folder / "engine.log"
    path.write_bytes(LOG)
    return path


def _logs(*args: str) -> bytes:
    return subprocess.run([*SM121, "logs", *args], capture_output=True, check=True,
                          timeout=120).stdout


def _check_escaped(out: bytes) -> None:
    text = out.decode()
    assert not any(c in text for c in "\x1b\x07\r\u202e\u202c\u200b"), text
    assert "\\x1b]0;pwn\\x07" in text and "a\\u202etxt" in text and "INFO\tstarting\n" in text
    # a carriage return ends its line (read as text): what it would have hidden shows below
    assert "ok\nFAKE" in text and text.count("\n") == LOG.count(b"\n") + LOG.count(b"\r")
    assert "bytes \ufffd\ufffd not UTF-8" in text  # undecodable bytes: the replacement mark


def test_logs_spells_out_control_characters_in_a_pipe_and_raw_keeps_the_bytes(
        tmp_path: Path) -> None:
    with fake_run("stranger-logs", "http://127.0.0.1:9", _log(tmp_path)) as run:
        _check_escaped(_logs(run.run_id))
        assert _logs(run.run_id, "--raw") == LOG


def _follow(run_id: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*SM121, "logs", run_id, "--follow", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_logs_follow_escapes_too_and_raw_follow_keeps_the_bytes(tmp_path: Path) -> None:
    later = b"INFO later: \x1b[2J\x1b]0;pwn again\x07\n"
    with fake_run("stranger-logs-follow", "http://127.0.0.1:9", _log(tmp_path)) as run:
        escaped, raw = _follow(run.run_id), _follow(run.run_id, "--raw")
        time.sleep(2)  # most likely both have printed the log and wait for more
        with open(run.nodes[0].log, "ab") as log:
            log.write(later)
        time.sleep(1.5)  # read every 0.5 s
    # the stand-in stopped: the run is gone and --follow ends (what a late start missed, its
    # first read has)
    outs = [p.communicate(timeout=60) for p in (escaped, raw)]
    assert [p.returncode for p in (escaped, raw)] == [0, 0], outs
    _check_escaped(outs[0][0].removesuffix(b"INFO later: \\x1b[2J\\x1b]0;pwn again\\x07\n"))
    assert outs[1][0] == LOG + later
