"""`locality`: the cost of a mutating field by its place in the prompt (`scenario.Locality`)."""
