"""The 802.11 medium model's parameters and arithmetic, with presets for 802.11b/g/n/ac.

The model itself (DCF/EDCA contention with collisions, A-MPDU with Block Ack) is C code,
topologies/linkem/medium.c, which both linkem's real-time loop and its virtual-time driver run
(``topologies/medium_model.py`` drives the latter). This module holds what feeds it:

- the presets, read from the one parameter table ``wifi_params.toml`` (every value with its
  IEEE 802.11-2016 clause or table);
- the durations derived from them (data PPDUs, ACK and Block Ack, AIFS, EIFS, ACK timeout),
  written into linkem's configuration by ``linkem_medium_args``;
- Bianchi's saturation throughput of DCF, the reference the virtual-time model is pinned to;
- the time scale: ``scale`` multiplies every duration of the medium, so a fast preset can run
  slower than real time (within what bmv2 forwards on a small machine) with the same ratios
  (``topologies/timescale.py`` scales the rest of a scenario with it).

Frame sizes here are Ethernet frames without FCS, as linkem sees them (1514 bytes for a 1500-byte
IP packet); an 802.11 MPDU carries the IP packet behind a MAC header and LLC/SNAP, with an FCS.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

# The medium model's version, recorded with every experiment run (its provenance): raise it with
# any change to the parameter table or to what a frame costs on the medium. linkem's own
# LINKEM_MODEL_VERSION names the C model's version; run records keep both.
AIRTIME_MODEL_VERSION = (
    "3 (wifi_params.toml: DCF/EDCA with collisions, EIFS, retry limits; A-MPDU and Block Ack for n/ac; "
    "RTS/CTS and the 1 Mbit/s DSSS preset of the multihop chain)"
)

PARAMS_PATH = Path(__file__).with_name("wifi_params.toml")
ETHERNET_HEADER_BYTES = 14


@cache
def parameter_table() -> dict[str, Any]:
    """The table as written: {section: {name: [value, source]}}."""
    with PARAMS_PATH.open("rb") as f:
        table = tomllib.load(f)
    for section, entries in [("common", table["common"]), *table["presets"].items()]:
        for name, entry in entries.items():
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], str) and entry[1]):
                raise ValueError(f'{PARAMS_PATH}: [{section}] {name} must be [value, "source"]')
    return table


@dataclass(frozen=True)
class WirelessPreset:
    """One 802.11 configuration; times in microseconds, unscaled unless a name says so."""

    name: str
    phy: str
    phy_rate_mbps: float
    slot_us: float
    sifs_us: float
    aifsn: int
    cw_min: int
    cw_max: int
    retry_limit: int
    long_retry_limit: int
    preamble_us: float
    symbol_us: float
    bits_per_symbol: int
    service_bits: int
    tail_bits: int
    signal_ext_us: float
    ack_us: float
    block_ack_us: float
    rts_cts: bool
    rts_us: float
    cts_us: float
    eifs_ack_us: float
    rx_phy_start_delay_us: float
    cca_us: float
    mac_header_bytes: int
    llc_snap_bytes: int
    fcs_bytes: int
    aggregate: bool
    max_ampdu_bytes: int
    max_ppdu_us: float
    block_ack_window: int
    scale: float = 1.0

    @property
    def phy_rate_bps(self) -> float:
        return self.phy_rate_mbps * 1e6

    @property
    def mac_bytes(self) -> int:
        """Bytes an Ethernet frame grows by to become an MPDU."""
        return self.mac_header_bytes + self.llc_snap_bytes + self.fcs_bytes - ETHERNET_HEADER_BYTES

    @property
    def aifs_us(self) -> float:
        """AIFS[AC_BE] for EDCA, DIFS for DCF: SIFS + AIFSN slots (10.3.2.3.3, 10.22.2.4)."""
        return self.sifs_us + self.aifsn * self.slot_us

    @property
    def eifs_extra_us(self) -> float:
        """EIFS - DIFS (10.3.2.3.7): SIFS + the estimated ACK time of Table 10-5."""
        return self.sifs_us + self.eifs_ack_us

    @property
    def ack_timeout_us(self) -> float:
        """From the end of a PPDU until its missing ACK counts as lost (10.3.2.9)."""
        return self.sifs_us + self.slot_us + self.rx_phy_start_delay_us

    @property
    def mean_backoff_us(self) -> float:
        return self.cw_min / 2 * self.slot_us

    def mpdu_bytes(self, frame_bytes: int, in_ampdu: bool = False) -> int:
        """The MPDU of an Ethernet frame; in an A-MPDU with its delimiter and padding (9.7.1)."""
        mpdu = frame_bytes + self.mac_bytes
        return (4 + mpdu + 3) // 4 * 4 if in_ampdu else mpdu

    def ampdu_bytes(self, frame_bytes: int, count: int) -> int:
        """A-MPDU of ``count`` equal frames: padding between subframes, none after the last."""
        if count == 1:
            return self.mpdu_bytes(frame_bytes)
        return (count - 1) * self.mpdu_bytes(frame_bytes, True) + 4 + frame_bytes + self.mac_bytes

    def ppdu_us(self, psdu_bytes: int) -> float:
        """A data PPDU carrying ``psdu_bytes`` (an MPDU or an A-MPDU), unscaled: preamble and
        header, whole symbols for SERVICE + data + tail, signal extension."""
        symbols = math.ceil((self.service_bits + 8 * psdu_bytes + self.tail_bits) / self.bits_per_symbol)
        return self.preamble_us + symbols * self.symbol_us + self.signal_ext_us

    def ampdu_limit(self, frame_bytes: int) -> int:
        """How many frames of ``frame_bytes`` fit in one A-MPDU: the Block Ack window, the maximum
        A-MPDU length and aPPDUMaxTime (1 without aggregation)."""
        if not self.aggregate:
            return 1
        count = 1
        while count < self.block_ack_window:
            size = self.ampdu_bytes(frame_bytes, count + 1)
            if size > self.max_ampdu_bytes or self.ppdu_us(size) > self.max_ppdu_us:
                break
            count += 1
        return count

    def exchange_us(self, frame_bytes: int, count: int = 1) -> float:
        """Busy air of one successful exchange (RTS, SIFS, CTS, SIFS where the preset uses
        RTS/CTS; the PPDU, SIFS, ACK or Block Ack), scaled."""
        response = self.block_ack_us if count > 1 else self.ack_us
        handshake = self.rts_us + self.cts_us + 2 * self.sifs_us if self.rts_cts else 0.0
        ppdu = self.ppdu_us(self.ampdu_bytes(frame_bytes, count))
        return (handshake + ppdu + self.sifs_us + response) * self.scale

    def airtime_us(self, frame_bytes: int) -> float:
        """What one lone frame costs the medium with no contender, scaled: AIFS, the mean
        backoff, the PPDU, SIFS and the ACK."""
        return (self.aifs_us + self.mean_backoff_us) * self.scale + self.exchange_us(frame_bytes)

    def with_scale(self, scale: float) -> WirelessPreset:
        if not (scale > 0 and math.isfinite(scale)):
            raise ValueError(f"time scale must be a positive number, not {scale}")
        return replace(self, scale=scale)

    def linkem_medium_args(self, loss: float = 0.0, limit_pkts: int = 100, delay_us: float = 0.0) -> str:
        """The key=value arguments of linkem's ``medium`` directive (every one it requires)."""
        ns = {
            "slot_ns": self.slot_us,
            "sifs_ns": self.sifs_us,
            "aifs_ns": self.aifs_us,
            "eifs_extra_ns": self.eifs_extra_us,
            "ack_timeout_ns": self.ack_timeout_us,
            "detect_ns": self.cca_us,
            "preamble_ns": self.preamble_us,
            "symbol_ns": self.symbol_us,
            "signal_ext_ns": self.signal_ext_us,
            "ack_ns": self.ack_us,
            "block_ack_ns": self.block_ack_us,
            "max_ppdu_ns": self.max_ppdu_us,
            "rts_ns": self.rts_us,
            "cts_ns": self.cts_us,
        }
        counts = {
            "cw_min": self.cw_min,
            "cw_max": self.cw_max,
            "retry_limit": self.retry_limit,
            "long_retry_limit": self.long_retry_limit,
            "rts_cts": int(self.rts_cts),
            "bits_per_symbol": self.bits_per_symbol,
            "service_bits": self.service_bits,
            "tail_bits": self.tail_bits,
            "mac_bytes": self.mac_bytes,
            "aggregate": int(self.aggregate),
            "max_ampdu_bytes": self.max_ampdu_bytes,
            "max_mpdus": self.block_ack_window if self.aggregate else 1,
            "limit_pkts": limit_pkts,
        }
        parts = [f"{k}={v * 1000:.0f}" for k, v in ns.items()]
        parts += [f"{k}={v}" for k, v in counts.items()]
        parts += [f"loss={loss:g}", f"scale={self.scale:g}", f"delay_us={delay_us:g}"]
        return " ".join(parts)


