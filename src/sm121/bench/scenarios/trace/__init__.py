"""`trace`: replay a public request trace (Mooncake's format) on its timestamps, with prompts
whose shared blocks are the same tokens, so the engine's prefix cache sees the trace's reuse
(`scenario.Trace`)."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("models", "scenario")
