"""The hooks sm121 ships; any other hook is a custom command and runs only with --trust."""

BUILTIN_HOOKS = frozenset({"drop-caches", "warm-read", "stage-check"})
