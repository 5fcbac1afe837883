"""`sm121 stage`: weights, compile caches and images copied onto every node's local disk, so a
serve reads local NVMe instead of re-reading a NAS over the management link."""
