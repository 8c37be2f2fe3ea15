"""ackwise: in-network and end-host TCP ACK reduction on bmv2, with a test bed to compare them."""

__version__ = "0.1.0"
