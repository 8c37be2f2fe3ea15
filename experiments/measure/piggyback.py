"""Shang and Wills' piggyback experiment, as they ran it: the programs on the two hosts.

    python -m ackwise.experiments.measure.piggyback client --port 5001 --mode piggyback --write-bytes N
    python -m ackwise.experiments.measure.piggyback server --host 10.0.0.2 --port 5001 --mode piggyback

Roles as in the paper: the server sends ``size`` bytes down to the client. The client here is the
listening side (so that a host agent on it manages its port, as for every receiver of the test
bed) and the server connects; which side opens the connection changes nothing measured.

- ``piggyback`` (their Fig. 2): each time the client reads, it writes ``write_bytes`` back on the
  same connection if its send buffer has room (a non-blocking write; what does not fit is not
  written), so that its kernel sends the reverse data about when it would ACK; the server reads
  whatever reverse data is there between its writes. The client stops writing at the server's
  EOF. Its send buffer is ``CLIENT_SNDBUF`` so that "room" means about a round trip of data, not
  Linux's autotuned megabytes (their Linux of 2006 started at 16 kB).
- ``1con``: both send ``size`` bytes at once on one connection (ACKs ride on the data both ways).
- ``2con``: one connection each way, ``size`` bytes each, at once (the client connects back to
  the server's ``port + 1`` for its upload).

Every byte is checked: the downloads and uploads are pseudo-random streams from ``seed``; each
side prints one JSON line with what it sent and received (counts, SHA-256, and the times of the
first and last byte), the server also the cumulative reverse bytes over time, so that the upload
during the download can be told from the tail flushed after it.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import random
import select
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ackwise.experiments.measure.listen import add_ip_version_argument, listen
from ackwise.experiments.measure.tool_result import print_result

MODES = ("piggyback", "1con", "2con")
CHUNK = 65536
CLIENT_SNDBUF = 32768  # requested; Linux doubles it (socket(7))
UP_SEED_OFFSET = 7919  # the upload's stream: another seed than the download's


def stream(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


@dataclass
class Received:
    """What one side received: bytes, hash, first and last arrival, and the cumulative count at
    times (every ``TIMELINE_STEP`` bytes or more)."""

    bytes: int = 0
    first_at: float | None = None
    last_at: float | None = None
    digest: Any = field(default_factory=hashlib.sha256)
    timeline: list[tuple[float, int]] = field(default_factory=list)

    TIMELINE_STEP = 1448

    def add(self, chunk: bytes) -> None:
        now = time.time()
        self.first_at = self.first_at or now
        self.last_at = now
        self.bytes += len(chunk)
        self.digest.update(chunk)
        if not self.timeline or self.bytes - self.timeline[-1][1] >= self.TIMELINE_STEP:
            self.timeline.append((round(now, 4), self.bytes))

    def report(self, prefix: str) -> dict[str, Any]:
        return {
            f"{prefix}_bytes": self.bytes,
            f"{prefix}_sha256": self.digest.hexdigest(),
            f"{prefix}_first_at": self.first_at,
            f"{prefix}_last_at": self.last_at,
        }


def _drain(conn: socket.socket, into: Received) -> bool:
    """Read what is there (the socket is non-blocking); False once the peer has closed its side."""
    while True:
        try:
            chunk = conn.recv(CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        into.add(chunk)


def _send_all_reading(conn: socket.socket, data: bytes, into: Received, deadline: float) -> bool:
    """Send ``data`` while reading whatever the peer sends (the paper's server loop: 'if revdata
    avail, recv'); returns whether the peer is still open for reading."""
    # Non-blocking, select() waits: a socket with a timeout retries EAGAIN until it expires,
    # which a send with MSG_DONTWAIT would then do too.
    conn.setblocking(False)
    view, open_in = memoryview(data), True
    while view:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(view)} of {len(data)} bytes not sent in time")
        readable, writable, _ = select.select([conn] if open_in else [], [conn], [], 1.0)
        if readable:
            open_in = _drain(conn, into)
        if writable:
            try:
                view = view[conn.send(view[:CHUNK]) :]
            except BlockingIOError:
                pass
    return open_in


def _read_to_eof(conn: socket.socket, into: Received, deadline: float) -> None:
    conn.setblocking(True)
    while True:
        conn.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = conn.recv(CHUNK)
        if not chunk:
            return
        into.add(chunk)


# ---- the server: sends the download ----


