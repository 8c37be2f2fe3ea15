"""The 802.11 airtime model used by the shared-medium emulator, with presets for 802.11b/g/n/ac.

Every frame on the medium costs

    airtime = per-frame overhead + (frame bytes + MAC bytes) * 8 / PHY rate
    per-frame overhead = DIFS + mean backoff + PHY preamble/header + SIFS + link-layer ACK

so a 66-byte TCP ACK costs nearly as much air as a 1514-byte data frame once the PHY rate is high:
the overhead does not shrink with the payload. The medium is half-duplex and shared by the AP and
all its stations; transmitters with frames queued take turns frame by frame (DCF gives each
contender about the same number of transmissions, not the same airtime). No aggregation
(A-MPDU) is modelled.

Timing values are the standard ones (IEEE 802.11-2016: DSSS/HR-DSSS for b, ERP-OFDM for g,
HT/VHT OFDM at 5 GHz for n/ac); PHY rates are the ones the TACK paper uses (11, 54, 300 and 866.7
Mbps). ``scale`` multiplies every airtime, so a fast preset can run slower than real time (within
what bmv2 forwards on a small machine) with the same overhead-to-payload ratio.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# The airtime model's version, recorded with every experiment run (its provenance): raise it with
# any change to what a frame costs on the medium.
AIRTIME_MODEL_VERSION = "1 (per-frame airtime with mean backoff, no contention, no aggregation)"

ETHERNET_HEADER_BYTES = 14
# An 802.11 data frame carries the IP packet behind a 24-byte MAC header and an 8-byte LLC/SNAP
# header, with a 4-byte FCS; the Ethernet frame the emulator sees has a 14-byte header instead.
MAC_BYTES_BEYOND_ETHERNET = 24 + 8 + 4 - ETHERNET_HEADER_BYTES


@dataclass(frozen=True)
class WirelessPreset:
    name: str
    phy_rate_bps: float
    slot_us: float
    sifs_us: float
    cw_min: int
    preamble_us: float  # PHY preamble and header of every frame
    ack_us: float  # the link-layer ACK frame, its own preamble included
    scale: float = 1.0

    @property
    def difs_us(self) -> float:
        return self.sifs_us + 2 * self.slot_us

    @property
    def mean_backoff_us(self) -> float:
        return self.cw_min / 2 * self.slot_us

    @property
    def overhead_us(self) -> float:
        """Per-frame airtime that does not depend on the frame's size (unscaled)."""
        return self.difs_us + self.mean_backoff_us + self.preamble_us + self.sifs_us + self.ack_us

    def airtime_us(self, frame_bytes: int) -> float:
        """Airtime of one Ethernet frame of ``frame_bytes`` carried over the medium, scaled."""
        payload_us = (frame_bytes + MAC_BYTES_BEYOND_ETHERNET) * 8 / self.phy_rate_bps * 1e6
        return (self.overhead_us + payload_us) * self.scale

    def with_scale(self, scale: float) -> WirelessPreset:
        if scale <= 0:
            raise ValueError("time scale must be positive")
        return replace(self, scale=scale)


PRESETS: dict[str, WirelessPreset] = {
    # 802.11b, long preamble; the ACK goes at the 2 Mbps basic rate: 192 us + 14 bytes * 8 / 2.
    "802.11b": WirelessPreset(
        "802.11b", 11e6, slot_us=20, sifs_us=10, cw_min=31, preamble_us=192, ack_us=192 + 56
    ),
    # 802.11g (ERP-OFDM only, short slot); ACK at 24 Mbps: 20 us preamble + 2 symbols + 6 us extension.
    "802.11g": WirelessPreset(
        "802.11g", 54e6, slot_us=9, sifs_us=10, cw_min=15, preamble_us=20 + 6, ack_us=20 + 8 + 6
    ),
    # 802.11n, 5 GHz, 2 spatial streams (HT-mixed preamble 40 us); legacy ACK at 24 Mbps.
    "802.11n": WirelessPreset("802.11n", 300e6, slot_us=9, sifs_us=16, cw_min=15, preamble_us=40, ack_us=28),
    # 802.11ac, 5 GHz, 2 spatial streams, 80 MHz (VHT preamble 44 us); legacy ACK at 24 Mbps.
    "802.11ac": WirelessPreset(
        "802.11ac", 866.7e6, slot_us=9, sifs_us=16, cw_min=15, preamble_us=44, ack_us=28
    ),
}


def preset(name: str, scale: float = 1.0) -> WirelessPreset:
    try:
        base = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown wireless preset {name!r}; known: {', '.join(PRESETS)}") from None
    return base.with_scale(scale)


def saturated_throughput_bps(
    p: WirelessPreset, frame_bytes: int, reverse_frame_bytes: int | None = None
) -> float:
    """Bits per second of ``frame_bytes`` Ethernet frames delivered by a saturated transmitter;
    with ``reverse_frame_bytes``, while one other saturated transmitter sends frames of that size
    (the two alternate, one frame each)."""
    cycle_us = p.airtime_us(frame_bytes)
    if reverse_frame_bytes is not None:
        cycle_us += p.airtime_us(reverse_frame_bytes)
    return frame_bytes * 8 / (cycle_us / 1e6)
