"""The `stage-check` hook (before_serve): a node starts only when its staged copy of the model
is the one `sm121 stage` verified: every file present with the size and mtime it had when its
sha256 was checked against the source's (SM121_STAGE_CHECK=full checksums every file again
now). SM121_STAGE_CHECK=warn lets a node with a bad or missing copy start anyway, with the
finding in the hook's message."""

from __future__ import annotations

import os
from typing import Literal

from sm121.hosts.transport import Transport
from sm121.stage.files import checksums, list_files
from sm121.stage.manifest import find_manifest, mismatches

CheckStatus = Literal["ok", "skipped", "failed"]
MODES = ("quick", "full", "warn")


def stage_check(transport: Transport, hf_cache: str, repo: str,
                revision: str | None) -> tuple[CheckStatus, str]:
    mode = os.environ.get("SM121_STAGE_CHECK", "quick")
    if mode not in MODES:
        return "failed", f"SM121_STAGE_CHECK={mode}: use one of {', '.join(MODES)}"
    problem, summary = _problem(transport, hf_cache, repo, revision, full=mode == "full")
    if problem is None:
        return "ok", summary
    if mode == "warn":
        return "skipped", f"{problem} (SM121_STAGE_CHECK=warn: started anyway)"
    return "failed", (f"{problem}; run `sm121 stage RECIPE --cluster FILE` (it copies only what "
                      "is missing), or set SM121_STAGE_CHECK=warn to start anyway")


def _problem(transport: Transport, hf_cache: str, repo: str, revision: str | None,
             full: bool) -> tuple[str | None, str]:
    manifest = find_manifest(transport, hf_cache, repo, revision)
    if manifest is None or manifest.weights is None:
        return f"no staged copy of {repo} in {hf_cache}", ""
    weights = manifest.weights
    expected = {n: f.sha256 for n, f in weights.files.items()}
    present = list_files(transport, weights.folder)
    bad = mismatches(weights, expected, present)
    if not bad and full:
        now = checksums(transport, weights.folder, sorted(expected))
        bad = sorted(n for n in expected if now[n] != expected[n])
    if bad:
        return (f"the staged copy in {weights.folder} does not match its verified checksums: "
                f"{len(bad)} file(s) changed or missing ({', '.join(bad[:3])})"), ""
    how = "sha256 checked now" if full else "unchanged since their sha256 was verified"
    return None, (f"staged copy {weights.folder}: {len(weights.files)} files, "
                  f"{weights.bytes / 1e9:.2f} GB, {how}")