def server(
    host: str, port: int, mode: str, size: int, seed: int, timeout_s: float, ip_version: int = 4
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    down = stream(seed, size)
    reverse = Received()
    result: dict[str, Any] = {"mode": mode, "down_sent_sha256": hashlib.sha256(down).hexdigest()}
    upload_thread = None
    if mode == "2con":
        listener = listen(port + 1, ip_version)
        listener.settimeout(timeout_s)

        def take_upload() -> None:
            conn, _ = listener.accept()
            with conn:
                _read_to_eof(conn, reverse, deadline)
            listener.close()

        upload_thread = threading.Thread(target=take_upload, daemon=True)
        upload_thread.start()
    conn, started = _connect(host, port, deadline)
    result["started_at"] = started
    with conn:
        if mode == "2con":
            conn.sendall(down)
            conn.shutdown(socket.SHUT_WR)
            _read_to_eof(conn, Received(), deadline)  # the client's close
        else:
            open_in = _send_all_reading(conn, down, reverse, deadline)
            result["down_sent_at"] = time.time()
            conn.shutdown(socket.SHUT_WR)
            if open_in:
                _read_to_eof(conn, reverse, deadline)
    if upload_thread is not None:
        upload_thread.join(max(0.0, deadline - time.monotonic()))
    result["finished_at"] = time.time()
    return result | reverse.report("up_received") | {"up_timeline": reverse.timeline}


def _connect(host: str, port: int, deadline: float) -> tuple[socket.socket, float]:
    """Connect, retrying while the client does not listen yet; also when the attempt that
    succeeded began (the start of the transfer)."""
    while True:
        attempt = time.time()
        try:
            return socket.create_connection(
                (host, port), timeout=max(0.1, deadline - time.monotonic())
            ), attempt
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# ---- the client: receives the download, writes back ----


def client(
    port: int,
    mode: str,
    size: int,
    write_bytes: int,
    seed: int,
    timeout_s: float,
    server_host: str,
    ip_version: int = 4,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    down = Received()
    up = stream(seed + UP_SEED_OFFSET, size if mode != "piggyback" else 0)
    with listen(port, ip_version) as listener:
        listener.settimeout(timeout_s)
        if mode == "piggyback":
            # Set before accept(): an accepted socket inherits it, and it bounds the window.
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CLIENT_SNDBUF)
        conn, peer = listener.accept()
    result: dict[str, Any] = {"mode": mode, "write_bytes": write_bytes}
    with conn:
        if mode == "piggyback":
            result |= _write_back_per_read(conn, down, write_bytes, seed, deadline)
        elif mode == "1con":
            open_in = _send_all_reading(conn, up, down, deadline)
            result["up_sent_at"] = time.time()
            conn.shutdown(socket.SHUT_WR)
            if open_in:
                _read_to_eof(conn, down, deadline)
            result |= {"up_sent_bytes": len(up), "up_sent_sha256": hashlib.sha256(up).hexdigest()}
        else:  # 2con: the upload on a connection of its own, at once
            upload = threading.Thread(target=_upload, args=(server_host or peer[0], port + 1, up, deadline))
            upload.start()
            _read_to_eof(conn, down, deadline)
            upload.join(max(0.0, deadline - time.monotonic()))
            result |= {"up_sent_bytes": len(up), "up_sent_sha256": hashlib.sha256(up).hexdigest()}
    return result | down.report("down_received")


def _upload(host: str, port: int, data: bytes, deadline: float) -> None:
    conn, _ = _connect(host, port, deadline)
    with conn:
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        _read_to_eof(conn, Received(), deadline)


class ReverseStream:
    """The upload of piggyback mode: an endless pseudo-random stream, handed out in pieces."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed + UP_SEED_OFFSET)
        self.pending = b""
        self.sent = 0
        self.digest = hashlib.sha256()

    def take(self, n: int) -> bytes:
        while len(self.pending) < n:
            self.pending += self.rng.randbytes(max(n, 4096))
        return self.pending[:n]

    def consumed(self, n: int) -> None:
        self.digest.update(self.pending[:n])
        self.pending = self.pending[n:]
        self.sent += n


def _write_back_per_read(
    conn: socket.socket, down: Received, write_bytes: int, seed: int, deadline: float
) -> dict[str, Any]:
    reverse = ReverseStream(seed)
    reads = writes = short_writes = 0
    conn.setblocking(False)  # select() waits; send() takes what the send buffer has room for
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{down.bytes} bytes received, no EOF in time")
        readable, _, _ = select.select([conn], [], [], 1.0)
        if not readable:
            continue
        try:
            chunk = conn.recv(CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            break
        down.add(chunk)
        reads += 1
        if write_bytes > 0:
            # "if (send buf space) send revdata": whatever the send buffer takes now, no waiting
            try:
                taken = conn.send(reverse.take(write_bytes))
            except BlockingIOError:
                taken = 0
            except OSError as exc:  # the server closed under us
                if exc.errno in (errno.EPIPE, errno.ECONNRESET):
                    break
                raise
            reverse.consumed(taken)
            writes += taken > 0
            short_writes += taken < write_bytes
    eof_at = time.time()
    conn.shutdown(socket.SHUT_WR)  # what the send buffer still holds is sent, then the FIN
    conn.setblocking(True)
    conn.settimeout(max(0.1, deadline - time.monotonic()))
    while conn.recv(CHUNK):  # the server's close
        pass
    return {
        "down_eof_at": eof_at,
        "reads": reads,
        "writes": writes,
        "short_writes": short_writes,
        "up_sent_bytes": reverse.sent,
        "up_sent_sha256": reverse.digest.hexdigest(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="role", required=True)
    c = sub.add_parser("client")
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--server-host", default="", help="2con: where the upload goes (default: the peer)")
    s = sub.add_parser("server")
    s.add_argument("--host", required=True, help="the client's address")
    s.add_argument("--port", type=int, required=True)
    for p in (c, s):
        p.add_argument("--mode", choices=MODES, required=True)
        p.add_argument("--size", type=int, default=1_000_000, help="bytes down (and up in 1con, 2con)")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--timeout", type=float, default=300)
        add_ip_version_argument(p)
    c.add_argument("--write-bytes", type=int, default=0, help="piggyback: bytes written back per read")
    args = parser.parse_args(argv)

    def work() -> dict[str, Any]:
        if args.role == "client":
            return client(
                args.port,
                args.mode,
                args.size,
                args.write_bytes,
                args.seed,
                args.timeout,
                args.server_host,
                args.ip_version,
            )
        return server(args.host, args.port, args.mode, args.size, args.seed, args.timeout, args.ip_version)

    # TimeoutError is an OSError: named for the reader, as the tool's own waits raise it.
    return print_result(work, errors=(OSError, TimeoutError))


if __name__ == "__main__":
    sys.exit(main())


# ---- the result, from both sides' reports ----


@dataclass(frozen=True)
class PiggybackResult:
    """One run of the experiment: throughput each way as the paper defines it (bytes / transfer
    time), in bytes per second, and whether every byte arrived as sent."""

    mode: str
    write_bytes: int
    down_bytes: int
    down_s: float  # from the server's connect to the client's last byte
    up_bytes: int  # piggyback: delivered while the download ran; 1con, 2con: the whole upload
    up_s: float  # piggyback: the download's time; 1con, 2con: to the server's last byte
    up_total_bytes: int  # everything the client wrote (piggyback: including the tail after EOF)
    byte_exact: bool
    problems: tuple[str, ...] = ()

    @property
    def down_bytes_per_s(self) -> float:
        return self.down_bytes / self.down_s if self.down_s > 0 else 0.0

    @property
    def up_bytes_per_s(self) -> float:
        return self.up_bytes / self.up_s if self.up_s > 0 else 0.0


def summarize(server_report: dict[str, Any], client_report: dict[str, Any], size: int) -> PiggybackResult:
    """Both programs' JSON lines -> the run's result; byte_exact is False, with the reasons in
    ``problems``, when a count or a hash does not match."""
    problems = []
    for side, report in (("server", server_report), ("client", client_report)):
        if "error" in report:
            problems.append(f"{side}: {report['error']}")
    if problems:
        return PiggybackResult(
            str(client_report.get("mode", "?")), 0, 0, 0.0, 0, 0.0, 0, False, tuple(problems)
        )
    mode = str(client_report["mode"])
    if client_report.get("down_received_bytes") != size:
        problems.append(f"download: {client_report.get('down_received_bytes')} of {size} bytes")
    if client_report.get("down_received_sha256") != server_report.get("down_sent_sha256"):
        problems.append("download: SHA-256 differs")
    if server_report.get("up_received_bytes") != client_report.get("up_sent_bytes"):
        problems.append(
            f"upload: {server_report.get('up_received_bytes')} bytes received of "
            f"{client_report.get('up_sent_bytes')} sent"
        )
    elif server_report.get("up_received_sha256") != client_report.get("up_sent_sha256"):
        problems.append("upload: SHA-256 differs")
    started = float(server_report["started_at"])
    down_done = float(client_report.get("down_received_last_at") or started)
    down_s = down_done - started
    if mode == "piggyback":
        during = [n for t, n in server_report.get("up_timeline", []) if t <= down_done]
        up_bytes, up_s = (during[-1] if during else 0), down_s
    else:
        up_bytes = int(server_report.get("up_received_bytes") or 0)
        up_s = float(server_report.get("up_received_last_at") or started) - started
    return PiggybackResult(
        mode,
        int(client_report.get("write_bytes") or 0),
        int(client_report.get("down_received_bytes") or 0),
        down_s,
        int(up_bytes),
        up_s,
        int(client_report.get("up_sent_bytes") or 0),
        not problems,
        tuple(problems),
    )
