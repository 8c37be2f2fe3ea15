"""A fixed-size TCP transfer, checked byte-exact at both ends.

    python -m ackwise.experiments.transfer recv --port 5001 [--progress FILE]
    python -m ackwise.experiments.transfer send --host 10.0.0.2 --port 5001 --size 2000000 --seed 1

The sender streams ``size`` pseudo-random bytes derived from ``seed`` and closes its side; the
receiver reads to EOF, hashes what it got, and returns its byte count and SHA-256 over the same
connection. Each side prints one JSON line. The sender's completion time runs from connect() to
the receiver's answer, so it covers the whole transfer as the application sees it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import sys
import time
from pathlib import Path

CHUNK = 65536
PROGRESS_EVERY_S = 0.1


def payload(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def receive(port: int, progress: Path | None, timeout_s: float) -> dict[str, object]:
    with socket.create_server(("0.0.0.0", port)) as server:
        server.settimeout(timeout_s)
        conn, peer = server.accept()
    with conn:
        conn.settimeout(timeout_s)
        digest = hashlib.sha256()
        received = 0
        first = last = None
        reported = 0.0
        while True:
            chunk = conn.recv(CHUNK)
            now = time.time()
            if not chunk:
                break
            first = first or now
            last = now
            received += len(chunk)
            digest.update(chunk)
            if progress is not None and now - reported >= PROGRESS_EVERY_S:
                progress.write_text(str(received))
                reported = now
        if progress is not None:
            progress.write_text(str(received))
        answer = {"bytes": received, "sha256": digest.hexdigest()}
        conn.sendall((json.dumps(answer) + "\n").encode())
    return answer | {"peer": peer[0], "first_byte_at": first, "last_byte_at": last}


def send(host: str, port: int, size: int, seed: int, timeout_s: float) -> dict[str, object]:
    data = payload(size, seed)
    expected = hashlib.sha256(data).hexdigest()
    conn, started = _connect(host, port, timeout_s)
    with conn:
        connected = time.time()
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                break
            reply += chunk
    finished = time.time()
    answer = json.loads(reply) if reply else {}
    return {
        "bytes": size,
        "sha256": expected,
        "receiver_bytes": answer.get("bytes"),
        "receiver_sha256": answer.get("sha256"),
        "byte_exact": answer.get("sha256") == expected and answer.get("bytes") == size,
        "started_at": started,
        "connected_at": connected,
        "finished_at": finished,
        "completion_s": finished - started,
    }


def _connect(host: str, port: int, timeout_s: float, retry_s: float = 5.0) -> tuple[socket.socket, float]:
    """Connect, retrying while the receiver is not listening yet; also returns when the attempt
    that succeeded began (the start of the transfer)."""
    deadline = time.monotonic() + retry_s
    while True:
        attempt = time.time()
        try:
            return socket.create_connection((host, port), timeout=timeout_s), attempt
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--progress", type=Path)
    r.add_argument("--timeout", type=float, default=300)
    s = sub.add_parser("send")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--size", type=int, required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)
    try:
        if args.mode == "recv":
            result = receive(args.port, args.progress, args.timeout)
        else:
            result = send(args.host, args.port, args.size, args.seed, args.timeout)
    except OSError as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result))
    return 0 if result.get("byte_exact", True) else 1


if __name__ == "__main__":
    sys.exit(main())