def _build_presets() -> dict[str, WirelessPreset]:
    table = parameter_table()
    common = {k: v[0] for k, v in table["common"].items()}
    names = {f.name for f in fields(WirelessPreset)}
    presets = {}
    for name, entries in table["presets"].items():
        values = {k: v[0] for k, v in entries.items()}
        merged = {k: v for k, v in (common | values).items() if k in names}
        missing = names - set(merged) - {"name", "scale"}
        if missing:
            raise ValueError(f"{PARAMS_PATH}: preset {name} lacks {', '.join(sorted(missing))}")
        presets[name] = WirelessPreset(name=name, **merged)
    return presets


PRESETS: dict[str, WirelessPreset] = _build_presets()


def preset(name: str, scale: float = 1.0) -> WirelessPreset:
    try:
        base = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown wireless preset {name!r}; known: {', '.join(PRESETS)}") from None
    return base.with_scale(scale)


@dataclass(frozen=True)
class Bianchi:
    """Bianchi's saturation model of DCF (G. Bianchi, "Performance analysis of the IEEE 802.11
    distributed coordination function", IEEE JSAC 18(3), 2000)."""

    n: int
    tau: float  # probability that a station transmits in a slot (eq. 7)
    p: float  # probability that a transmission collides (eq. 9)
    throughput_bps: float  # bits of ``payload_bytes`` per frame delivered (eq. 13)


