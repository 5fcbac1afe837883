"""Stranger strings in the Markdown tables two helper scripts print from results files:
scripts/gpu/protocols_table.py (`sm121 bench agents` runs, one row per protocol) and
benchmarks/sessions_summary.py (a session-admission A/B's folder). Each run as its callers run
it, on committed results with the strings a stranger controls replaced; the output is read as
bytes and as GitHub reads it (tests/support/markdown_checks.py). Normal results come out as
the committed summaries (docs/results/cpu-testbed/sessions/summary.md)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from support.hostile_text import HOSTILE
from support.markdown_checks import START, STRANGER, check_bytes, check_rendered

from sm121.display import escape

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "docs" / "results" / "gpu-h200" / "agent-check" / "agents"
SESSIONS = ROOT / "docs" / "results" / "cpu-testbed" / "sessions"
# A run's name is its file's: a digit, one `-`, no `.` or `/` (the script's own filter)
RUN = "1-" + HOSTILE["pipe"] + HOSTILE["html"].replace("/", "") + HOSTILE["osc-title"] + \
    HOSTILE["code"] + HOSTILE["emphasis"] + "\n# heading"


def _script(path: Path, *args: str) -> str:
    result = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_protocols_table_writes_a_results_files_strings_as_text(tmp_path: Path) -> None:
    data = json.loads((AGENTS / "agents-chat.json").read_text())
    data.update(api=STRANGER, status=STRANGER)
    data["summary"].update(agents=STRANGER, usage_checked=STRANGER, events_match_usage=STRANGER)
    data["summary"]["slo"]["slo"] = STRANGER
    path = tmp_path / "agents-chat.json"
    path.write_text(json.dumps(data))
    normal = AGENTS / "agents-messages.json"
    text = check_bytes(_script(ROOT / "scripts" / "gpu" / "protocols_table.py", str(path),
                               str(normal)).encode())
    check_rendered(text, set(), escape(STRANGER, None))
    assert text.startswith(f"SLO {START}") and f"\n| {START}" in text
    assert "\n| messages | 8 | 48 | 48/48 | 48/48 | 100.0% | 0.218 s |" in text


def test_sessions_summary_writes_a_folders_strings_as_text(tmp_path: Path) -> None:
    for suffix in (".json.gz", "-engine-before.prom.gz", "-engine-after.prom.gz"):
        shutil.copyfile(SESSIONS / f"2-auto{suffix}", tmp_path / f"2-auto{suffix}")
        shutil.copyfile(SESSIONS / f"1-off{suffix}", tmp_path / f"{RUN}{suffix}")
    data = json.loads(gzip.decompress((tmp_path / f"{RUN}.json.gz").read_bytes()))
    for sample in data["samples"]:  # every session's agent id a stranger's
        if "agent" in sample:
            sample["agent"] = f"{STRANGER} {sample['agent']}"
    (tmp_path / f"{RUN}.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    text = check_bytes(_script(ROOT / "benchmarks" / "sessions_summary.py",
                               str(tmp_path)).encode())
    check_rendered(text, set(), escape(STRANGER, None))
    assert f"\n| {START}" in text and "\n| 1-a\\|b&lt;img src=x" in text
    assert "\n**1-a\\|b&lt;img src=x onerror=alert(1)&gt;\\x1b]0;pwn\\x07\\`open code" in text
    committed = (SESSIONS / "summary.md").read_text()
    assert "\n| 2-auto | 40 | 37 | 29.0 | 76.6 | 1.11 s | 96.4% | 81.4% | 0 |" in committed
    assert "\n| 2-auto | 40 | 37 | 29.0 | 76.6 | 1.11 s | 96.4% | 81.4% | 0 |" in text
