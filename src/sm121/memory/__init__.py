"""Memory: the KV planner and the calibration math, pure. Everything it reads arrives as values
in a MemoryRequest (the model's config and weight sizes, the observed boots, the engine's flag
names); sizing/ reads them from disk, and tests/unit/architecture/test_memory_is_pure.py
keeps file, process, network and clock calls out of this package."""
