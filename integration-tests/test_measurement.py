"""Traffic and measurement on the test bed: captures count every segment, transfers are
byte-exact and can be staggered beside on-off UDP, the demo runs and cleans up after Ctrl-C."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import leftovers
from conftest import VENV_BIN, loss_free_buffer_pkts

from ackwise.experiments.harness.demo import DEMO_POINT
from ackwise.experiments.harness.scenario import load
from ackwise.experiments.measure.pcapstats import read_frames, read_segments
from ackwise.experiments.measure.traffic import Capture, OnOffUdp, TcpSampler, run_transfers
from ackwise.topologies.testbed import Testbed
from ackwise.twins.packets import ACK
from ackwise.twins.policies import MSS_BYTES


def test_capture_counts_every_segment_linkem_delivered() -> None:
    size = 3_000_000
    with Testbed.create(
        "dumbbell", n_pairs=1, fwd_delay_ms=5, rev_delay_ms=5, fwd_buffer_pkts=loss_free_buffer_pkts(size)
    ) as testbed:
        sender, receiver = testbed.host("h1"), testbed.host("r1")
        sender_ip, receiver_ip = sender.IP(), receiver.IP()
        # Everything on the interface linkem sends data out of and receives ACKs on: its counters
        # count every frame, TCP or not, so compare over the capture's lifetime (start-up chatter
        # before it counts in linkem only).
        before = {w["in"]: w for w in testbed.link_stats()["e1"]["wires"]}
        capture = Capture("e1-eth2", bpf="")
        sampler = TcpSampler(sender, receiver.IP()).start()
        (result,) = run_transfers([(sender, receiver)], size)
        tcp = sampler.stop()
        time.sleep(1)  # the connection's teardown is done: linkem's counters stop moving
        directions = capture.stop(keep_pcap=True)
        wires = {w["in"]: w for w in testbed.link_stats()["e1"]["wires"]}
    try:
        frames = list(read_frames(capture.path))
        segments = list(read_segments(capture.path))
    finally:
        capture.discard()
    # The sender retries connect() while the receiver is not listening yet: a refused attempt is a
    # direction of its own (SYN, then RST back). The transfer is the direction that carried data.
    forward_name = max(
        (d for d in directions if d.startswith(f"{sender_ip}:")), key=lambda d: directions[d].data_bytes
    )
    forward = directions[forward_name]
    assert result.byte_exact
    # TSO/GSO are off, so no segment on the wire exceeds the MSS. Linux may still send a short
    # segment mid-stream (a window edge that is not a multiple of the MSS, or the application's
    # write landing just as the ACK clock fires: one CI run saw 2073 segments for 2072 MSS), so
    # the count is not asserted exactly (with no short segment it follows from the byte sum); what
    # the capture must account for is every byte once.
    lengths = [seg.payload_len for seg in segments if seg.direction == forward_name and seg.payload_len]
    assert len(lengths) == forward.data_segments
    assert max(lengths) == MSS_BYTES
    assert sum(lengths) == forward.data_bytes == size
    short = sum(1 for n in lengths[:-1] if n < MSS_BYTES)
    assert short <= len(lengths) // 100, f"{short} sub-MSS segments: is TSO/GSO back on, or Nagle off?"
    assert forward.retransmissions == 0 and tcp["retransmitted_segments"] == 0 and tcp["rto_timeouts"] == 0
    delivered = wires["e1-eth1"]["delivered"] - before["e1-eth1"]["delivered"]
    received = wires["e1-eth2"]["rx"] - before["e1-eth2"]["rx"]
    assert len(frames) == delivered + received
    non_tcp = len(frames) - sum(s.data_segments + s.pure_acks + s.other for s in directions.values())
    assert non_tcp <= 2, f"{non_tcp} frames besides the flow's (expected at most interface start-up chatter)"
    # Every frame linkem took in from the receiver's side is in the capture, so its pure ACKs are
    # counted to within that chatter. (How many there are is the receiver's business: Linux ACKs
    # every second full-sized segment only while its window can advance, and a receiver that runs
    # late on a loaded machine ACKs up to 20 segments at once; seen from 1146 to 1212 ACKs for 2072
    # segments with three busy processes on two cores, and 989 in one make test run.)
    from_receiver = sum(
        s.data_segments + s.pure_acks + s.other
        for name, s in directions.items()
        if name.startswith(f"{receiver_ip}:")
    )
    assert received - non_tcp <= from_receiver <= received
    assert len(tcp["cwnd_samples"]) >= 5 and all(s["cwnd"] > 0 for s in tcp["cwnd_samples"])


def test_reverse_data_rides_the_same_connection_and_carries_acks() -> None:
    """The receiver writes 200 kbit/s back on the transfer's own connection: the capture shows
    those bytes as the receiver's data segments on that connection, each carrying an ACK."""
    size, rate_bps = 3_000_000, 200_000
    with Testbed.create("dumbbell", n_pairs=1, fwd_delay_ms=5, rev_delay_ms=5) as testbed:
        sender, receiver = testbed.host("h1"), testbed.host("r1")
        receiver_ip = receiver.IP()
        capture = Capture("e1-eth2")
        (result,) = run_transfers(
            [(sender, receiver)], size, reverse_rate_bps=rate_bps, reverse_write_bytes=1000
        )
        time.sleep(0.5)
        capture.stop(keep_pcap=True)
    try:
        segments = list(read_segments(capture.path))
    finally:
        capture.discard()
    assert result.byte_exact
    back = [s for s in segments if s.src == receiver_ip and s.sport == 5001 and s.payload_len > 0]
    # Everything the receiver wrote: the reverse data, then its answer line (bytes and SHA-256).
    answer = json.dumps(
        {"bytes": size, "sha256": result.receiver_sha256, "reverse_bytes": result.reverse_bytes}
    )
    assert sum(s.payload_len for s in back) == result.reverse_bytes + len(answer) + 1
    # About rate x duration: writes on schedule from accept() until the sender's EOF.
    expected = rate_bps / 8 * result.completion_s
    assert 0.5 * expected <= result.reverse_bytes <= 1.2 * expected + 1000, (result.reverse_bytes, expected)
    assert all(s.flags & ACK for s in back)


