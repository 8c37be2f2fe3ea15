"""Coalescing at the queue (policy coalesce): an ACK that arrives while an earlier ACK of its flow
waits in the egress queue is absorbed at ingress, and the waiting ACK leaves carrying the newest
state (ACK number, window, both timestamps; TCP checksum recomputed), byte for byte as the test
computes it. Port 1's queue (towards the data sender) is served at 5 packets/s, so a queued ACK
waits 200 ms behind the one before it."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from ackwise.bmv2.toolchain import compiled_program
from ackwise.features.queues import set_queue_depth, set_queue_rate
from ackwise.twins.p4names import COALESCE_SLOTS, COALESCE_WAITING, COUNTER_ACK_THINNING_STATS, ThinningStat
from ackwise.twins.packets import fix_tcp_checksum, tcp_offset
from ackwise.twins.policies import PolicyParams
from base_test import TcpFlow, routed, udp_datagram
from test_ack_thinning import ThinningTest

COALESCE = PolicyParams.parse("coalesce", [])
# NOP NOP Timestamps (zero), then kind 30 (multipath TCP), length 4: an option the switch does not read.
UNKNOWN_OPTION = b"\x01\x01\x08\x0a" + bytes(8) + b"\x1e\x04\x00\x00"
QUEUE_PPS = 5


def rewritten(waiting: bytes, newest: bytes) -> bytes:
    """``waiting`` carrying ``newest``'s ACK number, window and Timestamps (TSval, TSecr), with
    its TCP checksum recomputed: what a coalesced ACK must look like. Options are found by walking
    them, independently of the switch's parser."""
    frame = bytearray(waiting)
    tcp_at = tcp_offset(frame)[0]
    frame[tcp_at + 8 : tcp_at + 12] = newest[tcp_at + 8 : tcp_at + 12]  # ACK number
    frame[tcp_at + 14 : tcp_at + 16] = newest[tcp_at + 14 : tcp_at + 16]  # window
    ts_waiting, ts_newest = timestamps_at(bytes(frame)), timestamps_at(newest)
    if ts_waiting is not None and ts_newest is not None:
        frame[ts_waiting : ts_waiting + 8] = newest[ts_newest : ts_newest + 8]
    fix_tcp_checksum(frame)
    return bytes(frame)


def sack_rewritten(waiting: bytes, newest: bytes) -> bytes:
    """``rewritten`` that also carries ``newest``'s SACK blocks (both have as many)."""
    frame = bytearray(rewritten(waiting, newest))
    at_waiting, at_newest = option_at(waiting, 5), option_at(newest, 5)
    assert (
        at_waiting is not None and at_newest is not None and waiting[at_waiting + 1] == newest[at_newest + 1]
    )
    length = newest[at_newest + 1]
    frame[at_waiting : at_waiting + length] = newest[at_newest : at_newest + length]
    fix_tcp_checksum(frame)
    return bytes(frame)


def timestamps_at(frame: bytes) -> int | None:
    """Offset of the Timestamps option's TSval in an Ethernet/IPv4/TCP or Ethernet/IPv6/TCP frame."""
    at = option_at(frame, 8)
    return None if at is None else at + 2


def option_at(frame: bytes, wanted: int) -> int | None:
    """Offset of the first option of kind ``wanted`` in an Ethernet/IPv4/TCP or Ethernet/IPv6/TCP frame."""
    tcp_at = tcp_offset(frame)[0]
    end = tcp_at + (frame[tcp_at + 12] >> 4) * 4
    i = tcp_at + 20
    while i < end:
        kind = frame[i]
        if kind == 0:
            return None
        if kind == 1:
            i += 1
            continue
        if kind == wanted:
            return i
        i += frame[i + 1]
    return None


def ack_fields(frame: bytes) -> tuple[int, int, int, int]:
    tcp_at = tcp_offset(frame)[0]
    (ack,) = struct.unpack_from("!I", frame, tcp_at + 8)
    (window,) = struct.unpack_from("!H", frame, tcp_at + 14)
    ts = timestamps_at(frame)
    ts_val, ts_ecr = struct.unpack_from("!II", frame, ts) if ts is not None else (0, 0)
    return ack, window, ts_val, ts_ecr


