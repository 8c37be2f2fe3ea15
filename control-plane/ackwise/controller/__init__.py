"""The ``auto`` controller: tunes each flow's ACK policy on running switches.

- ``decision``: the pure decision (samples in, policy and reason out), and the flow sample adapter
- ``config``: the YAML configuration and its checks (``ackwise controller check``)
- ``ports``: which port a flow's ACKs leave by, and what that port's queue shows
- ``loop``: the I/O shell that reads switches and writes per-flow policy rules
- ``bench``: how long decisions take for many flows
"""