def bianchi(p: WirelessPreset, n: int, frame_bytes: int, payload_bytes: int | None = None) -> Bianchi:
    """Saturation throughput of ``n`` stations, each always holding frames of ``frame_bytes``
    (Ethernet) for one receiver; aggregating presets send full A-MPDUs (``ampdu_limit`` frames).

    Counts ``payload_bytes`` per frame delivered (default: the Ethernet frame). Solves the fixed
    point of eq. (7) and eq. (9) by bisection on p, then eq. (13) with the basic-access times of
    eq. (15), written for this model: a success keeps the medium for the PPDU, SIFS, the response
    and AIFS; a collision for the PPDU, EIFS - DIFS and AIFS (what a station that heard it
    waits); with RTS/CTS (eq. 16) a success also holds it for RTS, CTS and two SIFS, and a
    collision holds it for the RTS, EIFS - DIFS and AIFS. Unscaled. Bianchi's chain has no retry
    limit: the model drops a frame after ``retry_limit`` attempts, with probability
    p^retry_limit (below 1e-3 for 10 contenders)."""
    if n < 1:
        raise ValueError("Bianchi's model needs at least one station")
    w = p.cw_min + 1  # W: the window size of the first stage
    m = round(math.log2((p.cw_max + 1) / w))  # backoff stages: CWmax + 1 = 2^m W
    count = p.ampdu_limit(frame_bytes)

    def tau_of(coll: float) -> float:  # eq. (7)
        if abs(1 - 2 * coll) < 1e-12:
            coll += 1e-9
        return 2 * (1 - 2 * coll) / ((1 - 2 * coll) * (w + 1) + coll * w * (1 - (2 * coll) ** m))

    lo, hi = 0.0, 1.0  # g(p) = 1 - (1 - tau(p))^(n-1) - p (eq. 9) decreases in p
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1 - (1 - tau_of(mid)) ** (n - 1) - mid > 0:
            lo = mid
        else:
            hi = mid
    coll = (lo + hi) / 2 if n > 1 else 0.0
    tau = tau_of(coll)
    p_tr = 1 - (1 - tau) ** n  # eq. (10)
    p_s = n * tau * (1 - tau) ** (n - 1) / p_tr  # eq. (11)
    ppdu = p.ppdu_us(p.ampdu_bytes(frame_bytes, count))
    response = p.block_ack_us if count > 1 else p.ack_us
    t_s = ppdu + p.sifs_us + response + p.aifs_us  # eq. (15), propagation delay 0
    t_c = ppdu + p.eifs_extra_us + p.aifs_us
    if p.rts_cts:  # eq. (16), RTS/CTS access: only RTS collide, and they are short
        t_s += p.rts_us + p.sifs_us + p.cts_us + p.sifs_us
        t_c = p.rts_us + p.eifs_extra_us + p.aifs_us
    payload_bits = 8 * (frame_bytes if payload_bytes is None else payload_bytes) * count
    slot_time = (1 - p_tr) * p.slot_us + p_tr * p_s * t_s + p_tr * (1 - p_s) * t_c
    throughput = p_s * p_tr * payload_bits / (slot_time * 1e-6)  # eq. (13)
    return Bianchi(n, tau, coll, throughput / p.scale)


