"""Crafted frames into a switch's ports, from the test side of its veth pairs (the benches)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def senders(test_sides: dict[int, str]) -> Iterator[dict[int, socket.socket]]:
    """A raw socket per switch port, bound to that port's test-side interface; closed on exit."""
    socks: dict[int, socket.socket] = {}
    try:
        for port, iface in test_sides.items():
            socks[port] = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            socks[port].bind((iface, 0))
        yield socks
    finally:
        for s in socks.values():
            s.close()


# Frames sent back to back at most, by the benches. simple_switch reads each port through a
# libpcap socket; a burst of more than about 32-46 frames into one port is cut there, before the
# switch counts anything, at any rate (measured: 100-frame batches at 1 000 pps lost 64 % of the
# ACKs of the ack-heavy mix into forward_only; batches of 10 or 30 lost none; docs/performance.md,
# "A sender that burst"). Eight leaves room for the sender's own jitter.
BURST_FRAMES = 8


def send_paced(
    socks: dict[int, socket.socket],
    frames: list[tuple[int, bytes]],
    rate_pps: float,
    batch: int = 1,
    drop_refused: bool = False,
    catch_up: bool = True,
) -> float:
    """Send (port, frame) pairs in order at rate_pps, sleeping after each batch of frames until the
    rate catches up; the seconds it took. With drop_refused, a frame the kernel refuses (its
    buffer full, when offering more than the switch takes) is skipped rather than an error.
    Without catch_up, a sender more than a batch behind its schedule (descheduled, or slower than
    the rate) starts the schedule again from now instead of sending back to back until it has
    caught up, a burst of any length: then at most two batches go back to back, and the rate
    offered may be lower than asked (the frames over the seconds returned)."""
    began = start = time.monotonic()
    scheduled = 0  # frames sent since `start`
    for i in range(0, len(frames), batch):
        for port, frame in frames[i : i + batch]:
            try:
                socks[port].send(frame)
            except OSError:
                if not drop_refused:
                    raise
        scheduled += batch  # a whole batch's time, the last one too
        ahead = start + scheduled / rate_pps - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
        elif not catch_up and -ahead > batch / rate_pps:
            start, scheduled = time.monotonic(), 0
    return time.monotonic() - began
