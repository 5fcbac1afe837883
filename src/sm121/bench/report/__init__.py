"""`sm121 bench report`: the Markdown (`markdown`), what scenario sections share
(`sections`), the plots, number and table formatting, and the A/B comparison (`compare`)."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("compare", "format", "markdown", "plots", "sections")
