"""The comparison's metrics, computed from what a run measured: pure functions, no I/O.

Inputs are the segments a capture saw on the constrained link (ackwise.twins.packets.TcpSegment), the
transfers' results, the senders' cwnd/RTT samples and the link emulator's counters. Each metric's
name, unit and direction are in schema.METRICS.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ackwise.twins.packets import TcpSegment


@dataclass(frozen=True)
class AckCounts:
    data_segments: int  # data segments from the senders
    pure_acks: int  # pure ACKs from the receivers

    @property
    def acks_per_data_segment(self) -> float | None:
        return self.pure_acks / self.data_segments if self.data_segments else None


def ack_counts(segments: Iterable[TcpSegment], senders: set[str], receivers: set[str]) -> AckCounts:
    """Data segments sent by ``senders`` to ``receivers``, and the pure ACKs coming back."""
    data = acks = 0
    for seg in segments:
        if seg.src in senders and seg.dst in receivers and seg.payload_len > 0:
            data += 1
        elif seg.src in receivers and seg.dst in senders and seg.is_pure_ack:
            acks += 1
    return AckCounts(data, acks)


def ack_rate_series(
    segments: Iterable[TcpSegment], receiver: str, sender: str, bin_s: float = 0.5
) -> tuple[list[float], list[float]]:
    """Pure ACKs per second from ``receiver`` to ``sender`` in bins of ``bin_s``, from the first
    segment of the flow; (bin start times, rates)."""
    times = [s.time for s in segments if s.src == receiver and s.dst == sender and s.is_pure_ack]
    if not times:
        return [], []
    start = min(times)
    n_bins = int((max(times) - start) / bin_s) + 1
    counts = np.zeros(n_bins)
    for t in times:
        counts[int((t - start) / bin_s)] += 1
    return [round(i * bin_s, 3) for i in range(n_bins)], [float(c / bin_s) for c in counts]


def avoidable_pure_acks(
    segments: Sequence[TcpSegment], receiver: tuple[str, int], sender: str, within_s: float = 0.04
) -> tuple[int, int]:
    """Shang and Wills: pure ACKs the data receiver (address, port: one connection) sent to
    ``sender`` that its own data on that connection could have carried. A pure ACK counts when the
    receiver sent a data segment on the same connection within ``within_s`` after it (TCP's usual
    delayed-ACK budget) acknowledging at least as much: holding the ACK that long would have let
    the data carry it. Returns (avoidable, all pure ACKs on the connection)."""
    host, port = receiver
    ordered = sorted(
        (s for s in segments if s.src == host and s.sport == port and s.dst == sender), key=lambda s: s.time
    )
    avoidable = total = 0
    for i, seg in enumerate(ordered):
        if not seg.is_pure_ack:
            continue
        total += 1
        for later in ordered[i + 1 :]:
            if later.time - seg.time > within_s:
                break
            if later.payload_len > 0 and (later.ack - seg.ack) % 2**32 < 2**31:
                avoidable += 1
                break
    return avoidable, total


def jain_index(values: Sequence[float]) -> float | None:
    """Jain's fairness index: 1 when every flow got the same, 1/n when one got everything."""
    xs = [v for v in values if v is not None]
    if not xs or sum(x * x for x in xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def queue_delay_ms(rtt_samples_ms: Sequence[float]) -> float | None:
    """Mean RTT above the flow's smallest: the queueing its packets and ACKs met on the path."""
    xs = [x for x in rtt_samples_ms if x == x]  # drop NaN
    if len(xs) < 2:
        return None
    return float(np.mean(xs) - min(xs))


def percentile(values: Sequence[float], q: float) -> float | None:
    xs = [v for v in values if v is not None]
    return float(np.percentile(xs, q)) if xs else None


# ---- the WLAN scenarios' metrics (issue 37): new names, so no record of the linkem 1 model mixes
# with these; rates in the emulated network's time (the test bed's divided by its time scale k) ----


@dataclass(frozen=True)
class TransferSpan:
    size_bytes: int
    started_at: float  # wall clock, s
    completion_s: float


def traffic_span_s(transfers: Sequence[TransferSpan]) -> float | None:
    """From the first transfer's start to the last byte of any (s, on the test bed's clock)."""
    if not transfers:
        return None
    return max(t.started_at + t.completion_s for t in transfers) - min(t.started_at for t in transfers)


def aggregate_goodput_bps(transfers: Sequence[TransferSpan]) -> float | None:
    """All bytes over the time from the first start to the last byte: what the stations got
    together, which a station finishing early cannot inflate (the sum of per-flow rates can)."""
    span = traffic_span_s(transfers)
    if not span or span <= 0:
        return None
    return sum(t.size_bytes for t in transfers) * 8 / span


def transmitters(medium: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """linkem's per-transmitter counters of one medium ({name: its ``model`` counters})."""
    return {t["name"]: t.get("model", {}) for t in medium.get("transmitters", [])}


def airtime_fraction(medium: dict[str, Any], names: Iterable[str]) -> float | None:
    """Share of the medium's busy time that the named transmitters held: their PPDUs (collided
    ones too) and the responses to them, over the union of everything that kept the air busy."""
    busy = int(medium.get("busy_ns", 0))
    if busy <= 0:
        return None
    counters = transmitters(medium)
    return min(1.0, sum(int(counters.get(n, {}).get("airtime_ns", 0)) for n in names) / busy)


def collided_ppdus(medium: dict[str, Any]) -> int:
    """PPDUs that collided, every transmitter's counted (a collision of two PPDUs counts two)."""
    return sum(int(c.get("ppdus_collided", 0)) for c in transmitters(medium).values())


def mpdus_per_ppdu(medium: dict[str, Any], name: str) -> float | None:
    """Mean MPDUs a transmitter put in one PPDU (A-MPDU size; 1 without aggregation)."""
    c = transmitters(medium).get(name, {})
    ppdus = int(c.get("ppdus", 0))
    return int(c.get("mpdus_sent", 0)) / ppdus if ppdus else None


def wlan_metrics(
    transfers: Sequence[TransferSpan],
    station_goodputs_bps: Sequence[float],
    acks: AckCounts,
    medium: dict[str, Any],
    stations: Iterable[str],
    ap: str,
    k: float,
) -> dict[str, float | int | None]:
    """The WLAN scenarios' metrics of one run (schema.METRICS has each one's meaning), in the
    emulated network's time: a test bed k times slower than the network it stands for delivers
    k times fewer bits and ACKs per second. ``stations`` send only ACKs here (downloads), so their
    airtime is the ACKs' airtime, aggregated or not."""
    span_s = traffic_span_s(transfers)
    real_s = span_s / k if span_s else None
    goodput = aggregate_goodput_bps(transfers)
    ap_counters = transmitters(medium).get(ap, {})
    return {
        "aggregate_goodput_mbps": goodput * k / 1e6 if goodput is not None else None,
        "station_jain_index": jain_index(station_goodputs_bps) if len(station_goodputs_bps) > 1 else None,
        "pure_acks_per_segment": acks.acks_per_data_segment,
        "ack_frequency_hz": acks.pure_acks / real_s if real_s else None,
        "ack_airtime_fraction": airtime_fraction(medium, stations),
        "collided_ppdus_per_s": collided_ppdus(medium) / real_s if real_s else None,
        "ap_mpdus_per_ppdu": mpdus_per_ppdu(medium, ap),
        "ap_queue_drops": int(ap_counters["queue_drops"]) if "queue_drops" in ap_counters else None,
    }
