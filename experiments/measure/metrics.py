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

from ackwise.twins.packets import ACK, SYN, TcpSegment
from ackwise.twins.serial import seq_diff


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


def packets_each_way(segments: Iterable[TcpSegment], a: str, b: str) -> tuple[int, int]:
    """TCP segments from address ``a`` to ``b`` and from ``b`` to ``a``: every packet of their
    connections (data, pure ACKs, SYN, FIN), Shang and Wills' count of packets per direction."""
    forward = backward = 0
    for seg in segments:
        if seg.src == a and seg.dst == b:
            forward += 1
        elif seg.src == b and seg.dst == a:
            backward += 1
    return forward, backward


# time, cwnd, ssthresh (None: not set yet), segments in flight (ss's unacked; None: not known)
CwndSample = tuple[float, int, int | None, int | None]


def in_congestion_avoidance(sample: CwndSample) -> bool:
    """The sender's own phase as ss shows it: an ssthresh set, cwnd at or above it, and no more
    segments unacknowledged than cwnd. Slow start has no ssthresh until HyStart or a loss sets
    one, or cwnd below it after a timeout. Loss recovery without SACK ends with cwnd at
    ssthresh, where Linux keeps it until the last hole is repaired, one hole per round trip: ss
    then shows cwnd = ssthresh, as in congestion avoidance, but more segments unacknowledged
    than cwnd (the duplicate ACKs count as segments that left the network). Outside recovery
    Linux sends no more than cwnd. (Issue 39: at 12 Mbit/s on one-flow one recovery lasted
    14 s of a 16 s transfer, cwnd = ssthresh = 107 with 290-360 segments unacknowledged, and
    the earlier rule counted all of it as congestion avoidance.)"""
    _, cwnd, ssthresh, unacked = sample
    return ssthresh is not None and cwnd >= ssthresh and (unacked is None or unacked <= cwnd)


@dataclass(frozen=True)
class EstimateError:
    """How a receiver's window estimate compares with the sender's cwnd, over the sender's
    congestion avoidance: per ss sample, (estimate - cwnd) / cwnd, the estimate being the
    receiver's latest at the sample's time."""

    median_abs: float  # median |relative error|
    median: float  # median relative error: its sign says whether the estimate runs high or low
    samples: int


def estimate_error(
    estimate: Sequence[tuple[float, float]], cwnd: Sequence[CwndSample], lag_s: float = 0.0
) -> EstimateError | None:
    """``estimate``: (time, segments) at each change, in time order; ``cwnd``: the sender's ss
    samples on the same clock. ``lag_s``: compare each sample with the estimate this much later
    (the receiver learns of the sender's window one forward delay after it changed). None when
    the sender never was in congestion avoidance or no estimate precedes its samples."""
    times = [t for t, _ in estimate]
    errors = []
    for sample in cwnd:
        if not in_congestion_avoidance(sample):
            continue
        t, window, _, _ = sample
        i = int(np.searchsorted(times, t + lag_s, side="right")) - 1
        if i < 0 or window <= 0:
            continue
        errors.append((estimate[i][1] - window) / window)
    if not errors:
        return None
    return EstimateError(float(np.median(np.abs(errors))), float(np.median(errors)), len(errors))


def acks_per_window(pure_acks: int, data_segments: int, cwnd: Sequence[CwndSample]) -> float | None:
    """Landström's measure of an ACK strategy: pure ACKs per send window of data, the window being
    the sender's mean cwnd over its congestion avoidance (ss): pure ACKs / (data segments / mean
    cwnd). None without congestion avoidance or data."""
    windows = [c for c in cwnd if in_congestion_avoidance(c)]
    if not windows or not data_segments:
        return None
    mean_cwnd = float(np.mean([w for _, w, _, _ in windows]))
    return pure_acks / (data_segments / mean_cwnd)


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


# The middle half of a transfer's bytes: what the congestion control's startup (BBR's takes about
# ten round trips: a third of a 40 MB transfer's time on 802.11n at 80 ms, docs/wlan-steady-goodput)
# and the transfers' ends (flows finishing one by one, the last window) leave out. TACK's goodput
# (Fig. 14(b)) is a long flow's, set against UDP's ideal.
STEADY_FROM, STEADY_TO = 0.25, 0.75
STEADY_MIN_POINTS = 4  # ACK times inside the window: fewer, and its ends are guesses


