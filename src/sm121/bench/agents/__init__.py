"""The agent workload benchmark: N concurrent multi-turn coding-agent sessions over chat,
their SLO goodput, replay of captured gateway traffic, and sweeps over N."""
