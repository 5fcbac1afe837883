"""sm121: serve LLMs to coding agents on DGX Spark clusters, and prove the endpoint is fit for agents."""

__version__ = "0.1.0"
