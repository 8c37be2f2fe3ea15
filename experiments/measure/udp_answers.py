"""TACK Fig. 13's tool on the test bed: saturating UDP one way, one small answer per L datagrams back.

    python -m ackwise.experiments.measure.udp_answers recv --port 5001 --every 4 \\
        --warmup 3 --measure 9 [--min-interval 0.06] [--timeout 60]
    python -m ackwise.experiments.measure.udp_answers send --host 10.0.0.2 --port 5001 \\
        --rate-pps 8000 --duration 13

As the TACK paper's "UDP-based tool" (§III-B, §VII-C): the sender sends datagrams of
``PAYLOAD_BYTES`` (1514-byte frames, 1518 with the FCS) at a fixed rate above what the medium
carries; the receiver counts them and sends one answer of ``ANSWER_PAYLOAD_BYTES`` (a 60-byte
frame, 64 with the FCS) back for every L received. ``--every 0`` is the UDP baseline: no answers.
``--min-interval`` adds TACK's time bound: an answer only once L datagrams arrived *and* that long
has passed since the last answer (f = min(bw / (L MSS), beta / RTTmin): the interval is RTTmin /
beta where the bandwidth bound does not bind). The answers carry nothing the sender uses: they are
the load whose airtime Fig. 13 prices. The sender's socket stays bound and drains them, so that
they end there (not in an ICMP port-unreachable sent back over the air).

The receiver measures over a window of its own clock: ``warmup`` seconds after its first datagram,
for ``measure`` seconds; each side prints one JSON line. Times here are the test bed's: the caller
multiplies the emulated network's by the time scale k (runner.py).
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from ackwise.experiments.measure.tool_result import print_result
from ackwise.hosts.policies import EveryD, Tack

PAYLOAD_BYTES = 1472  # a 1500-byte IP packet: validation/run.py's data frame
ANSWER_PAYLOAD_BYTES = 18  # a 60-byte Ethernet frame (64 with the FCS): the paper's 64-byte ACK
RECV_BUFFER_BYTES = 8 * 1024 * 1024  # the receiver must not lose datagrams to a late application
SEND_BURST = 16  # datagrams per wake-up at most; the wired link spaces them at its rate
POLL_S = 0.0005
_SEQ = struct.Struct("!Q")


@dataclass(frozen=True)
class AnswerRule:
    """When the receiver answers: once ``every`` datagrams have arrived since the last answer and
    at least ``min_interval_s`` has passed since it (0: no time bound). ``every`` 0: never."""

    every: int
    min_interval_s: float = 0.0

    def __post_init__(self) -> None:
        if self.every < 0 or self.min_interval_s < 0:
            raise ValueError(f"an answer rule needs every >= 0 and min_interval_s >= 0, not {self}")

    def due(self, since_last: int, now: float, last_answer_t: float | None) -> bool:
        if self.every == 0 or since_last < self.every:
            return False
        return last_answer_t is None or now - last_answer_t >= self.min_interval_s


@dataclass
class WindowCount:
    """Datagrams and answers inside [start, end) of the receiver's clock, and all of them."""

    start: float
    end: float
    datagrams: int = 0
    payload_bytes: int = 0
    answers: int = 0
    total_datagrams: int = 0
    total_answers: int = 0

    def datagram(self, now: float, size: int) -> None:
        self.total_datagrams += 1
        if self.start <= now < self.end:
            self.datagrams += 1
            self.payload_bytes += size

    def answer(self, now: float) -> None:
        self.total_answers += 1
        if self.start <= now < self.end:
            self.answers += 1

    @property
    def seconds(self) -> float:
        return self.end - self.start


# The receiver's policies (a scenario's host arms): every_d d = L, as the paper's "TCP (L=8)";
# tack, TACK's f = min(bw / (L MSS), beta / RTTmin) at a given RTTmin. Their parameters here.
ANSWER_POLICIES: dict[str, tuple[str, ...]] = {"every_d": ("d",), "tack": ("beta", "L")}


def rule_for(policy: str | None, params: Mapping[str, str], rtt_min_s: float) -> AnswerRule:
    """The answer rule of a host arm's policy (None: the UDP baseline, no answers). TACK's time
    bound is RTTmin / beta of ``rtt_min_s`` (the test bed's seconds: the caller scales it)."""
    if policy is None:
        return AnswerRule(0)
    if policy not in ANSWER_POLICIES:
        raise ValueError(f"the UDP receiver runs {', '.join(ANSWER_POLICIES)} (or nothing), not {policy!r}")
    unknown = set(params) - set(ANSWER_POLICIES[policy])
    if unknown:
        raise ValueError(
            f"{policy} on the UDP receiver takes {', '.join(ANSWER_POLICIES[policy])}, "
            f"not {', '.join(sorted(unknown))}"
        )
    if policy == "every_d":
        return AnswerRule(int(params.get("d", EveryD.d)))
    beta = int(params.get("beta", Tack.beta))
    return AnswerRule(int(params.get("L", Tack.L)), rtt_min_s / beta)


def due_now(elapsed_s: float, rate_pps: float, sent: int, burst: int = SEND_BURST) -> int:
    """How many datagrams a sender at ``rate_pps`` owes after ``elapsed_s``, ``sent`` already
    (refused ones count as sent: a full device queue is the saturation asked for), at most
    ``burst`` at once."""
    return max(0, min(burst, int(elapsed_s * rate_pps) - sent))


