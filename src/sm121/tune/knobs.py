"""The scheduler knobs tune varies, as vLLM names them, and which of them an engine version
has (read from the flag list sm121 keeps for that version: bundled, or read from the
installed engine by `sm121 engine flags`)."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.engines.vllm_flags import choose

CHUNK = "max-num-batched-tokens"  # tokens one engine step may schedule
THRESHOLD = "long-prefill-token-threshold"  # a long prefill's share of one step
SEQS = "max-num-seqs"  # requests one step may hold
# Options only some versions have (vLLM 0.32: the adaptive threshold; 0.21: partial prefills).
ADAPTIVE = "long-prefill-token-threshold-adaptive"
PARTIAL = "max-num-partial-prefills"
LONG_PARTIAL = "max-long-partial-prefills"


def version_flags(engine_version: str | None) -> tuple[frozenset[str], str]:
    """(flags, the version whose list it is) for a recipe's engine.version."""
    chosen = choose(engine_version)
    return chosen.flags.flags, chosen.flags.version


def effective_step(args: Mapping[str, object]) -> int | None:
    """Tokens a long prefill gets per step: the chunk, capped by the threshold when set."""
    chunk, threshold = args.get(CHUNK), args.get(THRESHOLD)
    sizes = [int(v) for v in (chunk, threshold) if isinstance(v, int | str) and str(v).isdigit()
             and int(v) > 0]
    return min(sizes) if sizes else None
