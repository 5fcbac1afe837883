"""`sm121 tune`: the profile for this hardware and this workload, chosen by measured capacity
(arms that change one scheduler knob at a time, each's N* bracketed by bisection on one boot,
the long prefill priced in the agents runs) and written into the user's own copy of the
recipe."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("request", "result", "run")