@dataclass(frozen=True)
class UdpAnswersResult:
    """One run of the tool, both sides' reports together (test-bed seconds and counts)."""

    window_s: float  # the receiver's measured window
    datagrams: int  # received in the window
    payload_bytes: int
    answers: int  # sent in the window
    total_datagrams: int  # received, the whole run
    total_answers: int
    ended_early: bool  # the sender stopped before the window ended
    sent: int  # by the sender
    refused: int  # by the sender's kernel (its device queue full)
    answers_received: int  # by the sender
    send_duration_s: float
    rcvbuf_drops: int = 0  # datagrams the receiver's kernel dropped (a late application)

    def goodput_bps(self, k: float = 1.0) -> float:
        """UDP payload over the window, in the emulated network's time (the test bed's x k)."""
        return self.payload_bytes * 8 / self.window_s * k if self.window_s > 0 else 0.0

    @property
    def answers_per_datagram(self) -> float | None:
        return self.answers / self.datagrams if self.datagrams else None

    def answer_frequency_hz(self, k: float = 1.0) -> float:
        return self.answers / self.window_s * k if self.window_s > 0 else 0.0


def summarize(
    sender: Mapping[str, object], receiver: Mapping[str, object], rcvbuf_drops: int = 0
) -> UdpAnswersResult:
    """Both sides' JSON lines as one result; a side that reported an error raises ValueError."""
    for side, doc in (("sender", sender), ("receiver", receiver)):
        if "error" in doc:
            raise ValueError(f"the UDP {side} failed: {doc['error']}")

    def num(doc: Mapping[str, object], key: str) -> float:
        value = doc[key]
        if not isinstance(value, int | float):
            raise ValueError(f"{key} is not a number: {value!r}")
        return float(value)

    return UdpAnswersResult(
        window_s=num(receiver, "window_s"),
        datagrams=int(num(receiver, "datagrams")),
        payload_bytes=int(num(receiver, "payload_bytes")),
        answers=int(num(receiver, "answers")),
        total_datagrams=int(num(receiver, "total_datagrams")),
        total_answers=int(num(receiver, "total_answers")),
        ended_early=bool(receiver["ended_early"]),
        sent=int(num(sender, "sent")),
        refused=int(num(sender, "refused")),
        answers_received=int(num(sender, "answers_received")),
        send_duration_s=num(sender, "duration_s"),
        rcvbuf_drops=rcvbuf_drops,
    )


def receive(
    port: int, rule: AnswerRule, warmup_s: float, measure_s: float, timeout_s: float
) -> dict[str, object]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:  # root (the test bed's hosts) may pass net.core.rmem_max
            sock.setsockopt(socket.SOL_SOCKET, 33, RECV_BUFFER_BYTES)  # SO_RCVBUFFORCE
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER_BYTES)
        sock.bind(("0.0.0.0", port))
        sock.settimeout(timeout_s)
        data, peer = sock.recvfrom(65536)
        first = time.monotonic()
        window = WindowCount(first + warmup_s, first + warmup_s + measure_s)
        answer = bytes(ANSWER_PAYLOAD_BYTES)
        since_last, last_answer_t = 0, None
        sock.settimeout(max(1.0, measure_s))
        now = first
        while True:
            window.datagram(now, len(data))
            since_last += 1
            if rule.due(since_last, now, last_answer_t):
                sock.sendto(answer, peer)
                window.answer(now)
                since_last, last_answer_t = 0, now
            if now >= window.end:
                break
            try:
                data, peer = sock.recvfrom(65536)
            except TimeoutError:
                break  # the sender stopped before the window ended: the window says so
            now = time.monotonic()
    return {"window_s": window.seconds, "ended_early": now < window.end, **asdict(window)}


def send(
    host: str, port: int, rate_pps: float, duration_s: float, size: int = PAYLOAD_BYTES
) -> dict[str, object]:
    sent = refused = answers = 0
    payload = bytearray(size)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("0.0.0.0", 0))
        sock.setblocking(False)
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < duration_s:
            for _ in range(due_now(elapsed, rate_pps, sent + refused)):
                _SEQ.pack_into(payload, 0, sent + refused)
                try:
                    sock.sendto(payload, (host, port))
                    sent += 1
                except (BlockingIOError, OSError):
                    refused += 1
            while True:  # the answers end here
                try:
                    sock.recv(2048)
                    answers += 1
                except (BlockingIOError, OSError):
                    break
            time.sleep(POLL_S)
        elapsed = time.monotonic() - start
    return {"sent": sent, "refused": refused, "answers_received": answers, "duration_s": elapsed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--every", type=int, required=True, help="answer every L datagrams; 0: never")
    r.add_argument("--min-interval", type=float, default=0.0, help="s between answers at least (TACK)")
    r.add_argument("--warmup", type=float, required=True, help="s after the first datagram")
    r.add_argument("--measure", type=float, required=True, help="s of the measured window")
    r.add_argument("--timeout", type=float, default=60.0, help="s to wait for the first datagram")
    s = sub.add_parser("send")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--rate-pps", type=float, required=True)
    s.add_argument("--duration", type=float, required=True)
    s.add_argument("--size", type=int, default=PAYLOAD_BYTES)
    args = parser.parse_args(argv)

    def work() -> dict[str, object]:
        if args.mode == "recv":
            rule = AnswerRule(args.every, args.min_interval)
            return receive(args.port, rule, args.warmup, args.measure, args.timeout)
        return send(args.host, args.port, args.rate_pps, args.duration, args.size)

    return print_result(work, errors=(OSError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