def delivered_bytes_series(
    segments: Iterable[TcpSegment], senders: set[str], receivers: dict[str, int]
) -> dict[tuple[str, int, str, int], list[tuple[float, int]]]:
    """Per connection (receiver, its port, sender, its port), the bytes the receiver had received,
    as far as its ACKs the capture saw said, at each that said more, (time, bytes): up to the
    highest byte it reported, its ACK number or the right edge of a SACK block, so a loss's hole
    does not hold the count back until its repair (the cumulative ACK stalls for a round trip,
    then jumps: at a window's edge that made a goodput over 10 % too high). Counted from the
    sender's SYN, or SYN-ACK where the receiver opened the connection (one whose SYN the capture
    missed is left out), and capped at the transfer's size, ``receivers[address]`` (its FIN
    takes one more)."""
    isn: dict[tuple[str, int, str, int], int] = {}
    points: dict[tuple[str, int, str, int], list[tuple[float, int]]] = {}
    for seg in sorted(segments, key=lambda x: x.time):
        if seg.src in senders and seg.dst in receivers and seg.flags & SYN:
            isn[(seg.dst, seg.dport, seg.src, seg.sport)] = seg.seq
        elif seg.src in receivers and seg.dst in senders and seg.flags & (SYN | ACK) == ACK:
            key = (seg.src, seg.sport, seg.dst, seg.dport)
            if key in isn:
                highest = max(seq_diff(edge, isn[key]) for edge in (seg.ack, *(r for _, r in seg.sack)))
                received = min(max(highest - 1, 0), receivers[seg.src])
                series = points.setdefault(key, [])
                if not series or received > series[-1][1]:
                    series.append((seg.time, received))
    return points


def steady_goodput_bps(
    series: Iterable[Sequence[tuple[float, int]]],
    total_bytes: int,
    low: float = STEADY_FROM,
    high: float = STEADY_TO,
) -> float | None:
    """Aggregate goodput over the middle of the transfers: the bytes received, summed over the
    connections (delivered_bytes_series), from the moment the sum reaches ``low`` of ``total_bytes``
    to the moment it reaches ``high``, over that time (bit/s, on the capture's clock). The sum is
    linear between the union of the connections' ACK times, so each crossing is interpolated
    exactly within its interval. None when the sum never reaches ``high`` or fewer than
    STEADY_MIN_POINTS ACK times fall inside the window."""
    flows = [np.asarray(s, dtype=float) for s in series if s]
    if not flows or total_bytes <= 0:
        return None
    grid = np.unique(np.concatenate([f[:, 0] for f in flows]))
    # each connection's bytes at every time of the grid: linear between its ACKs, 0 before its
    # first, its last after
    summed = sum(np.interp(grid, f[:, 0], f[:, 1], left=0.0, right=f[-1, 1]) for f in flows)
    times, total = grid.tolist(), np.asarray(summed).tolist()

    def crossing(target: float) -> float | None:
        for i, value in enumerate(total):
            if value >= target:
                if i == 0:
                    return times[0]
                before, span = total[i - 1], value - total[i - 1]
                return times[i - 1] + (times[i] - times[i - 1]) * (target - before) / span
        return None

    start, end = crossing(low * total_bytes), crossing(high * total_bytes)
    if start is None or end is None or end <= start:
        return None
    if sum(1 for t in times if start < t < end) < STEADY_MIN_POINTS:
        return None
    return (high - low) * total_bytes * 8 / (end - start)


