"""vLLM behind the EngineAdapter seam (adapter.py): every vLLM fact sm121 knows lives here."""
