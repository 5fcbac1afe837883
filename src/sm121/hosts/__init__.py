"""Hosts: where commands run (this machine, or a node over OpenSSH), what `python` means
there, work on every node at once, the processes sm121 starts and their identity, and the
host probe that reads a node's facts."""