class CoalesceTest(ThinningTest):
    policy = COALESCE

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_queue_rate(self.client, 1, QUEUE_PPS)

    def first_ack_out(self, flow: TcpFlow, k: int = 1) -> bytes:
        """Send the flow's first ACK into the idle queue and wait until it has left (it leaves at
        once), so the next ACK is the one that waits."""
        pkt = flow.ack(k)
        self.send(flow.ack_port, pkt)
        self.expect_next(routed(pkt, flow.data_port), flow.data_port)
        return pkt

    def coalesce_flags(self, flow: TcpFlow) -> int:
        """The flags of the ACK side's coalescing state (COALESCE_WAITING: an ACK waits in the queue)."""
        record = self.flow_record(flow)["record"]
        _, direction = flow.key()
        half = record.slot << 1 | direction
        open_slot = self.register("coalesce.last_serial", half) & (COALESCE_SLOTS - 1)
        return self.register("coalesce.state", half * COALESCE_SLOTS + open_slot) & 0xFF

    def case(
        self, name: str, special: bytes, after: bytes, flow: TcpFlow, waiting: bytes | None = None
    ) -> None:
        """``waiting`` (default ack(2)) waits, then ``special`` and ``after`` come: each leaves unchanged."""
        self.first_ack_out(flow)
        waiting = flow.ack(2) if waiting is None else waiting
        for pkt in (waiting, special, after):
            self.send(flow.ack_port, pkt)
        got = self.collect(flow.data_port, 0.9)
        self.assertEqual(
            got,
            [routed(p, flow.data_port) for p in (waiting, special, after)],
            f"{name}: the waiting ACK, the special one and the one after, each unchanged",
        )

    def queue_two_fillers(self) -> list[bytes]:
        """Two UDP datagrams waiting in port 1's queue (200 ms apart), after a first one that left
        at once (the queue was empty); the two, as sent."""
        fillers = [udp_datagram(2, 1, payload=bytes([i]) * 32) for i in range(3)]
        self.send(2, fillers[0])
        self.expect_next(routed(fillers[0], 1), 1)
        for pkt in fillers[1:]:
            self.send(2, pkt)
        time.sleep(0.05)
        return fillers[1:]

    def check_out(self, flow: TcpFlow, expected: list[bytes], quiet_s: float = 0.6) -> None:
        got = self.collect(flow.data_port, quiet_s)
        want = [routed(e, flow.data_port) for e in expected]
        self.assertEqual(
            [ack_fields(g) for g in got], [ack_fields(w) for w in want], "ACK fields of what came out"
        )
        self.assertEqual(got, want, "bytes of what came out")


class CoalesceRewritesTheWaitingAckTest(CoalesceTest):
    """ack(2) waits 200 ms behind ack(1); ack(3) to ack(10) arrive meanwhile and are absorbed;
    ack(2) leaves as ack(10): ACK number, window and both timestamps, checksum recomputed. ack(10)
    acknowledges all data the switch saw: the end of the burst leaves inside ack(2)."""

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(10))
        self.first_ack_out(flow)
        acks = [flow.ack(k, window=500 + k) for k in range(2, 11)]
        for pkt in acks:
            self.send(flow.ack_port, pkt)
        self.check_out(flow, [rewritten(acks[0], acks[-1])])
        side = self.flow_record(flow)["ack_side"]
        self.assertEqual((side.acks_seen, side.acks_forwarded, side.acks_thinned), (10, 2, 8))
        self.assertEqual((side.acks_absorbed, side.acks_rewritten), (8, 1))
        self.assertEqual(self.counter(COUNTER_ACK_THINNING_STATS, ThinningStat.ACKS_ABSORBED), 8)


class CoalesceTwoFlowsTest(CoalesceTest):
    """Two flows share the queue: each one's waiting ACK takes in only its own flow's ACKs."""

    def runTest(self) -> None:
        a, b = (
            self.new_flow(sport=40000),
            self.new_flow(sport=40001, isn=900_000, irs=700_000, ts_base=3_000_000),
        )
        self.send_data(a, range(8))
        self.send_data(b, range(8))
        self.first_ack_out(a)
        self.first_ack_out(b)
        acks_a = [a.ack(k) for k in range(2, 8)]
        acks_b = [b.ack(k) for k in range(2, 8)]
        for pa, pb in zip(acks_a, acks_b, strict=True):
            self.send(a.ack_port, pa)
            self.send(b.ack_port, pb)
        self.check_out(a, [rewritten(acks_a[0], acks_a[-1]), rewritten(acks_b[0], acks_b[-1])], quiet_s=0.8)


