"""Operate a running endpoint: sample engine, gateway and host state over time (`sm121 top`)."""
