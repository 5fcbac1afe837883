"""Run directories: each serve's state on disk (run.json, launch files), atomic writes and
the lock that keeps concurrent writers from dropping each other's changes."""
