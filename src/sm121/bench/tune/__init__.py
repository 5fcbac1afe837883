"""`sm121 tune`: the profile for this hardware and this workload, chosen by measured capacity
(arms that change one scheduler knob at a time, each's N* bracketed by bisection on one boot,
the long prefill priced in the agents runs) and written into the user's own copy of the
recipe."""
