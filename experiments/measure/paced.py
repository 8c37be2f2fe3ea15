"""A paced TCP stream: ``write_bytes`` every ``write_bytes * 8 / rate_bps`` seconds, for a while;
optionally followed, on the same connection, by ``bulk_bytes`` as fast as TCP takes them (one
flow that is first application-limited, then saturates its bottleneck).

    python -m ackwise.experiments.measure.paced recv --port 6101
    python -m ackwise.experiments.measure.paced send --host 10.0.0.1 --port 6101 --rate-bps 64000 \\
        --write-bytes 1000 --duration 20 [--bulk-bytes 5000000]

The sender prints one JSON line with what it wrote; the receiver reads and discards until EOF.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time

from ackwise.experiments.measure.listen import add_ip_version_argument, listen
from ackwise.experiments.measure.tool_result import print_result


def receive(port: int, timeout_s: float, ip_version: int = 4) -> dict[str, int]:
    with listen(port, ip_version) as server:
        server.settimeout(timeout_s)
        conn, _ = server.accept()
    received = 0
    with conn:
        while chunk := conn.recv(65536):
            received += len(chunk)
    return {"bytes": received}


def send(
    host: str, port: int, rate_bps: float, write_bytes: int, duration_s: float, bulk_bytes: int = 0
) -> dict[str, float]:
    deadline = time.monotonic() + 5
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=10)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    interval = write_bytes * 8 / rate_bps
    chunk = bytes(write_bytes)
    writes = 0
    start = time.monotonic()
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        next_write = start
        while time.monotonic() - start < duration_s:
            conn.sendall(chunk)
            writes += 1
            next_write += interval
            time.sleep(max(0.0, next_write - time.monotonic()))
        paced_s = time.monotonic() - start
        paced_until = time.time()  # wall clock, which the test bed's namespaces share
        if bulk_bytes:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
            conn.settimeout(None)
            conn.sendall(bytes(bulk_bytes))
    return {
        "writes": writes,
        "bytes": writes * write_bytes + bulk_bytes,
        "paced_s": paced_s,
        "paced_until": paced_until,
        "duration_s": time.monotonic() - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--timeout", type=float, default=300)
    add_ip_version_argument(r)
    s = sub.add_parser("send")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--rate-bps", type=float, required=True)
    s.add_argument("--write-bytes", type=int, default=1000)
    s.add_argument("--duration", type=float, required=True)
    s.add_argument("--bulk-bytes", type=int, default=0, help="then this many bytes as fast as possible")
    args = parser.parse_args(argv)

    def work() -> dict[str, float] | dict[str, int]:
        if args.mode == "recv":
            return receive(args.port, args.timeout, args.ip_version)
        return send(args.host, args.port, args.rate_bps, args.write_bytes, args.duration, args.bulk_bytes)

    return print_result(work)


if __name__ == "__main__":
    sys.exit(main())
