"""The doctor: checks on a node (or every node of a cluster) that become findings."""
