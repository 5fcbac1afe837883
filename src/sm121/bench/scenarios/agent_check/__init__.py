"""`agent-check` in the scenario table: a thin class over `sm121.bench.agent_check`, where
its code lives (it moves here in a later round)."""
