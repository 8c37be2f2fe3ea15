"""Time scaling that keeps the bandwidth-delay product in packets.

bmv2 cannot forward an 802.11n or 802.11ac medium's frame rate on two cores, so the test bed
slows the medium by a factor k (every duration of medium.c multiplied by k). Slowing only the air
would shrink the path's BDP in packets by k: at x20 an 802.11ac path with a "10 ms" RTT held about
5 segments, and TACK's rule f = min(bw / (L * MSS), beta / RTTmin), which thins only once the
BDP exceeds beta * L segments, never engaged. So the whole scenario is slowed by the same k:

- the medium: every 802.11 duration x k (wireless.py, ``scale``);
- every wired link: delay x k, rate / k (catalog.py applies it to the WLAN and chain topologies);
- our own timers x k: the ACK policies' idle_ms, hold_ms, rtt_min_us, max_delay_s and
  rtt_refresh_s (``policy_params``). Not the AP repair agent's and the controller's periods:
  ``UNSCALED_AGENT_TIMERS`` lists them, and the WLAN reports name them where an arm runs them.

Then bw / k * RTT * k = bw * RTT: the BDP in packets, the number of RTTs a transfer of a given size
takes, and queue sizes in packets are the real network's. Transfer sizes and socket buffers need no
change: they are in bytes, and the BDP in bytes is unchanged too (``bdp_packets``). What does not
scale are the kernel's own constants; ``LINUX_TIMERS`` lists them and ``timer_distortions`` says
what each one does at a preset's k.

The k of each preset (``CHOSEN_K``) is the smallest at which the test bed still delivers the
model's saturated throughput through a bmv2 AP on this kind of machine (2 cores, the fast bmv2
build), with room for a TCP download's ACKs: measured by validation/testbed_k.py, recorded in
docs/testbed.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ackwise.controller.config import ControllerConfig
from ackwise.daemons.ap_agent import HANDSHAKE_REPAIR_S, STATIONS_REFRESH_S
from ackwise.topologies.wireless import bianchi, preset
from ackwise.twins.policies import MSS_BYTES

# The smallest k per preset at which (1) saturated UDP through the bmv2 AP (fast build) stays within
# 5 % of the model's prediction on this machine (2 shared cores), and (2) a TCP download's packets
# through the AP (data plus one ACK per two segments: 1.5 times the medium's frame rate) stay below
# the highest rate that passed (1), 14 500 packets/s (802.11ac at k = 5). Measured by
# validation/testbed_k.py; docs/testbed.md, "Time scale", has every run.
CHOSEN_K: dict[str, float] = {"802.11b": 1.0, "802.11g": 1.0, "802.11n": 3.0, "802.11ac": 7.0}
# The multihop chain's preset (802.11b-1mbps) carries under a tenth of 802.11b's frames: real time.
CHOSEN_K["802.11b-1mbps"] = 1.0
# What (2) allows: packets per second through the AP that saturated UDP showed it forwards.
AP_PPS_MEASURED = 14_500

# Policy parameters that are times, scaled with the scenario: the switch policies' (twins/policies.py)
# and the host agent's maximum ACK delay (hosts/policies.py, every policy the agent runs).
POLICY_TIME_PARAMS = ("idle_ms", "hold_ms", "rtt_min_us", "max_delay_s", "rtt_refresh_s")


@dataclass(frozen=True)
class LinuxTimer:
    name: str
    ms: float
    source: str
    distorts: str


# Linux TCP constants that stay in real time however slow the scenario runs (include/net/tcp.h).
# Everything else in TCP's timing is derived from measured RTTs and scales by itself (the RTO
# above its floor, the tail-loss probe at 2 SRTT, RACK's reordering window at SRTT / 4, pacing).
LINUX_TIMERS = (
    LinuxTimer(
        "initial RTO",
        1000,
        "TCP_TIMEOUT_INIT (RFC 6298 2.1)",
        "a lost SYN, SYN-ACK or first segment is retransmitted after 1 s of emulated time, which is "
        "1/k s of the emulated network's: recovery from handshake losses looks k times faster than "
        "it is. The scenarios lose nothing in the handshake (no medium loss on it), so only the "
        "lossy-medium runs can meet it.",
    ),
    LinuxTimer(
        "minimum RTO",
        200,
        "TCP_RTO_MIN",
        "the RTO's floor is 200/k ms of the emulated network's time: where SRTT + 4 RTTVAR is below "
        "200 ms in reality (every WLAN scenario) the real RTO is 200 ms but the emulated one is "
        "200 ms / k in real terms, up to k times tighter. Held-back or thinned ACKs that stretch an "
        "RTT sample then trigger spurious RTOs that a real network would not see: a bias against "
        "ACK reduction in RTO counts and completion times.",
    ),
    LinuxTimer(
        "delayed ACK",
        40,
        "TCP_DELACK_MIN (the ATO's floor; TCP_ATO_MIN)",
        "the receiver's delayed-ACK timer fires after 40/k ms of the emulated network's time: a "
        "lone segment is ACKed k times sooner (in RTTs) than in reality, so the baseline sends "
        "more ACKs wherever segments arrive more than 40 ms apart in emulated time (slow start, "
        "window ends, application-limited flows); a bias in favour of ACK reduction in "
        "ACKs per segment.",
    ),
)


# BBR's own constants (net/ipv4/tcp_bbr.c), real time too: they matter where a scenario's senders run
# bbr (the TACK paper's baseline sender).
BBR_TIMERS = (
    LinuxTimer(
        "BBR min-RTT window",
        10_000,
        "bbr_min_rtt_win_sec (tcp_bbr.c)",
        "BBR enters ProbeRTT when its minimum RTT has not been renewed for 10 s: 10/k s of the "
        "emulated network's time, so ProbeRTT comes k times more often than in reality (a run "
        "longer than 10 s on the test bed meets one, where the real network would meet none in "
        "10 k s).",
    ),
    LinuxTimer(
        "BBR ProbeRTT",
        200,
        "bbr_probe_rtt_mode_ms (tcp_bbr.c)",
        "ProbeRTT keeps the window at 4 segments for 200 ms and a round: 200/k ms of the emulated "
        "network's time, so each ProbeRTT costs k times fewer RTTs than in reality.",
    ),
)


@dataclass(frozen=True)
class TimeScale:
    """k: the emulation runs k times slower than the network it stands for."""

    k: float = 1.0

    def __post_init__(self) -> None:
        if not self.k > 0:
            raise ValueError(f"time scale k={self.k}: give a positive factor (1: real time)")

    def delay_ms(self, real_ms: float) -> float:
        return real_ms * self.k

    def rate_mbps(self, real_mbps: float) -> float:
        """A wired rate; 0 (no limit) stays 0."""
        return real_mbps / self.k

    def timer_s(self, real_s: float) -> float:
        return real_s * self.k

    def policy_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """An ACK policy's parameters with its times scaled (0, 'off', stays 0). A value keeps its
        type: a number stays a number, a string (as an arm's parameters are written) a string;
        milliseconds and microseconds stay whole, seconds need not."""
        return {
            name: self._time(name, value) if name in POLICY_TIME_PARAMS else value
            for name, value in params.items()
        }

    def _time(self, name: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return value
        try:
            number = float(value)
        except ValueError:
            return value  # not a number ('off'): the policy's own parser says what it accepts
        scaled = number * self.k if name.endswith("_s") else round(number * self.k)
        if isinstance(value, str):
            return f"{scaled:g}" if isinstance(scaled, float) else str(scaled)
        return scaled


def bdp_packets(rate_bps: float, rtt_ms: float, frame_bytes: int = 1514) -> float:
    """Bandwidth-delay product in frames; the same for (rate, rtt) and (rate / k, rtt * k)."""
    return rate_bps * rtt_ms / 1000 / (8 * frame_bytes)


def tack_thins(bdp_pkts: float, beta: int = 4, ack_every: int = 2) -> bool:
    """TACK's rule f = min(bw / (L * MSS), beta / RTTmin) switches to the RTT-bound frequency
    (fewer ACKs than every L segments) once the BDP reaches beta * L segments."""
    return bdp_pkts >= beta * ack_every


@dataclass(frozen=True)
class Distortion:
    timer: LinuxTimer
    k: float
    rtt_ms: float  # the emulated network's RTT (real-world terms)

    @property
    def real_rtts(self) -> float:
        """The timer in RTTs in the network being emulated."""
        return self.timer.ms / self.rtt_ms

    @property
    def emulated_rtts(self) -> float:
        """The timer in RTTs on the test bed (whose RTT is k times longer)."""
        return self.timer.ms / (self.rtt_ms * self.k)


def timer_distortions(k: float, rtt_ms: float) -> list[Distortion]:
    return [Distortion(t, k, rtt_ms) for t in LINUX_TIMERS]


# ---- our own timers that do not scale ----


@dataclass(frozen=True)
class AgentTimer:
    """A timer of one of our agents that runs in real time at any k, and the arms it applies to:
    ``ap`` (the AP proxy's repair agent) or ``auto`` (the per-flow controller of a switch)."""

    name: str
    seconds: float
    place: str


# The AP repair agent's handshake repair stays in real time on purpose: it must come before the
# sender's SYN timer (Linux's initial RTO, 1 s), which does not scale either. The others are
# periods of reading the switch; at k > 1 they run k times more often in the emulated network's time.
UNSCALED_AGENT_TIMERS = (
    AgentTimer("AP repair agent's handshake repair", HANDSHAKE_REPAIR_S, "ap"),
    AgentTimer("AP repair agent's stations refresh", STATIONS_REFRESH_S, "ap"),
    AgentTimer("controller's period", ControllerConfig.interval_ms / 1000, "auto"),
)


def unscaled_agent_timers_text(k: float, places: set[str]) -> str:
    """'AP repair agent's handshake repair 0.25 s -> 0.083 s, ...': the agent timers of the arms'
    places (``ap``, ``auto``), real time -> the emulated network's at k; '' at k = 1 or for none."""
    if k == 1:
        return ""
    return ", ".join(
        f"{t.name} {t.seconds:g} s -> {t.seconds / k:.2g} s"
        for t in UNSCALED_AGENT_TIMERS
        if t.place in places
    )


# ---- queues that hold BBR's startup, and what the bmv2 AP is offered ----

# Linux BBR's startup gain (tcp_bbr.c, bbr_high_gain = 2885 / 1000): its pacing rate and its cwnd
# are this many times its bandwidth estimate and BDP, so at the end of startup up to 2.885 BDPs are
# in flight, 1.885 of them queued wherever the path is slower than the sender's pace.
BBR_STARTUP_GAIN = 2.885
FRAME_BYTES = 1514


def bbr_startup_queue_pkts(bdp_segments: float) -> float:
    """The queue BBR's startup parks at the bottleneck: 1.885 BDPs. A smaller queue overflows at
    the end of every startup, and each loss makes the receiver answer an RTT's segments with a
    duplicate ACK each (about a BDP of them), which the safety contract keeps."""
    return (BBR_STARTUP_GAIN - 1) * bdp_segments


def ap_offered_pps(wired_rate_mbps: float, capacity_mbps: float, k: float) -> float:
    """The highest frame rate (test-bed time) at which a BBR sender's data reaches the AP switch:
    its startup pace, BBR_STARTUP_GAIN x the medium's capacity, capped by the wired link."""
    return min(wired_rate_mbps, BBR_STARTUP_GAIN * capacity_mbps) / k * 1e6 / (8 * FRAME_BYTES)


# ---- what a WLAN scenario's report says of each point (the header) ----

PAPER_MSS_BYTES = 1500  # TACK §VII-A: "data packets are full-sized with MSS = 1500 bytes"
# The rates the TACK paper states for its links (§VII-A: PHY 11/54/300/866.7 Mbit/s, the table's
# phy_rate_mbps) and the one UDP baseline it gives (§VII-C, Fig. 13(b): 802.11n, 210 Mbit/s).
PAPER_UDP_BASELINE_MBPS = {"802.11n": 210.0}


@dataclass(frozen=True)
class PointScale:
    """One WLAN point in the real network's terms: its path, its BDP beside the paper's, its time
    scale and what that scale leaves distorted."""

    preset: str
    k: float
    rtt_ms: float  # RTTmin: the wired round trip and one data frame's and one ACK's exchange
    capacity_mbps: float  # TCP payload the medium carries from a saturated AP (Bianchi, 1 sender)
    bdp_segments: float  # capacity x RTTmin, in segments of the hosts' MSS
    paper_bdp_segments: float  # the paper's PHY rate x RTTmin, in its 1500-byte segments
    paper_udp_bdp_segments: float | None  # the same at the paper's UDP baseline, where it gives one
    timers: tuple[Distortion, ...]

    def timers_text(self) -> str:
        """'minimum RTO 2.5 -> 0.83 RTTs, ...': each timer in RTTs, in reality -> on the test bed."""
        return ", ".join(
            f"{d.timer.name} {_rtts(d.real_rtts)} -> {_rtts(d.emulated_rtts)}" for d in self.timers
        )


def _rtts(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def point_scale(params: dict[str, Any]) -> PointScale | None:
    """A WLAN point's scale and BDP from its topology parameters (``preset``, ``scale``,
    ``wired_delay_ms``, ``cc``: BBR's timers too where it is bbr); None when they name no 802.11
    preset, scale or wired delay (the topology's defaults are the topology's to say, not this
    header's)."""
    if not {"preset", "scale", "wired_delay_ms"} <= set(params):
        return None
    p = preset(str(params["preset"]))
    k = float(params["scale"])
    air_ms = (p.airtime_us(1514) + p.airtime_us(66)) / 1000
    rtt_ms = 2 * float(params["wired_delay_ms"]) + air_ms
    capacity = bianchi(p, 1, 1514, payload_bytes=MSS_BYTES).throughput_bps
    timers = LINUX_TIMERS + (BBR_TIMERS if params.get("cc") == "bbr" else ())
    udp = PAPER_UDP_BASELINE_MBPS.get(p.name)
    return PointScale(
        preset=p.name,
        k=k,
        rtt_ms=rtt_ms,
        capacity_mbps=capacity / 1e6,
        bdp_segments=capacity * rtt_ms / 1000 / (8 * MSS_BYTES),
        paper_bdp_segments=p.phy_rate_bps * rtt_ms / 1000 / (8 * PAPER_MSS_BYTES),
        paper_udp_bdp_segments=udp * 1e6 * rtt_ms / 1000 / (8 * PAPER_MSS_BYTES) if udp else None,
        timers=tuple(Distortion(t, k, rtt_ms) for t in timers),
    )
