"""`retrieval`: needles at depths with distractor codes (`scenario.Retrieval`)."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("models", "scenario")
