"""Memory: the KV planner and its calibration store. The math is pure; it reads only the
model's config and weight sizes and the stored observations. Run directories, recipes and
plans are read by its callers (sizing/, doctor/)."""
