"""`sm121 tune`: the profile for this hardware and this workload, chosen by measurement
(the knee, an agents A/B with reps per boot, a sweep of agent counts) and written into the
user's own copy of the recipe."""
