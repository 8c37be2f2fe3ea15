"""Traffic on a running test bed, and what is measured around it.

- ``Transfer``: a fixed-size transfer (experiments/measure/transfer.py) between two hosts, byte-exact.
- ``iperf3_bulk``: a timed bulk TCP flow with iperf3.
- ``OnOffUdp``: on-off UDP cross traffic (experiments/measure/onoff.py).
- ``run_piggyback``: Shang and Wills' piggyback, 1Con and 2Con runs (experiments/measure/piggyback.py).
- ``run_udp_answers``: TACK Fig. 13's UDP with an answer per L datagrams (experiments/measure/udp_answers.py).
- ``Capture``: tcpdump on an interface, summarised per flow direction by pcapstats.
- ``TcpSampler``: cwnd/RTT samples (``ss -ti``) and retransmission/RTO counters (``nstat``) of a
  sending host.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackwise.experiments.measure import udp_answers
from ackwise.experiments.measure.pcapstats import DirectionStats, direction_stats
from ackwise.experiments.measure.piggyback import PiggybackResult, summarize

PYTHON = sys.executable


class TrafficError(RuntimeError):
    pass


def traffic_ip(host: Any) -> str:
    """The address traffic to ``host`` goes to: its IPv6 one on a dual-stack test bed
    (ip_version=6; AckwiseHost.traffic_ip), else its IPv4 one."""
    return str(host.traffic_ip())


def _listen_args(host: Any) -> list[str]:
    """A listening tool's ``--ip-version`` for ``host`` (experiments/measure/listen.py)."""
    return ["--ip-version", str(host.ip_version)]


