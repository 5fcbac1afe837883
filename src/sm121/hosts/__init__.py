"""Hosts: where commands run (this machine, or a node over OpenSSH), the processes sm121
starts there and their identity, and the host probe that reads a node's facts."""
