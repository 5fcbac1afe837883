"""`decode-scaling` and `prefill-scaling`: N concurrent requests for each N."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("models", "run", "scenario")
