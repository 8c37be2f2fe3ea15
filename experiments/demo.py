"""``ackwise demo`` / ``make demo``: a short transfer through ack_switch on the default dumbbell,
with a live progress line, then a table of goodput, completion time and packets per direction.

Everything it starts (namespaces, veths, switches, emulators) is removed at the end, also on Ctrl-C.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from ackwise.topologies.testbed import Testbed, stop_on_signals

from .record import make_record, save_record
from .traffic import Capture, TcpSampler, Transfer, run_transfers

DEMO_TOPOLOGY: dict[str, Any] = {
    "n_pairs": 1,
    "fwd_rate_mbps": 10.0,
    "rev_rate_mbps": 10.0,
    "fwd_delay_ms": 10.0,
    "rev_delay_ms": 10.0,
    "fwd_buffer_pkts": 100,
    "rev_buffer_pkts": 100,
    "program": "ack_switch",
    "cc": "cubic",
}
DEMO_SIZE_BYTES = 4_000_000


def progress_line(transfers: list[Transfer], started: float, out: TextIO) -> None:
    t = transfers[0]
    done = t.progress()
    elapsed = max(time.monotonic() - started, 1e-3)
    width = 30
    filled = int(width * done / t.size_bytes)
    out.write(
        f"\r  [{'#' * filled}{'.' * (width - filled)}] {done / 1e6:5.2f}/{t.size_bytes / 1e6:.2f} MB "
        f"{done * 8 / elapsed / 1e6:6.2f} Mbit/s {elapsed:5.1f} s"
    )
    out.flush()


def render(result: dict[str, Any]) -> str:
    flow = result["transfer"]
    lines = [
        "",
        f"transfer {flow['sender']} -> {flow['receiver']}: {flow['size_bytes'] / 1e6:.1f} MB, byte-exact, "
        f"completion {flow['completion_s']:.2f} s, goodput {flow['goodput_bps'] / 1e6:.2f} Mbit/s, "
        f"retransmissions {result['sender_tcp']['retransmitted_segments']}, "
        f"RTOs {result['sender_tcp']['rto_timeouts']}",
        "",
        f"{'packets on the bottleneck (s2 side)':<40}{'data':>8}{'pure ACKs':>11}{'other':>7}",
    ]
    for direction, label in (
        ("forward", f"{flow['sender']} -> {flow['receiver']}"),
        ("reverse", f"{flow['receiver']} -> {flow['sender']}"),
    ):
        s = result["bottleneck"][direction]
        lines.append(f"  {label:<38}{s['data_segments']:>8}{s['pure_acks']:>11}{s['other']:>7}")
    return "\n".join(lines)


def run_demo(out: TextIO = sys.stdout, size_bytes: int = DEMO_SIZE_BYTES) -> dict[str, Any]:
    out.write(
        f"ackwise demo: dumbbell h1 -- s1 == 10 Mbit/s, 10 ms each way == s2 -- r1, both switches "
        f"running ack_switch; {size_bytes / 1e6:.0f} MB from h1 to r1\n"
    )
    testbed = Testbed.create("dumbbell", **DEMO_TOPOLOGY)
    with stop_on_signals(), testbed:
        sender, receiver = testbed.host("h1"), testbed.host("r1")
        capture = Capture("e1-eth2")
        sampler = TcpSampler(sender, receiver.IP()).start()
        started = time.monotonic()
        try:
            (transfer,) = run_transfers(
                [(sender, receiver)], size_bytes, on_progress=lambda ts: progress_line(ts, started, out)
            )
        finally:
            tcp = sampler.stop()
            directions = capture.stop()
        out.write("\n")
        forward = f"{sender.IP()}:"
        stats = {
            "forward": _sum(directions, lambda d: d.startswith(forward)),
            "reverse": _sum(directions, lambda d: not d.startswith(forward)),
        }
        result = {
            "transfer": transfer.to_dict(),
            "sender_tcp": tcp,
            "bottleneck": stats,
            "link_stats": testbed.link_stats(),
        }
        config = testbed.describe() | {"size_bytes": size_bytes}
    out.write(render(result) + "\n")
    path = save_record(make_record("demo", config, result))
    out.write(f"\nrecord: {path}\n")
    return result


def _sum(directions: dict[str, Any], keep: Any) -> dict[str, int]:
    total = {"data_segments": 0, "pure_acks": 0, "other": 0, "retransmissions": 0}
    for name, s in directions.items():
        if keep(name):
            for key in total:
                total[key] += getattr(s, key)
    return total
