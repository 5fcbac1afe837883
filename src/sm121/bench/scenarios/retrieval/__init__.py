"""`retrieval`: needles at depths with distractor codes (`scenario.Retrieval`)."""