def shared_medium(link_stats: dict[str, Any]) -> dict[str, Any]:
    """The shared medium's counters from the test bed's link stats (the linkem node named "air":
    WLAN and chain), or {} where the topology has none (wired only)."""
    media = link_stats.get("air", {}).get("media") or [{}]
    return dict(media[0])


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
    steady_bps: float | None = None,
) -> dict[str, float | int | None]:
    """The WLAN scenarios' metrics of one run (schema.METRICS has each one's meaning), in the
    emulated network's time: a test bed k times slower than the network it stands for delivers
    k times fewer bits and ACKs per second. ``stations`` send only ACKs here (downloads), so their
    airtime is the ACKs' airtime, aggregated or not. ``steady_bps``: steady_goodput_bps of the
    run, on the test bed's clock."""
    span_s = traffic_span_s(transfers)
    real_s = span_s / k if span_s else None
    goodput = aggregate_goodput_bps(transfers)
    return {
        "aggregate_goodput_mbps": goodput * k / 1e6 if goodput is not None else None,
        "steady_goodput_mbps": steady_bps * k / 1e6 if steady_bps is not None else None,
        "station_jain_index": jain_index(station_goodputs_bps) if len(station_goodputs_bps) > 1 else None,
        "pure_acks_per_segment": acks.acks_per_data_segment,
        "ack_frequency_hz": acks.pure_acks / real_s if real_s else None,
        **medium_metrics(medium, stations, ap, real_s),
    }


def medium_metrics(
    medium: dict[str, Any], stations: Iterable[str], ap: str, real_s: float | None
) -> dict[str, float | int | None]:
    """What the medium's counters say of a run (``real_s``: its traffic's span in the emulated
    network's seconds): the stations' share of the busy air (their answers: TCP ACKs, or the UDP
    tool's), collisions per second, the AP's A-MPDU size and its queue's drops."""
    ap_counters = transmitters(medium).get(ap, {})
    return {
        "ack_airtime_fraction": airtime_fraction(medium, stations),
        "collided_ppdus_per_s": collided_ppdus(medium) / real_s if real_s else None,
        "ap_mpdus_per_ppdu": mpdus_per_ppdu(medium, ap),
        "ap_queue_drops": int(ap_counters["queue_drops"]) if "queue_drops" in ap_counters else None,
    }


@dataclass(frozen=True)
class WindowClampCheck:
    """What the senders' samples say about a maximum window of ``max_window_pkts`` segments."""

    max_in_flight_segments: int  # the most segments in flight in any sample, the opening's too
    max_snd_wnd_bytes: int | None  # the largest window the sender heard (None: ss showed none)
    samples: int  # samples checked
    violations: int  # samples beyond their bound (the opening's or the maximum window's)
    first_violation_t_s: float | None

    @property
    def held(self) -> bool:
        return self.samples > 0 and self.violations == 0


# Linux raises a receiver's window clamp at the first full-sized segment (tcp_measure_rcv_mss
# resets it from the receive buffer) and grows the window by 2 segments (tcp_grow_window) in the
# same step, so the first ACK, sent before the receiving application can clamp again, may open the
# window to W + 2 segments. The right edge it announced is never taken back: until W + 3 segments
# are acknowledged, what was sent under it may still be in flight.
OPENING_EXTRA_SEGMENTS = 2


def window_clamp_check(
    samples: Sequence[dict[str, Any]], max_window_pkts: int, mss_bytes: int
) -> WindowClampCheck:
    """Whether a receiver's window clamp of ``max_window_pkts`` x ``mss_bytes`` held, from the
    sender's ``ss`` samples. A sample violates it when more segments are in flight than its bound
    allows, or when the window the sender heard would fit one more full segment (window scaling
    may round the clamp up by less than a segment). The bound is W, and W + 2 during the
    connection's opening (OPENING_EXTRA_SEGMENTS; until W + 3 segments are acknowledged)."""
    opening_end_bytes = (max_window_pkts + OPENING_EXTRA_SEGMENTS + 1) * mss_bytes

    def bound(sample: dict[str, Any]) -> int:
        opening = int(sample.get("bytes_acked") or 0) <= opening_end_bytes
        return max_window_pkts + (OPENING_EXTRA_SEGMENTS if opening else 0)

    windows = [int(s["snd_wnd"]) for s in samples if s.get("snd_wnd") is not None]
    bad = [
        s
        for s in samples
        if int(s.get("unacked") or 0) > bound(s)
        or (s.get("snd_wnd") is not None and int(s["snd_wnd"]) >= (bound(s) + 1) * mss_bytes)
    ]
    return WindowClampCheck(
        max_in_flight_segments=max((int(s.get("unacked") or 0) for s in samples), default=0),
        max_snd_wnd_bytes=max(windows) if windows else None,
        samples=len(samples),
        violations=len(bad),
        first_violation_t_s=round(float(bad[0]["t"]), 2) if bad else None,
    )
