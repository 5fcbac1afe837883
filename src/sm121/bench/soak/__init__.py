"""`sm121 bench soak`: agents against an endpoint for hours, reported every interval as JSONL."""