class CoalesceNeverAbsorbsTest(CoalesceTest):
    """With ack(2) waiting, each ACK that carries news is queued as it is, never absorbed nor
    rewritten, and ends the wait: the plain ACK after it is not folded into ack(2). One case per
    rule of the safety contract that applies to a queued pure ACK."""

    def runTest(self) -> None:
        cases = {
            "duplicate ACK": lambda f: f.ack(2, ts=(f.ts(503), f.ts(2))),
            "SACK news": lambda f: f.ack(3, sack=[(4, 5)]),
            "DSACK": lambda f: f.ack(3, sack=[(1, 2)]),
            "FIN": lambda f: f.ack(3, flags="FA"),
            "RST": lambda f: f.ack(3, flags="RA"),
            "URG": lambda f: f.ack(3, flags="UA"),
            "PSH": lambda f: f.ack(3, flags="PA"),
            "ECE appears": lambda f: f.ack(3, flags="AE"),
            "unknown option": lambda f: f.ack(
                3, raw_options=b"\x01\x01\x08\x0a" + bytes(8) + b"\x1e\x04\x00\x00"
            ),
            "timestamps older": lambda f: f.ack(3, ts=(f.ts(400), f.ts(2))),
        }
        for i, (name, make) in enumerate(cases.items()):
            flow = self.new_flow(sport=41000 + i, isn=1000 + i * 100_000)
            self.send_data(flow, range(8))
            special = make(flow)
            after = flow.ack(5, flags="AE") if name == "ECE appears" else flow.ack(5)
            if name == "ECE appears":
                # ECE is news; the plain ACK after it (ECE too) is folded into it: it may be rewritten.
                self.first_ack_out(flow)
                waiting = flow.ack(2)
                for pkt in (waiting, special, after):
                    self.send(flow.ack_port, pkt)
                got = self.collect(flow.data_port, 0.9)
                self.assertEqual(
                    got, [routed(waiting, flow.data_port), routed(rewritten(special, after), flow.data_port)]
                )
                continue
            self.case(name, special, after, flow)


class CoalesceFoldsSackTest(CoalesceTest):
    """An ACK whose only news is in its SACK blocks (a duplicate ACK of a recovery, each extending
    the block) is folded into a waiting ACK with as many blocks when its blocks and ACK number say
    all the waiting ACK's blocks said; the waiting ACK leaves with the newest blocks, ACK number,
    window and timestamps. Flows: one block growing over duplicate ACKs; two blocks; a block that
    the newer ACK number covers (the ACK that leaves has that ACK number and the newer block, never
    the old block below it, which would read as DSACK); one across the wrap of 2^32; and the plain
    ACK that ends a recovery, queued (its option is shorter) as the waiting ACK of the next slot,
    while the one ahead of it leaves with the block it took in."""

    def runTest(self) -> None:
        one, two, below = (
            self.new_flow(sport=42000),
            self.new_flow(sport=42001, isn=300_000),
            self.new_flow(sport=42002, isn=600_000),
        )
        wrap = self.new_flow(sport=42003, isn=2**32 - 4 * 1448, ts_base=2**32 - 3)

        def growing(flow: TcpFlow, blocks: Callable[[int], list[tuple[int, int]]], n: int) -> list[bytes]:
            """ACKs of 2 segments, the k-th with blocks(k) and a newer TSval."""
            return [flow.ack(2, sack=blocks(k), ts=(flow.ts(503 + k), flow.ts(2))) for k in range(1, n + 1)]

        cases: list[tuple[TcpFlow, list[bytes]]] = [
            (one, growing(one, lambda k: [(3, 3 + k)], 5)),
            (two, growing(two, lambda k: [(6, 6 + k), (3, 5)], 3)),
            (below, [below.ack(2, sack=[(3, 4)]), below.ack(5, sack=[(6, 7)])]),
            (wrap, growing(wrap, lambda k: [(3, 3 + k)], 3)),
        ]
        for flow, acks in cases:
            self.send_data(flow, range(10))
            self.first_ack_out(flow)
            for pkt in acks:
                self.send(flow.ack_port, pkt)
            self.check_out(flow, [sack_rewritten(acks[0], acks[-1])])
            side = self.flow_record(flow)["ack_side"]
            self.assertEqual((side.acks_absorbed, side.acks_rewritten), (len(acks) - 1, 1))
        self.assertLess(wrap.seq(6), wrap.seq(2), "the test's sequence numbers wrap")

        # The hole fills: the plain ACK (shorter option) is queued, not folded, and waits in the
        # next slot; the waiting ACK ahead of it leaves with the block it took in. (Until
        # 2026-11-24, with one open slot, the plain ACK took the state over and the waiting ACK
        # left as it came: the extended block reached the sender one departure later.)
        flow = self.new_flow(sport=42004, isn=900_000)
        self.send_data(flow, range(10))
        self.first_ack_out(flow)
        waiting, extends, filled = flow.ack(2, sack=[(3, 4)]), flow.ack(2, sack=[(3, 5)]), flow.ack(9)
        for pkt in (waiting, extends, filled):
            self.send(flow.ack_port, pkt)
        self.check_out(flow, [sack_rewritten(waiting, extends), filled])
        side = self.flow_record(flow)["ack_side"]
        self.assertEqual((side.acks_absorbed, side.acks_rewritten), (1, 1))


