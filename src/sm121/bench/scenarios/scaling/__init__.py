"""`decode-scaling` and `prefill-scaling`: N concurrent requests for each N."""