def _json_line(text: str, what: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise TrafficError(f"{what} printed no result: {text.strip()[-300:] or 'nothing'}")


# ---- fixed-size transfers ----


@dataclass
class TransferResult:
    sender: str
    receiver: str
    size_bytes: int
    completion_s: float
    goodput_bps: float
    byte_exact: bool
    sender_sha256: str
    receiver_sha256: str | None
    started_at: float
    max_stall_s: float | None = None  # longest time the receiver got no new bytes (None: not watched)
    max_stall_at_bytes: int | None = None  # how many bytes it had when that stall began
    reverse_bytes: int = 0  # data the receiver wrote back on the same connection (reverse_rate_bps)
    launched_at: float | None = None  # when its sender process was started (stagger_s counts from it)

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


class Transfer:
    """Start with ``start()``; ``progress()`` reads the receiver's byte count; ``wait()`` returns
    the result and raises if the bytes did not arrive exactly. As a context manager
    (``with Transfer(...).start() as t:``) it kills whatever still runs and removes its progress
    file when the block ends, also when the block failed before ``wait()``."""

    def __init__(
        self,
        sender: Any,
        receiver: Any,
        size_bytes: int,
        port: int = 5001,
        seed: int = 1,
        timeout_s: float = 300,
        reverse_rate_bps: float = 0.0,
        reverse_write_bytes: int = 1000,
        window_clamp_bytes: int = 0,
    ) -> None:
        """``reverse_rate_bps`` > 0: the receiver writes ``reverse_write_bytes`` back at that rate on
        the same connection while the data arrives (data its ACKs can ride on).
        ``window_clamp_bytes`` > 0: the receiver never advertises a larger window (transfer.py)."""
        self.sender, self.receiver = sender, receiver
        self.window_clamp_bytes = window_clamp_bytes
        self.size_bytes, self.port, self.seed, self.timeout_s = size_bytes, port, seed, timeout_s
        self.reverse_rate_bps, self.reverse_write_bytes = reverse_rate_bps, reverse_write_bytes
        self._progress: Path | None = None
        self._recv: subprocess.Popen[str] | None = None
        self._send: subprocess.Popen[str] | None = None
        self._last_bytes = -1
        self._last_change: float | None = None
        self.think_s = 0.0  # run_transfer_streams: pause after this transfer before the next
        self.max_stall_s = 0.0
        self.max_stall_at_bytes: int | None = None
        self.launched_at: float | None = None

    def watch(self, now: float) -> None:
        """Call regularly while the transfer runs: tracks the longest stretch without new bytes."""
        done = self.progress()
        if done != self._last_bytes or self._last_change is None:
            self._last_bytes, self._last_change = done, now
        elif done < self.size_bytes and now - self._last_change > self.max_stall_s:
            self.max_stall_s, self.max_stall_at_bytes = now - self._last_change, done

    def __enter__(self) -> Transfer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def start(self) -> Transfer:
        try:
            return self._start()
        except BaseException:
            self.kill()  # a receiver already started, and the progress file
            raise

    def _start(self) -> Transfer:
        module = "ackwise.experiments.measure.transfer"
        self._progress = Path(tempfile.mkstemp(prefix="ackwise-transfer-progress-")[1])
        self._recv = self.receiver.popen(
            [
                PYTHON,
                "-m",
                module,
                "recv",
                "--port",
                str(self.port),
                "--progress",
                str(self._progress),
                "--timeout",
                str(self.timeout_s),
                "--reverse-rate-bps",
                str(self.reverse_rate_bps),
                "--reverse-write-bytes",
                str(self.reverse_write_bytes),
                "--window-clamp-bytes",
                str(self.window_clamp_bytes),
                *_listen_args(self.receiver),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.launched_at = time.time()
        self._send = self.sender.popen(
            [
                PYTHON,
                "-m",
                module,
                "send",
                "--host",
                traffic_ip(self.receiver),
                "--port",
                str(self.port),
                "--size",
                str(self.size_bytes),
                "--seed",
                str(self.seed),
                "--timeout",
                str(self.timeout_s),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return self

    def progress(self) -> int:
        if self._progress is None:
            return 0
        try:
            return int(self._progress.read_text() or 0)
        except (OSError, ValueError):
            return 0

    def done(self) -> bool:
        return self._send is not None and self._send.poll() is not None

    def wait(self) -> TransferResult:
        if self._send is None or self._recv is None:
            raise TrafficError("transfer not started")
        try:
            send_out, send_err = self._send.communicate(timeout=self.timeout_s + 10)
            recv_out, _ = self._recv.communicate(timeout=10)
            where = self._where()
        except subprocess.TimeoutExpired as exc:
            where = self._where()
            self.kill()
            raise TrafficError(
                f"transfer {self.sender.name} -> {self.receiver.name} timed out after {self.timeout_s:g} s "
                f"with {where}"
            ) from exc
        finally:
            self._remove_progress()
        sent = _json_line(send_out + send_err, f"transfer sender on {self.sender.name}")
        if "error" in sent:
            raise TrafficError(
                f"transfer {self.sender.name} -> {self.receiver.name}: {sent['error']}, with {where}"
            )
        received = _json_line(recv_out, f"transfer receiver on {self.receiver.name}") if recv_out else {}
        result = TransferResult(
            sender=self.sender.name,
            receiver=self.receiver.name,
            size_bytes=self.size_bytes,
            completion_s=sent["completion_s"],
            goodput_bps=self.size_bytes * 8 / sent["completion_s"],
            byte_exact=bool(sent["byte_exact"]) and received.get("sha256") == sent["sha256"],
            sender_sha256=sent["sha256"],
            receiver_sha256=received.get("sha256"),
            started_at=sent["started_at"],
            max_stall_s=self.max_stall_s if self._last_change is not None else None,
            max_stall_at_bytes=self.max_stall_at_bytes,
            reverse_bytes=int(sent.get("reverse_bytes", 0)),
            launched_at=self.launched_at,
        )
        if not result.byte_exact:
            raise TrafficError(
                f"transfer {self.sender.name} -> {self.receiver.name} not byte-exact: sent {self.size_bytes} "
                f"bytes sha256 {sent['sha256'][:16]}, received {received.get('bytes')} bytes sha256 "
                f"{str(received.get('sha256'))[:16]}"
            )
        return result

    def _where(self) -> str:
        """What a reader of a failed run's record needs to tell a stall from a slow transfer."""
        stalled = (
            f"; longest stall {self.max_stall_s:.1f} s, from {self.max_stall_at_bytes} bytes"
            if self._last_change is not None
            else ""
        )
        return f"{self.progress()} of {self.size_bytes} bytes received{stalled}"

    def kill(self) -> None:
        for proc in (self._send, self._recv):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        self._remove_progress()

    def _remove_progress(self) -> None:
        if self._progress is not None:
            self._progress.unlink(missing_ok=True)


def run_transfers(
    pairs: list[tuple[Any, Any]],
    size_bytes: int,
    stagger_s: float = 0.0,
    base_port: int = 5001,
    on_progress: Callable[[list[Transfer]], None] | None = None,
    timeout_s: float = 300,
    seed_base: int = 0,
    reverse_rate_bps: float = 0.0,
    reverse_write_bytes: int = 1000,
    window_clamp_bytes: int = 0,
) -> list[TransferResult]:
    """One transfer per (sender, receiver) pair, the k-th started k * stagger_s after the first;
    its payload comes from seed ``seed_base + k + 1``; each receiver writes data back at
    ``reverse_rate_bps`` on its connection (0: none) and clamps its window to
    ``window_clamp_bytes`` (0: none)."""
    transfers = [
        Transfer(
            s,
            r,
            size_bytes,
            base_port + i,
            seed=seed_base + i + 1,
            timeout_s=timeout_s,
            reverse_rate_bps=reverse_rate_bps,
            reverse_write_bytes=reverse_write_bytes,
            window_clamp_bytes=window_clamp_bytes,
        )
        for i, (s, r) in enumerate(pairs)
    ]
    try:
        for i, t in enumerate(transfers):
            if i and stagger_s:
                time.sleep(stagger_s)
            t.start()
        while not all(t.done() for t in transfers):
            now = time.monotonic()
            for t in transfers:
                t.watch(now)
            if on_progress is not None:
                on_progress(transfers)
            time.sleep(0.1)
        if on_progress is not None:
            on_progress(transfers)
        return [t.wait() for t in transfers]
    finally:
        for t in transfers:
            t.kill()


def run_transfer_streams(
    streams: list[list[tuple[Any, Any, int]]] | list[list[tuple[Any, Any, int, float]]],
    base_port: int = 5001,
    timeout_s: float = 300,
    on_progress: Callable[[str], None] | None = None,
    window_clamp_bytes: int = 0,
) -> list[list[TransferResult]]:
    """Several streams at once, each a sequence of (sender, receiver, size[, think_s]) transfers
    one after the other, the next starting ``think_s`` after the previous one ended; every
    transfer gets its own port and its receiver's window clamp (0: none). Results per stream,
    in order."""
    results: list[list[TransferResult]] = [[] for _ in streams]
    queues = [list(stream) for stream in streams]
    total = sum(len(q) for q in queues)
    running: dict[int, Transfer] = {}
    not_before = [0.0 for _ in streams]
    port = base_port
    try:
        while any(queues) or running:
            now = time.monotonic()
            for i, queue in enumerate(queues):
                if i not in running and queue and now >= not_before[i]:
                    sender, receiver, size, *think = queue.pop(0)
                    running[i] = Transfer(
                        sender,
                        receiver,
                        size,
                        port,
                        seed=port,
                        timeout_s=timeout_s,
                        window_clamp_bytes=window_clamp_bytes,
                    ).start()
                    running[i].think_s = float(think[0]) if think else 0.0
                    port += 1
            for i, t in list(running.items()):
                t.watch(now)
                if t.done():
                    results[i].append(t.wait())
                    not_before[i] = time.monotonic() + t.think_s
                    del running[i]
                    if on_progress is not None:
                        on_progress(f"{sum(len(r) for r in results)}/{total} flows")
            time.sleep(0.02)
        return results
    finally:
        for t in running.values():
            t.kill()


# ---- Shang and Wills' piggyback experiment ----


def run_piggyback(
    server: Any,
    client: Any,
    mode: str,
    size_bytes: int,
    write_bytes: int = 0,
    seed: int = 1,
    port: int = 5001,
    timeout_s: float = 300,
) -> PiggybackResult:
    """One run of experiments/measure/piggyback.py: the client (the data receiver, listening on
    ``port``) on ``client``, the server (the data sender) on ``server``. Raises TrafficError when
    a byte did not arrive as sent."""
    module = "ackwise.experiments.measure.piggyback"
    common = ["--mode", mode, "--size", str(size_bytes), "--seed", str(seed), "--timeout", str(timeout_s)]
    common += _listen_args(client)
    receiving = client.popen(
        [PYTHON, "-m", module, "client", "--port", str(port), "--write-bytes", str(write_bytes), *common],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sending = server.popen(
        [PYTHON, "-m", module, "server", "--host", traffic_ip(client), "--port", str(port), *common],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        server_out, server_err = sending.communicate(timeout=timeout_s + 10)
        client_out, client_err = receiving.communicate(timeout=30)
    except subprocess.TimeoutExpired as exc:
        raise TrafficError(
            f"piggyback {mode} {server.name} -> {client.name} timed out after {timeout_s:g} s"
        ) from exc
    finally:
        for proc in (sending, receiving):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    result = summarize(
        _json_line(server_out + server_err, f"piggyback server on {server.name}"),
        _json_line(client_out + client_err, f"piggyback client on {client.name}"),
        size_bytes,
    )
    if not result.byte_exact:
        raise TrafficError(f"piggyback {mode} {server.name} <-> {client.name}: " + "; ".join(result.problems))
    return result


def run_udp_answers(
    sender: Any,
    receiver: Any,
    rule: udp_answers.AnswerRule,
    rate_pps: float,
    warmup_s: float,
    measure_s: float,
    port: int = 5001,
    timeout_s: float = 60,
) -> udp_answers.UdpAnswersResult:
    """One run of experiments/measure/udp_answers.py (times in the test bed's seconds): the
    receiver answers by ``rule``; the sender sends for the warm-up, the window and a second more.
    Raises TrafficError when a side fails or the window was not filled."""
    module = "ackwise.experiments.measure.udp_answers"
    drops_before = udp_receive_buffer_drops(receiver)
    receiving = receiver.popen(
        [
            PYTHON,
            "-m",
            module,
            "recv",
            "--port",
            str(port),
            "--every",
            str(rule.every),
            "--min-interval",
            repr(rule.min_interval_s),
            "--warmup",
            repr(warmup_s),
            "--measure",
            repr(measure_s),
            "--timeout",
            repr(timeout_s),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.3)  # the receiver binds its port (a datagram before that draws an ICMP error)
    duration_s = warmup_s + measure_s + 1.0 + 0.5  # and the first datagram's way there
    sending = sender.popen(
        [
            PYTHON,
            "-m",
            module,
            "send",
            "--host",
            receiver.IP(),
            "--port",
            str(port),
            "--rate-pps",
            repr(rate_pps),
            "--duration",
            repr(duration_s),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        send_out, send_err = sending.communicate(timeout=duration_s + timeout_s)
        recv_out, recv_err = receiving.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise TrafficError(f"UDP answers {sender.name} -> {receiver.name} timed out") from exc
    finally:
        for proc in (sending, receiving):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    try:
        result = udp_answers.summarize(
            _json_line(send_out + send_err, f"UDP sender on {sender.name}"),
            _json_line(recv_out + recv_err, f"UDP receiver on {receiver.name}"),
            udp_receive_buffer_drops(receiver) - drops_before,
        )
    except ValueError as exc:
        raise TrafficError(f"UDP answers {sender.name} -> {receiver.name}: {exc}") from None
    if result.ended_early:
        raise TrafficError(
            f"UDP answers {sender.name} -> {receiver.name}: the sender stopped before the receiver's "
            f"{measure_s:g} s window ended ({result.datagrams} datagrams in it)"
        )
    return result


# ---- iperf3 ----


def iperf3_bulk(
    sender: Any,
    receiver: Any,
    seconds: float,
    port: int = 5201,
    udp_rate_bps: float | None = None,
    length: int | None = None,
    reverse: bool = False,
) -> dict[str, Any]:
    """Run iperf3 for ``seconds``; returns its JSON report (TCP, or UDP at ``udp_rate_bps``)."""
    server = receiver.popen(
        ["iperf3", "-s", "-1", "-p", str(port), "-J"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        cmd = [
            "iperf3",
            "-c",
            traffic_ip(receiver),  # iperf3 -s listens on both IP versions
            "-p",
            str(port),
            "-t",
            str(seconds),
            "-J",
            "--connect-timeout",
            "3000",
        ]
        if udp_rate_bps is not None:
            cmd += ["-u", "-b", f"{udp_rate_bps:.0f}"]
        if length is not None:
            cmd += ["-l", str(length)]
        if reverse:
            cmd.append("-R")
        for _ in range(50):  # the server needs a moment to listen
            client = sender.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out, err = client.communicate(timeout=seconds + 30)
            report = json.loads(out) if out.strip().startswith("{") else {"error": err.strip()}
            if "unable to connect" not in str(report.get("error", "")):
                break
            time.sleep(0.1)
        if "error" in report:
            raise TrafficError(f"iperf3 {sender.name} -> {receiver.name}: {report['error']}")
        server.communicate(timeout=10)
        return report
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def iperf3_goodput_bps(report: dict[str, Any]) -> float:
    end = report["end"]
    if "sum_received" in end:
        return float(end["sum_received"]["bits_per_second"])
    return float(end["sum"]["bits_per_second"]) * (1 - float(end["sum"].get("lost_percent", 0)) / 100)


def udp_receive_buffer_drops(host: Any) -> int:
    """Datagrams the kernel of ``host``'s network namespace dropped because a socket's receive
    buffer was full (``Udp: RcvbufErrors`` of /proc/net/snmp): what a receiver that runs late, as
    on a loaded machine, loses after the link delivered it."""
    lines = [line.split() for line in host.cmd("cat /proc/net/snmp").splitlines() if line.startswith("Udp:")]
    if len(lines) != 2:
        raise TrafficError(f"{host.name}: no Udp counters in /proc/net/snmp")
    names, values = lines
    return int(dict(zip(names[1:], values[1:], strict=True))["RcvbufErrors"])


# ---- on-off UDP ----


class OnOffUdp:
    def __init__(
        self,
        sender: Any,
        receiver: Any,
        rate_bps: float,
        on_s: float,
        off_s: float,
        duration_s: float,
        port: int = 6001,
        size: int = 1000,
    ) -> None:
        self.args = [
            PYTHON,
            "-m",
            "ackwise.experiments.measure.onoff",
            "send",
            "--host",
            receiver.IP(),
            "--port",
            str(port),
            "--rate-bps",
            f"{rate_bps:.0f}",
            "--on",
            str(on_s),
            "--off",
            str(off_s),
            "--duration",
            str(duration_s),
            "--size",
            str(size),
        ]
        self.sender = sender
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> OnOffUdp:
        self.proc = self.sender.popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return self

    def wait(self) -> dict[str, Any]:
        assert self.proc is not None
        out, err = self.proc.communicate()
        return _json_line(out + err, "on-off UDP sender")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ---- a paced TCP stream ----


class PacedStream:
    """A TCP connection that writes ``write_bytes`` at ``rate_bps`` for ``duration_s`` (the
    low-rate reverse data of Shang and Wills' scenario), then ``bulk_bytes`` as fast as it can,
    into a receiver that discards it."""

    def __init__(
        self,
        sender: Any,
        receiver: Any,
        rate_bps: float,
        write_bytes: int,
        duration_s: float,
        port: int = 6101,
        bulk_bytes: int = 0,
    ) -> None:
        self.sender, self.receiver, self.port = sender, receiver, port
        self.args = [str(rate_bps), str(write_bytes), str(duration_s)]
        self.bulk_bytes = bulk_bytes
        self.sink: subprocess.Popen[str] | None = None
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> PacedStream:
        module = "ackwise.experiments.measure.paced"
        self.sink = self.receiver.popen(
            [PYTHON, "-m", module, "recv", "--port", str(self.port), *_listen_args(self.receiver)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        rate, size, duration = self.args
        target = ["--host", traffic_ip(self.receiver), "--port", str(self.port)]
        pacing = ["--rate-bps", rate, "--write-bytes", size, "--duration", duration]
        if self.bulk_bytes:
            pacing += ["--bulk-bytes", str(self.bulk_bytes)]
        self.proc = self.sender.popen(
            [PYTHON, "-m", module, "send", *target, *pacing],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return self

    def wait(self) -> dict[str, Any]:
        assert self.proc is not None
        out, err = self.proc.communicate(timeout=float(self.args[2]) + 30)
        return _json_line(out + err, "paced stream sender")

    def stop(self) -> None:
        for proc in (self.proc, self.sink):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


# ---- captures ----


def tcpdump_command(intf: str, path: Path, bpf: str) -> list[str]:
    """tcpdump writing ``intf``'s packets to ``path``: 128 bytes of each (headers), and no
    buffering. An NFLOG group (``nflog:N``) is read whole: there the snap length cuts the netlink
    datagram, in which the packet comes after the record's attributes, and libpcap sizes its read
    buffer by it, so that a datagram of several records (the kernel batches them unless the rule
    says --nflog-threshold 1) is truncated to its first: measured, 15 of 143 packets kept at 128
    bytes. The rule's --nflog-size bounds what the kernel copies instead."""
    snap = "0" if intf.startswith("nflog") else "128"
    return [
        "tcpdump",
        "-i",
        intf,
        "-w",
        str(path),
        "-s",
        snap,
        "-n",
        "-U",
        "--immediate-mode",
        *([bpf] if bpf else []),
    ]


class Capture:
    """tcpdump of packet headers (TCP only, unless ``bpf`` says otherwise; "" for everything) on one
    interface, in the root namespace (node=None) or a host's. Without ``directory`` the pcap goes to
    a temporary directory that ``stop()`` removes unless told to keep it (then ``discard()`` does)."""

    def __init__(self, intf: str, node: Any = None, directory: Path | None = None, bpf: str = "tcp") -> None:
        self.intf, self.node = intf, node
        self._own_directory = directory is None
        self.directory = directory or Path(tempfile.mkdtemp(prefix="ackwise-capture-"))
        self.path = self.directory / f"{intf}.pcap"
        cmd = tcpdump_command(intf, self.path, bpf)
        popen = node.popen if node is not None else subprocess.Popen
        self.proc = popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # tcpdump says "listening on" once its socket is bound: only then is nothing missed.
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if "listening on" not in line:
            self.proc.kill()
            self.proc.wait()
            self.discard()
            raise TrafficError(f"tcpdump on {intf} did not start: {line.strip() or 'no output'}")

    def stop(
        self, settle_s: float = 0.3, timeout_s: float = 10.0, keep_pcap: bool = False
    ) -> dict[str, DirectionStats]:
        """Stop once tcpdump has caught up: on a busy machine it can lag behind the traffic, and
        whatever it has not read when interrupted is lost. With --immediate-mode and -U every
        packet is written as it arrives, so the file stops growing when it has caught up."""
        deadline = time.monotonic() + timeout_s
        size, stable_since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now_size = self.path.stat().st_size if self.path.exists() else 0
            if now_size != size:
                size, stable_since = now_size, time.monotonic()
            elif time.monotonic() - stable_since >= settle_s:
                break
            time.sleep(0.05)
        err = ""
        died = self.proc.poll() is not None
        if died:
            # tcpdump quit on its own (e.g. an nflog socket's "No buffer space available"): the
            # pcap ends where it quit, and its counts would be short without saying so.
            _, err = self.proc.communicate()
        else:
            self.proc.send_signal(signal.SIGINT)
            try:
                _, err = self.proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                _, err = self.proc.communicate()
        dropped = re.search(r"(\d+) packets? dropped by kernel", err or "")
        self.kernel_drops = int(dropped.group(1)) if dropped else 0
        try:
            if died:
                raise TrafficError(
                    f"tcpdump on {self.intf} stopped before the capture ended (exit "
                    f"{self.proc.returncode}): {(err or '').strip() or 'no output'}"
                )
            if self.kernel_drops:
                raise TrafficError(
                    f"capture on {self.intf} lost {self.kernel_drops} packets in the kernel: "
                    "counts from it would be wrong"
                )
            return direction_stats(self.path) if self.path.exists() else {}
        finally:
            if not keep_pcap:
                self.discard()

    def discard(self) -> None:
        """Remove the pcap, and its directory if this capture made it; a tcpdump still running
        (stop() never came: the run failed) is killed first."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        self.path.unlink(missing_ok=True)
        if self._own_directory and self.directory.exists():
            self.directory.rmdir()


# ---- sender-side TCP state ----

_CWND = re.compile(r"\bcwnd:(\d+)")
_SSTHRESH = re.compile(r"\bssthresh:(\d+)")
_RTT = re.compile(r"\brtt:([\d.]+)/")
_SND_WND = re.compile(r"\bsnd_wnd:(\d+)")
_UNACKED = re.compile(r"\bunacked:(\d+)")  # ss leaves it out at 0
_BYTES_ACKED = re.compile(r"\bbytes_acked:(\d+)")
# The options ss -i shows a connection negotiated (bare words of its info line): what the run's
# senders actually had, checked against what the scenario asked for (tcp_settings). iproute2 6.1
# prints them only with -o (measured: `ss -tin` leaves out "ts sack" that `ss -tino` shows).
CONNECTION_OPTIONS = ("ts", "sack", "ecn", "ecnseen")
# ss -i names a connection's congestion control among the bare words of its info line
# ("\t ts sack cubic wscale:7,7 rto:204 ..."): any word the kernel has an algorithm of.
_AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def congestion_controls_in(ss_info: str) -> set[str]:
    """The congestion controls ``ss -i`` output shows for its connections."""
    known = set(_AVAILABLE_CC.read_text().split()) if _AVAILABLE_CC.exists() else set()
    return {word for word in ss_info.split() if word in known}


def ss_sample(out: str) -> dict[str, Any] | None:
    """The first connection in ``ss -tin`` output: cwnd, ssthresh (None before the sender has
    one), RTT, the window the receiver last announced (snd_wnd), segments in flight (unacked) and
    bytes acknowledged; None without one."""
    cwnd = _CWND.search(out)
    if cwnd is None:
        return None
    rtt, snd_wnd, ssthresh = _RTT.search(out), _SND_WND.search(out), _SSTHRESH.search(out)
    unacked, acked = _UNACKED.search(out), _BYTES_ACKED.search(out)
    return {
        "cwnd": int(cwnd.group(1)),
        "ssthresh": int(ssthresh.group(1)) if ssthresh else None,
        "rtt_ms": float(rtt.group(1)) if rtt else float("nan"),
        # how a run checks a maximum window (metrics.window_clamp_check)
        "snd_wnd": int(snd_wnd.group(1)) if snd_wnd else None,
        "unacked": int(unacked.group(1)) if unacked else 0,
        "bytes_acked": int(acked.group(1)) if acked else 0,
    }


@dataclass
class TcpSampler:
    """cwnd, ssthresh (once the sender has one), RTT, the peer's window (snd_wnd) and segments in
    flight (unacked) of a host's connection to ``dst_ip`` every ``interval_s``, and its
    retransmission and RTO counters over the same time, the congestion controls the kernel ran for
    them and the options they negotiated (as ss names them: what a record says ran, not what was
    asked for)."""

    host: Any
    dst_ip: str
    interval_s: float = 0.1
    samples: list[dict[str, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _start_counters: dict[str, int] = field(default_factory=dict)
    congestion_controls: set[str] = field(default_factory=set)
    options: set[str] = field(default_factory=set)

    def counters(self) -> dict[str, int]:
        out = self.host.cmd("nstat -asz TcpRetransSegs TcpExtTCPTimeouts TcpOutSegs 2>/dev/null")
        values = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                values[parts[0]] = int(parts[1])
        return values

    def start(self) -> TcpSampler:
        self._start_counters = self.counters()
        started = time.time()
        dst = (
            f"[{self.dst_ip}]" if ":" in self.dst_ip else self.dst_ip
        )  # ss reads an IPv6 address in brackets

        def loop() -> None:
            while not self._stop.is_set():
                proc = self.host.popen(["ss", "-tino", "dst", dst], stdout=subprocess.PIPE, text=True)
                out, _ = proc.communicate()
                self.congestion_controls |= congestion_controls_in(out)
                self.options |= set(out.split()) & set(CONNECTION_OPTIONS)
                sample = ss_sample(out)
                if sample is not None:
                    # "at": the wall clock, to line samples up with other processes' (the host agent's)
                    self.samples.append({"t": time.time() - started, "at": time.time(), **sample})
                self._stop.wait(self.interval_s)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop sampling (no counters read: the host may be gone). Safe to call twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> dict[str, Any]:
        self.close()
        end = self.counters()
        delta = {k: end.get(k, 0) - self._start_counters.get(k, 0) for k in end}
        return {
            "retransmitted_segments": delta.get("TcpRetransSegs", 0),
            "rto_timeouts": delta.get("TcpExtTCPTimeouts", 0),
            "segments_sent": delta.get("TcpOutSegs", 0),
            "cwnd_samples": self.samples,
            "congestion_controls": sorted(self.congestion_controls),
            "options": sorted(self.options),
        }
