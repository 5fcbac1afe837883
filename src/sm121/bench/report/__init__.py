"""`sm121 bench report`: the Markdown (`markdown`), what scenario sections share
(`sections`), the plots, number and table formatting, and the A/B comparison (`compare`)."""
