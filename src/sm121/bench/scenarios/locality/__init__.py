"""`locality`: the cost of a mutating field by its place in the prompt (`scenario.Locality`)."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("models", "scenario")
