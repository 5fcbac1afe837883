"""`sm121 connect`: the settings that point a coding agent at a running endpoint, read from
the endpoint itself (its models, context window and key), probed on the agent's own protocol,
printed as shell lines and config fragments, or merged into the agent's config files.

endpoint.py reads the endpoint, agents.py builds each agent's settings, render.py prints
them, probe.py sends the one tiny request per route, write.py merges the config files."""
