"""Data-plane stress: `make bench` (throughput and instructions per packet), the hold-back bench,
step costs, `make fuzz`, the scale run and the controller bench."""