def test_staggered_transfers_beside_onoff_udp() -> None:
    with Testbed.create("dumbbell", n_pairs=3, fwd_delay_ms=5, rev_delay_ms=5) as testbed:
        udp = OnOffUdp(
            testbed.host("h3"), testbed.host("r3"), rate_bps=2e6, on_s=0.5, off_s=0.5, duration_s=3
        ).start()
        results = run_transfers(
            [(testbed.host("h1"), testbed.host("r1")), (testbed.host("h2"), testbed.host("r2"))],
            1_000_000,
            stagger_s=0.5,
        )
        sent = udp.wait()
    assert all(r.byte_exact for r in results)
    # The second sender was launched half a second after the first (when each connected also
    # depends on how long its interpreter took to start: not what stagger_s promises).
    assert results[1].launched_at - results[0].launched_at >= 0.5
    assert all(r.started_at >= r.launched_at for r in results)
    # 2 Mbit/s of 1000-byte datagrams, on half the time for 3 s: about 375 datagrams.
    assert 250 <= sent["datagrams"] <= 400


def running_test_bed_parts() -> set[str]:
    """The demo's kind of leftovers on this machine: Mininet-named interfaces, and running
    simple_switch and linkem processes (not ``pgrep -x 'a|b'``, which procps refuses over 15
    characters and so matches nothing, and which lists zombies)."""
    found = {p.name for p in Path("/sys/class/net").iterdir() if re.match(r"^(s\d|e\d|h\d|r\d)", p.name)}
    for name in ("simple_switch", "linkem"):
        found |= {f"{name} (pid {pid})" for pid in leftovers.running(name)}
    return found


DEMO_LINE = r"{}\s+completion\s+[\d.]+ s\s+goodput\s+([\d.]+) Mbit/s\s+([\d.]+) pure ACKs per data segment"


def test_demo_runs_and_reports() -> None:
    """The comparison in miniature: one line per placement, then the command of the whole one."""
    before = (
        running_test_bed_parts()
    )  # another run's switches may be up on this machine: compare, not require none
    out = subprocess.run([str(VENV_BIN / "ackwise"), "demo"], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    ratios, goodputs = {}, {}
    for label in ("baseline (nothing on)", "host every_d d=4", "switch coalesce @s2"):
        match = re.search(DEMO_LINE.format(re.escape(label)), out.stdout)
        assert match, (label, out.stdout)
        goodputs[label], ratios[label] = float(match.group(1)), float(match.group(2))
    # The baseline's ACKs are counted after the 30 kbit/s ACK queue, which Linux's delayed ACK
    # saturates: what reaches the sender is the queue's rate over the data's. (This said "0.4-0.75,
    # about one per two" until the scenario's sender became reno with IW 2 (issue 39), which
    # finished in 4.9 s instead of 7.6: 0.39 and 0.62 measured, 0.40 and 0.63 by this rule.)
    ack_pps = float(load("asymmetric").point(DEMO_POINT).params["rev_queue_pps"])
    data_pps = goodputs["baseline (nothing on)"] * 1e6 / 8 / MSS_BYTES
    assert abs(ratios["baseline (nothing on)"] / (ack_pps / data_pps) - 1) <= 0.10, (ack_pps, data_pps)
    assert 0.2 <= ratios["host every_d d=4"] <= 0.3
    assert ratios["switch coalesce @s2"] < ratios["baseline (nothing on)"]
    assert "ackwise experiment run asymmetric" in out.stdout
    assert running_test_bed_parts() - before == set()


def test_demo_interrupted_removes_everything() -> None:
    before = running_test_bed_parts()
    proc = subprocess.Popen(
        [str(VENV_BIN / "ackwise"), "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=leftovers.terminal_job_signals,
    )
    assert proc.stdout is not None
    # Interrupt in the second run: the first one's line is out.
    deadline = time.monotonic() + 120
    seen = ""
    while time.monotonic() < deadline and "baseline (nothing on)" not in seen:
        seen += proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "everything it started has been removed" in err
    assert running_test_bed_parts() - before == set()
