"""`probe`: can this server's streams be counted to the token (`scenario.Probe`)?"""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("run", "scenario")