class CoalesceFoldsWindowUpdatesTest(CoalesceTest):
    """Window updates (same ACK number, a larger window: a receiver autotuning its buffer sends one
    with nearly every ACK) are folded: ack(2) leaves with the newest window. One that shrinks the
    right edge is queued as it is, behind the waiting ACK, which still leaves with what it took in.
    (Until 2026-11-23 every window update was queued: during a recovery on the Asymmetric dumbbell
    each duplicate ACK carried a grown window, so none was folded and the ACK queue filled.)"""

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(10))
        self.first_ack_out(flow)
        waiting = flow.ack(2)
        grown = [flow.ack(2, window=w, ts=(flow.ts(503 + i), flow.ts(2))) for i, w in enumerate((600, 700))]
        shrunk = flow.ack(2, window=400, ts=(flow.ts(506), flow.ts(2)))
        for pkt in (waiting, *grown, shrunk):
            self.send(flow.ack_port, pkt)
        self.check_out(flow, [rewritten(waiting, grown[-1]), shrunk])
        side = self.flow_record(flow)["ack_side"]
        self.assertEqual((side.acks_absorbed, side.acks_rewritten), (2, 1))


class CoalesceKeepsFoldedStateTest(CoalesceTest):
    """A receiver with more holes than SACK blocks drops its oldest block from its ACKs. ack(2)
    with three blocks waits and takes in an ACK that extends the first; then an ACK reports a new
    hole and no longer the block (5, 6), which only the waiting ACK says: it is queued (folding it
    would lose that block) as the waiting ACK of the flow's next slot, and the waiting ACK leaves
    with the state it took in, which still says (5, 6). The new-hole ACK takes in the ACK that
    extends its first block, then one that drops (7, 8) (the ACK queued ahead of it says (7, 8)),
    and the one after that. Regressions: the queued ACK once took over the flow's one slot of
    state, and the waiting ACK left with its own, older blocks ((9, 11) never reached the sender);
    with one slot, every ACK after the new-hole ACK was queued one by one until the closed waiting
    ACK had left; and with two (until 2026-11-24), an ACK that dropped a block the ACK ahead said
    was queued as it is."""

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(20))
        self.first_ack_out(flow)

        def ack(blocks: list[tuple[int, int]], k: int) -> bytes:
            return flow.ack(2, sack=blocks, ts=(flow.ts(500 + k), flow.ts(2)))

        waiting = ack([(9, 10), (7, 8), (5, 6)], 3)
        extends = ack([(9, 11), (7, 8), (5, 6)], 4)
        new_hole = ack([(13, 14), (9, 11), (7, 8)], 5)
        follows = ack([(13, 15), (9, 11), (7, 8)], 6)
        drops_said_ahead = ack([(17, 18), (13, 15), (9, 11)], 7)
        after = ack([(17, 19), (13, 15), (9, 11)], 8)
        for pkt in (waiting, extends, new_hole, follows, drops_said_ahead, after):
            self.send(flow.ack_port, pkt)
        self.check_out(flow, [sack_rewritten(waiting, extends), sack_rewritten(new_hole, after)], quiet_s=1.2)
        side = self.flow_record(flow)["ack_side"]
        self.assertEqual((side.acks_absorbed, side.acks_rewritten), (4, 2))