# The multihop chain of Altman and Jiménez (section 3, after Fu et al., INFOCOM 2003): nodes on a
# line, ns-2's default 802.11 (the 802.11b-1mbps preset: DSSS 1 Mbit/s, RTS/CTS before every
# frame). The same ranges drive the model (linkem's ranges/position lines) and the ns-3 reference
# (validation/ns3/chain_validation.cc, which hard-codes them: keep the two equal).
CHAIN_PRESET = "802.11b-1mbps"


@dataclass(frozen=True)
class ChainGeometry:
    spacing_m: float = 200.0  # between neighbours on the line
    tx_m: float = 250.0  # a frame is decoded within this distance of its transmitter
    cs_m: float = 550.0  # ... and sensed (carrier sense, EIFS when not decoded) within this one
    interference_m: float = 550.0  # a transmitter this close to a receiver corrupts its frame
    # ... unless the receiver was already receiving the frame and the interferer is at least this
    # many times as far from it as the frame's transmitter: ns-2's capture (CPThresh_ 10 dB, a
    # frame arriving while another is received is ignored when 10 dB weaker) under its two-ray
    # ground path loss (d^-4 beyond 86 m): 10^(10/40). At 200 m spacing the hidden node two hops
    # from a receiver (400 m, 12 dB weaker) cannot corrupt a frame from its neighbour once that is
    # being received (issue 38: without this the model lost data frames ns-2 and ns-3 keep).
    capture_ratio: float = 10 ** (10 / 40)

    def distance_m(self, a: int, b: int) -> float:
        return abs(a - b) * self.spacing_m

    def relations(self, nodes: int) -> dict[str, dict[int, set[int]]]:
        """Per relation (decodes, senses, interfered_by) and node: the other nodes it holds with."""
        limits = {"decodes": self.tx_m, "senses": self.cs_m, "interfered_by": self.interference_m}
        return {
            rel: {a: {b for b in range(nodes) if b != a and self.distance_m(a, b) <= r} for a in range(nodes)}
            for rel, r in limits.items()
        }


CHAIN_RANGES = ChainGeometry()


def placement_lines(medium: str, names: list[str], geometry: ChainGeometry = CHAIN_RANGES) -> list[str]:
    """linkem's lines that put ``names`` on a line, in order, ``geometry.spacing_m`` apart, with
    the geometry's ranges (the emulator's chain and the virtual-time model alike)."""
    g = geometry
    lines = [
        f"ranges {medium} tx_m={g.tx_m:g} cs_m={g.cs_m:g} interference_m={g.interference_m:g} "
        f"capture={g.capture_ratio:.4f}"
    ]
    lines += [f"position {medium} {name} x_m={k * g.spacing_m:g} y_m=0" for k, name in enumerate(names)]
    return lines
