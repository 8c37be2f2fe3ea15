"""Traffic, measurement, run records and the experiments that compare ACK strategies."""
