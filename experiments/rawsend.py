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


def send_paced(
    socks: dict[int, socket.socket],
    frames: list[tuple[int, bytes]],
    rate_pps: float,
    batch: int = 1,
    drop_refused: bool = False,
) -> float:
    """Send (port, frame) pairs in order at rate_pps, sleeping after each batch of frames until the
    rate catches up; the seconds it took. With drop_refused, a frame the kernel refuses (its
    buffer full, when offering more than the switch takes) is skipped rather than an error."""
    start = time.monotonic()
    for i in range(0, len(frames), batch):
        for port, frame in frames[i : i + batch]:
            try:
                socks[port].send(frame)
            except OSError:
                if not drop_refused:
                    raise
        ahead = start + (i + batch) / rate_pps - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    return time.monotonic() - start
