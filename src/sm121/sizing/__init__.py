"""Memory use cases that read files: a recipe's plan with its memory plan (`sm121 plan
--memory`), and a run's prediction set beside what its engine logged (`sm121 memory
calibrate`). The planner itself (memory/) computes; what it is fed is read here."""
