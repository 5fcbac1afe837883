"""How long the suite waits for engine boots: one place, from what boots took on the testbed.

The tiny engine's boot to its first generation (`sm121 serve tiny-cpu`, startup-history):
- about 50-90 s on a quiet 2-core host (52.6 s cold on 2026-12-01; `make demo`'s 88 s);
- 437-784 s under the suite's own load on the shared 2-core testbed, and once 13 minutes;
  a 600 s readiness timeout (the recipe's) failed whole runs twice.
A timeout here is there to end a hung run, not to judge speed: it sits at about twice the
slowest boot seen. At the end of a session the conftest prints this session's boot times
(`engine boots this session`), so these can follow the distribution as it moves.

Waits that are not boots (an HTTP request, a bench scenario against a running engine) stay
beside their test: they depend on what that test sends, not on the host."""

from __future__ import annotations

BOOT_S = 1500
"""`serve --timeout`: readiness wait for one tiny boot (single node)."""

CLI_MARGIN_S = 120
"""What a serve command needs beyond its readiness wait: its own start, the model's first
write, the stop of a failed boot."""

SERVE_S = BOOT_S + CLI_MARGIN_S
"""Subprocess limit around a command that boots one engine and waits for it."""

FAILED_BOOT_S = 600
"""A boot refused by vLLM itself (bad engine args): imports and config, no model run."""

FLAGS_S = 900
"""`sm121 engine flags`: a vLLM import and `--help=all`, as long as a boot's first phase under
load."""


def serves(boots: int, work_s: float = 0) -> float:
    """Subprocess limit around a command that boots `boots` engines one after the other (an
    A/B: one per profile) and does `work_s` of work besides."""
    return boots * SERVE_S + work_s
