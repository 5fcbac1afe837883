"""Memory: the KV planner (pure math), calibration from boot logs, and host probes."""