class CoalesceClosedByNewsTest(CoalesceTest):
    """ack(2) waits and takes ack(3) in; then an ACK the contract keeps that may neither be folded
    nor become a waiting ACK itself (a FIN; a duplicate ACK without SACK blocks) is queued as it is,
    behind it, and closes it: ack(2) still leaves with the state it took in (ack(3)'s), the ACK
    behind it unchanged. Queuing that ACK writes the closed waiting ACK's state back, so the switch
    must have read it, though it skips the rest of what it reads a waiting ACK's slot for when
    nothing can be folded into it (issue 35)."""

    def runTest(self) -> None:
        cases: dict[str, Callable[[TcpFlow], bytes]] = {
            "FIN": lambda f: f.ack(3, flags="FA", ts=(f.ts(504), f.ts(3))),
            "duplicate ACK": lambda f: f.ack(3, ts=(f.ts(504), f.ts(3))),
        }
        for i, (name, make) in enumerate(cases.items()):
            with self.subTest(name):
                flow = self.new_flow(sport=43000 + i, isn=1000 + i * 100_000)
                self.send_data(flow, range(8))
                self.first_ack_out(flow)
                waiting, folded, news = flow.ack(2), flow.ack(3), make(flow)
                for pkt in (waiting, folded, news):
                    self.send(flow.ack_port, pkt)
                self.check_out(flow, [rewritten(waiting, folded), news])


class CoalesceRecoveryTest(CoalesceTest):
    """A recovery in which every other segment was lost: each ACK reports one new block and drops
    its oldest, so no ACK says all the one before it said. An ACK is folded into the waiting ACK
    when the block it drops is said by the ACK queued ahead (the previous slot's); the third drops
    one only the waiting ACK says, and becomes the waiting ACK of the next slot. So one ACK in
    three leaves, each with the newest of its three, and every block reaches the sender. When all
    COALESCE_SLOTS slots hold waiting ACKs (the queue runs at 2 packets/s: none has left), the next
    ACK that drops a block is queued as it is, and so is every later one: the open slot's ACK is
    closed. Byte for byte; blocks are (2i + 3, 2i + 4) in segments, ACK i says blocks i + 2, i + 1
    and i; the first ACK out leaves at once and its slot is free again."""

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_queue_rate(self.client, 1, 2)

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(60))
        self.first_ack_out(flow)

        def block(i: int) -> tuple[int, int]:
            return (2 * i + 3, 2 * i + 4)

        n = 3 * COALESCE_SLOTS
        acks = [
            flow.ack(2, sack=[block(i + 2), block(i + 1), block(i)], ts=(flow.ts(503 + i), flow.ts(2)))
            for i in range(n)
        ]
        for pkt in acks:
            self.send(flow.ack_port, pkt)
        # ack 0 waits and takes nothing in (ack 1 drops block 0, which only ack 0 says, but ack 0
        # has folded nothing: it leaves as it came, and ack 1 waits in the next slot). From ack 1
        # on, each waiting ACK takes two in. The ring: the first ACK out's slot, ack 0's, then
        # acks 1, 4, 7, ...; the slot after ack 3 * COALESCE_SLOTS - 5 is ack 0's, still waiting.
        waits = list(range(1, n - 3, 3))
        self.assertEqual(len(waits), COALESCE_SLOTS - 1)
        queued_as_they_are = acks[n - 2 :]
        expected = [acks[0], *(sack_rewritten(acks[i], acks[i + 2]) for i in waits), *queued_as_they_are]
        self.check_out(flow, expected, quiet_s=1.2)
        side = self.flow_record(flow)["ack_side"]
        self.assertEqual((side.acks_absorbed, side.acks_rewritten), (2 * len(waits), len(waits)))


