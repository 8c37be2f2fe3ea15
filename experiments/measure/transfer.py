"""A fixed-size TCP transfer, checked byte-exact at both ends.

    python -m ackwise.experiments.measure.transfer recv --port 5001 [--progress FILE]
        [--reverse-rate-bps 200000 --reverse-write-bytes 1000] [--window-clamp-bytes 2964]
        [--ip-version 6]
    python -m ackwise.experiments.measure.transfer send --host 10.0.0.2 --port 5001 --size 2000000 --seed 1

The receiver listens on IPv4, or with ``--ip-version 6`` on IPv6; the sender connects to whichever
address it is given (``--host fd00:ac::2``).

The sender streams ``size`` pseudo-random bytes derived from ``seed`` and closes its side; the
receiver reads to EOF, hashes what it got, and returns its byte count and SHA-256 over the same
connection. Each side prints one JSON line. The sender's completion time runs from connect() to
the receiver's answer, so it covers the whole transfer as the application sees it.

With ``--reverse-rate-bps``, the receiver also writes data back on the same connection while the
forward data arrives: ``--reverse-write-bytes`` every write_bytes x 8 / rate seconds, until the
sender's EOF. Reverse data on the same connection is what a receiver's ACKs can ride on
(piggybacking: Shang and Wills); on another connection they never can. The filler byte is
``REVERSE_FILLER`` and the answer starts with ``{``, so the sender tells them apart, and both
sides count the reverse bytes.

With ``--window-clamp-bytes``, the receiver never advertises more than that (TCP_WINDOW_CLAMP),
so the sender has at most that much in flight: a maximum window (Altman and Jiménez's x axis). It
is set on the listening socket (the SYN-ACK's window and window scale follow it) and again after
every read: Linux 6.x resets the clamp from the receive buffer when the first full-sized segment
changes its estimate of payload per buffer byte (tcp_measure_rcv_mss, the scaling ratio), and the
receive-buffer autotuning may raise it later (tcp_rcv_space_adjust). A run checks from the
sender's side that the clamp held (``ss``: snd_wnd and unacked).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import sys
import threading
import time
from pathlib import Path

from ackwise.experiments.measure.listen import add_ip_version_argument, listen
from ackwise.experiments.measure.tool_result import print_result

CHUNK = 65536
PROGRESS_EVERY_S = 0.1
REVERSE_FILLER = b"."  # never "{", which opens the receiver's answer


def payload(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


class ReverseWriter(threading.Thread):
    """Writes ``write_bytes`` back every write_bytes x 8 / rate_bps seconds, on schedule (a late
    write is not made up for twice), until stopped."""

    def __init__(self, conn: socket.socket, rate_bps: float, write_bytes: int) -> None:
        super().__init__(daemon=True)
        self.conn, self.interval_s, self.chunk = (
            conn,
            write_bytes * 8 / rate_bps,
            REVERSE_FILLER * write_bytes,
        )
        self.sent = 0
        self.halt = threading.Event()

    def run(self) -> None:
        due = time.monotonic()
        while not self.halt.wait(max(0.0, due - time.monotonic())):
            try:
                self.conn.sendall(self.chunk)
            except OSError:  # the connection ended under us: the main thread reports it
                return
            self.sent += len(self.chunk)
            due = max(due + self.interval_s, time.monotonic() - self.interval_s)

    def stop(self) -> int:
        self.halt.set()
        self.join()
        return self.sent


def clamp_window(sock: socket.socket, window_clamp_bytes: int) -> None:
    """Clamp what ``sock`` advertises to ``window_clamp_bytes`` (0: leave it alone)."""
    if window_clamp_bytes > 0:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, window_clamp_bytes)


def receive(
    port: int,
    progress: Path | None,
    timeout_s: float,
    reverse_rate_bps: float = 0.0,
    reverse_write_bytes: int = 1000,
    window_clamp_bytes: int = 0,
    ip_version: int = 4,
) -> dict[str, object]:
    with listen(port, ip_version) as server:
        clamp_window(server, window_clamp_bytes)  # before any SYN: the connection inherits it
        server.settimeout(timeout_s)
        conn, peer = server.accept()
    with conn:
        conn.settimeout(timeout_s)
        writer = ReverseWriter(conn, reverse_rate_bps, reverse_write_bytes) if reverse_rate_bps > 0 else None
        if writer is not None:
            writer.start()
        digest = hashlib.sha256()
        received = 0
        first = last = None
        reported = 0.0
        try:
            while True:
                chunk = conn.recv(CHUNK)
                now = time.time()
                if not chunk:
                    break
                first = first or now
                last = now
                clamp_window(conn, window_clamp_bytes)  # the kernel may have reset it (module doc)
                received += len(chunk)
                digest.update(chunk)
                if progress is not None and now - reported >= PROGRESS_EVERY_S:
                    progress.write_text(str(received))
                    reported = now
        finally:
            reverse_sent = writer.stop() if writer is not None else 0
        if progress is not None:
            progress.write_text(str(received))
        answer = {"bytes": received, "sha256": digest.hexdigest(), "reverse_bytes": reverse_sent}
        conn.sendall((json.dumps(answer) + "\n").encode())
    return answer | {"peer": peer[0], "first_byte_at": first, "last_byte_at": last}


def send(host: str, port: int, size: int, seed: int, timeout_s: float) -> dict[str, object]:
    data = payload(size, seed)
    expected = hashlib.sha256(data).hexdigest()
    conn, started = _connect(host, port, timeout_s)
    with conn:
        connected = time.time()
        # Read while sending: the receiver may write data back all along (--reverse-rate-bps).
        incoming: list[bytes] = []
        reader = threading.Thread(target=_read_to_eof, args=(conn, incoming), daemon=True)
        reader.start()
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        reader.join(timeout_s)
    finished = time.time()
    everything = b"".join(incoming)
    opens = everything.find(b"{")
    reply = everything[opens:] if opens >= 0 else b""
    reverse = everything[:opens] if opens >= 0 else everything
    answer = json.loads(reply) if reply.endswith(b"\n") else {}
    return {
        "bytes": size,
        "sha256": expected,
        "receiver_bytes": answer.get("bytes"),
        "receiver_sha256": answer.get("sha256"),
        "reverse_bytes": len(reverse),
        "byte_exact": answer.get("sha256") == expected
        and answer.get("bytes") == size
        and answer.get("reverse_bytes", 0) == len(reverse)
        and reverse.strip(REVERSE_FILLER) == b"",
        "started_at": started,
        "connected_at": connected,
        "finished_at": finished,
        "completion_s": finished - started,
    }


def _read_to_eof(conn: socket.socket, into: list[bytes]) -> None:
    try:
        while chunk := conn.recv(CHUNK):
            into.append(chunk)
    except OSError:  # reset or timed out: what arrived is judged by send()
        pass


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
    r.add_argument("--reverse-rate-bps", type=float, default=0.0, help="write data back at this rate")
    r.add_argument("--reverse-write-bytes", type=int, default=1000, help="bytes per reverse write")
    r.add_argument(
        "--window-clamp-bytes", type=int, default=0, help="never advertise a larger window (0: no clamp)"
    )
    add_ip_version_argument(r)
    s = sub.add_parser("send")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--size", type=int, required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)

    def work() -> dict[str, object]:
        if args.mode == "recv":
            return receive(
                args.port,
                args.progress,
                args.timeout,
                args.reverse_rate_bps,
                args.reverse_write_bytes,
                args.window_clamp_bytes,
                args.ip_version,
            )
        return send(args.host, args.port, args.size, args.seed, args.timeout)

    return print_result(work, succeeded=lambda result: bool(result.get("byte_exact", True)))


if __name__ == "__main__":
    sys.exit(main())
