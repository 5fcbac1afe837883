"""`python -m sm121.gateway CONFIG.json`: see sm121.gateway.entry."""

import sys

from sm121.gateway.entry import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
