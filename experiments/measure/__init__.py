"""Traffic and measurement: byte-exact transfers, paced and on-off senders, raw frames, captures
and the metrics computed from them."""
