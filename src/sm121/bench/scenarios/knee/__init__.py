"""`knee`: the prefill knee and decode saturation on one engine (`scenario.Knee`)."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("models", "nearest_step", "on_recipe", "scenario")