class CoalesceSackNeverFoldedTest(CoalesceTest):
    """With an ACK with one SACK block waiting, an ACK with SACK blocks is queued as it is when
    folding it would lose or misstate something: a block it no longer says, another number of
    blocks, DSACK, a right window edge that moves back, or blocks in a layout the switch cannot
    rewrite. The plain ACK
    after it is queued too (no SACK option: never folded into one)."""

    def runTest(self) -> None:
        cases = {
            "a block not said any more": lambda f: f.ack(2, sack=[(5, 6)], ts=(f.ts(504), f.ts(2))),
            "two blocks": lambda f: f.ack(2, sack=[(5, 6), (3, 4)], ts=(f.ts(504), f.ts(2))),
            "DSACK": lambda f: f.ack(2, sack=[(1, 2)], ts=(f.ts(504), f.ts(2))),
            "right edge shrinks": lambda f: f.ack(2, sack=[(3, 5)], window=400, ts=(f.ts(504), f.ts(2))),
            "SACK before Timestamps": lambda f: f.ack(
                2,
                raw_options=b"\x01\x01\x05\x0a"
                + struct.pack("!II", f.seq(3), f.seq(5))
                + b"\x01\x01\x08\x0a"
                + struct.pack("!II", f.ts(504), f.ts(2)),
            ),
        }
        for i, (name, make) in enumerate(cases.items()):
            flow = self.new_flow(sport=43000 + i, isn=1000 + i * 100_000)
            self.send_data(flow, range(10))
            waiting = flow.ack(2, sack=[(3, 4)], ts=(flow.ts(503), flow.ts(2)))
            self.case(name, make(flow), flow.ack(9), flow, waiting)


class CoalesceTailDropTest(CoalesceTest):
    """The queue holds 2 packets and is full of UDP when the flow's first ACKs arrive: the program
    drops them at ingress, as bmv2's tail drop would, and they do not become the waiting ACK (later
    ACKs would be absorbed into nothing): the ACK sent once the queue has room leaves unchanged."""

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_queue_depth(self.client, 1, 2)

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(8))
        fillers = self.queue_two_fillers()  # the queue is full
        for k in (1, 2, 3):
            self.send(flow.ack_port, flow.ack(k))  # tail-dropped by the program
        time.sleep(0.1)
        self.assertEqual(
            self.coalesce_flags(flow) & COALESCE_WAITING, 0, "a tail-dropped ACK became the waiting ACK"
        )
        time.sleep(0.4)  # the two fillers have left
        last = flow.ack(4)
        self.send(flow.ack_port, last)
        got = self.collect(1, 0.8)
        self.assertEqual(got, [routed(p, 1) for p in (*fillers, last)])


class CoalesceOneShortOfFullTest(CoalesceTest):
    """The queue holds 3 packets and two UDP datagrams wait in it when ack(1) comes: one slot is
    left, and ack(1) becomes the waiting ACK (the program keeps the queue to its depth and bmv2
    has room beyond it, so an ACK the program queues is never tail-dropped behind its back).
    ack(2) and ack(3) come when the queue is full: they are absorbed, not dropped, and ack(1)
    leaves as ack(3). Regression: one short of full, the model could not promise that bmv2 would
    keep ack(1), so it did not become the waiting ACK, and ack(2) and ack(3) were tail-dropped."""

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_queue_depth(self.client, 1, 3)

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(8))
        fillers = self.queue_two_fillers()  # one slot left
        acks = [flow.ack(k) for k in (1, 2, 3)]
        for pkt in acks:
            self.send(flow.ack_port, pkt)
        got = self.collect(1, 0.9)
        self.assertEqual(got, [routed(p, 1) for p in (*fillers, rewritten(acks[0], acks[-1]))])
        side = self.flow_record(flow)["ack_side"]
        self.assertEqual((side.acks_absorbed, side.acks_rewritten), (2, 1))


class CoalesceDeadlineTest(CoalesceTest):
    """A waiting ACK that never leaves: bmv2's queue holds 1 packet but the program was told 64
    (the depth set behind its back), so the model misses that the waiting ACK is tail-dropped.
    ACKs arriving before its deadline are absorbed into nothing; the first after the deadline
    (booked departure + 10 ms) is queued as it is and carries the newest state."""

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        self.client.set_queue_depth(1, 1)  # bmv2 only, on purpose

    def runTest(self) -> None:
        flow = self.new_flow()
        self.send_data(flow, range(8))
        fillers = [udp_datagram(2, 1, payload=bytes([i]) * 32) for i in range(2)]
        self.send(2, fillers[0])
        self.expect_next(routed(fillers[0], 1), 1)  # left at once
        self.send(2, fillers[1])
        time.sleep(0.05)  # it waits 200 ms: bmv2's queue (1 packet) is full
        for k in (1, 2, 3):
            self.send(flow.ack_port, flow.ack(k))  # ack(1) waits in the model, not in bmv2
        time.sleep(0.5)  # past ack(1)'s booked departure (~400 ms) and the slack
        last = flow.ack(4)
        self.send(flow.ack_port, last)
        got = self.collect(1, 0.8)
        self.assertEqual(got, [routed(p, 1) for p in (*fillers[1:], last)])


