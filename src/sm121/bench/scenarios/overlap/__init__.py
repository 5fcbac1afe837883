"""`overlap`: interference and admission around one long prefill (`scenario.Overlap`)."""
