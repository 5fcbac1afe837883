"""The agent workload scenarios: N concurrent multi-turn coding-agent sessions over chat
(`agents`), their SLO goodput, replay of captured gateway traffic (`replay`), A/B and sweeps
over N. `scenario.py` holds the two `Scenario` classes; `models.py` the one model set of
their results files."""

# The modules other packages may import (tests/unit/architecture/test_wings.py holds it);
# the rest are this package's own.
PUBLIC = ("apis", "capacity", "first_prompt", "models", "params", "reused", "scenario",
          "sessions", "slo", "sweep", "texts")
# capacity: the run's verdict and the workload's numbers (cli, tune); first_prompt: a
# session's first prompt and turn as an engine renders them (the cli's --engine-url);
# reused: what a turn found cached (bench/cached.py's rule over an agents run's turns)
