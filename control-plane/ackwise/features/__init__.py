"""Switch features driven over Thrift: ACK thinning, queues, ECN marking, hold-back, the queue share,
the AP proxy, and `apply` (a whole switch configuration from a file)."""
