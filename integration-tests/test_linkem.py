"""linkem when an interface it serves disappears under it.

Regression: a test deleted e1-eth2 under a running linkem, whose packet socket then reported
POLLERR on every poll without POLLIN; linkem neither read the error nor left, and spun at 100 % of
a core for the rest of the suite. It now says which interface went and exits with status 3."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ackwise.netdev import add_veth
from ackwise.topologies.links import LinkemProcess, LinkParams


@pytest.fixture
def two_veth_pairs() -> Iterator[tuple[str, str]]:
    """Two veth pairs, a/ap and b/bp: linkem serves a and b, the test uses ap and bp. IPv6 off:
    no frame on them but the test's own."""
    tag = f"awlk{os.getpid() % 10000}"
    a, b = f"{tag}a", f"{tag}b"
    try:
        for name in (a, b):
            add_veth(name, f"{name}p", mtu=None)
        yield a, b
    finally:
        for name in (a, b):
            if Path(f"/sys/class/net/{name}").exists():
                subprocess.run(["ip", "link", "del", name], stderr=subprocess.DEVNULL)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def send_frame(intf: str, payload_bytes: int = 46, count: int = 1) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((intf, 0))
        for _ in range(count):
            # broadcast, from a locally administered address, EtherType 0x88B5 (local experimental)
            s.send(b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + bytes(payload_bytes))


def wait_for_exit(linkem: LinkemProcess, gone: str, idle_cpu: float) -> str:
    deadline = time.monotonic() + 5
    while linkem.exit_reason() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    reason = linkem.exit_reason()
    assert reason is not None, (
        f"linkem still runs 5 s after {gone} was removed, using "
        f"{cpu_seconds(linkem.pid) - idle_cpu:.1f} s of CPU"
    )
    return reason


def test_input_interface_removed_under_linkem(two_veth_pairs: tuple[str, str]) -> None:
    a, b = two_veth_pairs
    args = LinkParams(rate_bps=1e6, delay_ms=1).linkem_args()
    linkem = LinkemProcess("lktest", [f"wire {a} {b} {args}", f"wire {b} {a} {args}"])
    try:
        time.sleep(0.2)
        idle_cpu = cpu_seconds(linkem.pid)
        subprocess.run(["ip", "link", "del", a], check=True)
        reason = wait_for_exit(linkem, a, idle_cpu)
        assert reason.startswith("linkem exited with status 3"), reason
        assert f"interface {a} disappeared" in reason, reason
    finally:
        linkem.stop()


def test_output_interface_removed_under_linkem(two_veth_pairs: tuple[str, str]) -> None:
    """b is only an output: linkem finds out when it next sends there."""
    a, b = two_veth_pairs
    linkem = LinkemProcess("lktest", [f"wire {a} {b} {LinkParams().linkem_args()}"])
    try:
        time.sleep(0.2)
        idle_cpu = cpu_seconds(linkem.pid)
        subprocess.run(["ip", "link", "del", b], check=True)
        send_frame(f"{a}p")
        reason = wait_for_exit(linkem, b, idle_cpu)
        assert reason.startswith("linkem exited with status 3"), reason
        assert f"interface {b} disappeared" in reason, reason
    finally:
        linkem.stop()


def queue_drops_after(a: str, b: str, params: LinkParams, bursts: list[tuple[int, int]]) -> int:
    """Send ``bursts`` ((payload bytes, frames), one after the other, at once) into a wire from a
    to b that serialises a 1000-byte frame in a second, so nothing leaves while they arrive;
    return the frames its queue dropped."""
    linkem = LinkemProcess("lkbytes", [f"wire {a} {b} {params.linkem_args()}"])
    try:
        time.sleep(0.2)
        for payload, count in bursts:
            send_frame(f"{a}p", payload, count)
        time.sleep(0.3)
        (wire,) = linkem.stats()["wires"]
        assert wire["rx"] == sum(count for _, count in bursts)
        return int(wire["queue_drops"])
    finally:
        linkem.stop()


def test_a_byte_limit_drops_what_would_pass_it(two_veth_pairs: tuple[str, str]) -> None:
    """limit_bytes=3000: two 1014-byte frames fit (2028 bytes), a third would not; then 16 frames
    of 60 bytes fill the remaining 972 bytes (960) and 4 more are dropped. Counted in packets
    (limit_pkts=3) the same queue takes three large frames whatever their size."""
    a, b = two_veth_pairs
    slow = {"rate_bps": 8_000, "delay_ms": 0}
    by_bytes = LinkParams(**slow, limit_pkts=1000, limit_bytes=3000)
    assert queue_drops_after(a, b, by_bytes, [(1000, 10), (46, 20)]) == 8 + 4
    by_packets = LinkParams(**slow, limit_pkts=3)
    assert queue_drops_after(a, b, by_packets, [(1000, 10)]) == 7