class CoalesceProgramSwapTest(CoalesceTest):
    """The program is swapped while ack(2) waits holding ack(3)'s state. bmv2 swaps only when no
    packet is in flight (it waits until its queues are empty), so ack(2) leaves first, under the
    old program and carrying ack(3)'s state: nothing is lost. The new program starts with its
    registers at zero, nothing waiting, and the flow carries on: ack(4) is queued and leaves. The
    queue runs at 1 packet/s here, so ack(2) is still waiting when the swap is asked for."""

    def install_entries(self) -> None:
        super().install_entries()
        assert self.client is not None
        set_queue_rate(self.client, 1, 1)

    def runTest(self) -> None:
        assert self.client is not None
        flow = self.new_flow()
        self.send_data(flow, range(8))
        self.first_ack_out(flow)
        waiting, absorbed = flow.ack(2), flow.ack(3)
        self.send(flow.ack_port, waiting)
        self.send(flow.ack_port, absorbed)
        time.sleep(0.05)
        asked = time.monotonic()
        self.client.load_program(compiled_program("ack_switch"))
        self.assertGreater(time.monotonic() - asked, 0.5, "the swap did not wait for the queued ACK")
        self.expect_next(routed(rewritten(waiting, absorbed), flow.data_port), flow.data_port)
        self.install_entries()  # tables start empty after a swap
        key, direction = flow.key()
        half = key.half(direction)
        self.assertEqual(
            [self.register("coalesce.last_serial", half)]
            + [self.register("coalesce.state", half * COALESCE_SLOTS + i) for i in range(COALESCE_SLOTS)],
            [0] * (1 + COALESCE_SLOTS),
            "the new program has state",
        )
        self.send_data(flow, range(8, 10))
        after = flow.ack(4)
        self.send(flow.ack_port, after)
        self.check_out(flow, [after], quiet_s=1.5)


class CoalesceWrapTest(CoalesceTest):
    """Sequence numbers and timestamps wrap across 2^32 while ACKs are absorbed."""

    def runTest(self) -> None:
        flow = self.new_flow(isn=2**32 - 3 * 1448, ts_base=2**32 - 3)
        self.send_data(flow, range(10))
        self.first_ack_out(flow)
        acks = [flow.ack(k) for k in range(2, 9)]
        for pkt in acks:
            self.send(flow.ack_port, pkt)
        self.assertLess(ack_fields(acks[-1])[0], ack_fields(acks[0])[0], "the test's ACK numbers wrap")
        self.check_out(flow, [rewritten(acks[0], acks[-1])])


# ---- the same over IPv6 (the TCP checksum of a rewritten ACK over IPv6's pseudo-header) ----


class CoalesceRewritesTheWaitingAckTest6(CoalesceRewritesTheWaitingAckTest):
    ip_version = 6


class CoalesceTwoFlowsTest6(CoalesceTwoFlowsTest):
    ip_version = 6


class CoalesceNeverAbsorbsTest6(CoalesceNeverAbsorbsTest):
    ip_version = 6


class CoalesceFoldsSackTest6(CoalesceFoldsSackTest):
    ip_version = 6


class CoalesceFoldsWindowUpdatesTest6(CoalesceFoldsWindowUpdatesTest):
    ip_version = 6


class CoalesceKeepsFoldedStateTest6(CoalesceKeepsFoldedStateTest):
    ip_version = 6


class CoalesceClosedByNewsTest6(CoalesceClosedByNewsTest):
    ip_version = 6


class CoalesceRecoveryTest6(CoalesceRecoveryTest):
    ip_version = 6


class CoalesceSackNeverFoldedTest6(CoalesceSackNeverFoldedTest):
    ip_version = 6


class CoalesceTailDropTest6(CoalesceTailDropTest):
    ip_version = 6


class CoalesceOneShortOfFullTest6(CoalesceOneShortOfFullTest):
    ip_version = 6


class CoalesceDeadlineTest6(CoalesceDeadlineTest):
    ip_version = 6


class CoalesceProgramSwapTest6(CoalesceProgramSwapTest):
    ip_version = 6


class CoalesceWrapTest6(CoalesceWrapTest):
    ip_version = 6
