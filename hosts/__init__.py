"""End-host ACK policies and the NFQUEUE agent that applies them on Mininet hosts."""
