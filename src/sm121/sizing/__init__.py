"""Memory's I/O: what the pure planner (memory/) is fed, read here. The model's files
(model_files), the calibration store (calibration_store), a cluster file's node memory
(node), the request built from them (inputs); a recipe's plan with its memory plan (`sm121
plan --memory`), and a run's prediction set beside what its engine logged (`sm121 memory
calibrate`)."""
