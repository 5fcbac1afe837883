"""`sm121 bench`: token-accurate instruments for prefill, decode and admission.

client (the one streaming client) -> scenarios (probe, overlap, scaling, locality,
retrieval) -> results JSON (versioned, written as it goes) -> report (Markdown + PNG);
ab serves several profiles through sm121.serving and compares them."""
