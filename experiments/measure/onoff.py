"""On-off UDP cross traffic: ``rate_bps`` during ``on`` seconds, silence for ``off`` seconds.

    python -m ackwise.experiments.measure.onoff send --host 10.0.0.4 --port 6001 --rate-bps 2000000 \\
        --on 1 --off 1 --duration 10 [--size 1000]

Prints one JSON line with what was sent. Nothing needs to listen: the datagrams are load.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time


def send(
    host: str, port: int, rate_bps: float, on_s: float, off_s: float, duration_s: float, size: int
) -> dict[str, float]:
    interval = size * 8 / rate_bps
    payload = bytes(size)
    sent = 0
    start = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        next_send = start
        while (now := time.monotonic()) - start < duration_s:
            phase = (now - start) % (on_s + off_s)
            if phase >= on_s:  # off: sleep to the next on period
                next_send = now + (on_s + off_s - phase)
                time.sleep(on_s + off_s - phase)
                continue
            if now < next_send:
                time.sleep(next_send - now)
            try:
                sock.sendto(payload, (host, port))
                sent += 1
            except OSError:
                pass
            next_send += interval
    return {"datagrams": sent, "bytes": sent * size, "duration_s": time.monotonic() - start}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("send")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, default=6001)
    s.add_argument("--rate-bps", type=float, required=True)
    s.add_argument("--on", type=float, required=True)
    s.add_argument("--off", type=float, required=True)
    s.add_argument("--duration", type=float, required=True)
    s.add_argument("--size", type=int, default=1000)
    args = parser.parse_args(argv)
    print(json.dumps(send(args.host, args.port, args.rate_bps, args.on, args.off, args.duration, args.size)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
