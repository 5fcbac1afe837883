"""`knee`: the prefill knee and decode saturation on one engine (`scenario.Knee`)."""
