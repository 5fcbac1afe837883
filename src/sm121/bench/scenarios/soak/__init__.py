"""`sm121 bench soak`: agents against an endpoint for hours, reported every interval as JSONL
(`runner.run_soak`); `scenario.Soak` is its table entry."""
