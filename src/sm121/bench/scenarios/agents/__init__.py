"""`agents` and `replay` in the scenario table: thin classes over `sm121.bench.agents`,
where their code lives (it moves here in a later round)."""
