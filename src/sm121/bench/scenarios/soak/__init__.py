"""`sm121 bench soak`: agents against an endpoint for hours, reported every interval as JSONL
(`runner.run_soak`); `scenario.Soak` is its table entry."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("records", "runner", "scenario")
