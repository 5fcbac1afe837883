"""`soak` in the scenario table: a thin class over `sm121.bench.soak`, where its code lives
(it moves here in a later round)."""
