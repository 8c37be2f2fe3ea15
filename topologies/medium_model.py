"""The medium model in virtual time: ``linkem --virtual``, driven from Python.

The same C model as the emulator's (topologies/linkem/medium.c), with no sockets and no clock: a
configuration of stations and traffic goes in (saturated senders, receivers that answer every L
frames, a trace of frames at given times), and the model's counters and per-PPDU decisions come
out. Unit tests pin it to Bianchi's model; the ns-3 validation (validation/) compares it with
ns-3; the test bed's checks take their predictions from it.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackwise.bmv2.toolchain import BUILD_DIR
from ackwise.topologies.wireless import CHAIN_RANGES, ChainGeometry, WirelessPreset, placement_lines

LINKEM_SOURCES = [Path(__file__).with_name("linkem") / name for name in ("linkem.c", "medium.c", "medium.h")]


class VirtualModelError(RuntimeError):
    pass


def virtual_linkem() -> Path:
    """build/linkem (``ACKWISE_LINKEM`` overrides), refused when older than its sources."""
    path = Path(os.environ.get("ACKWISE_LINKEM", BUILD_DIR / "linkem"))
    if not os.access(path, os.X_OK):
        raise VirtualModelError(f"{path} missing: run 'make build/linkem'")
    newest = max(src.stat().st_mtime for src in LINKEM_SOURCES)
    if path.stat().st_mtime < newest:
        raise VirtualModelError(f"{path} is older than topologies/linkem/*.c: run 'make build/linkem'")
    return path


@dataclass
class PpduEvent:
    start_ns: int
    tx: str
    rx: str
    mpdus: int
    bytes: int
    duration_ns: int
    outcome: str  # ok, partial, collided, lost
    received: int


@dataclass
class VirtualResult:
    seconds: float
    warmup: float
    medium: dict[str, Any]
    events: list[PpduEvent] = field(default_factory=list)
    # (t_ns, tx, rx, n): frame n of its pair (in the order offered), received at t_ns
    deliveries: list[tuple[int, str, str, int]] = field(default_factory=list)

    @property
    def window_s(self) -> float:
        return self.seconds - self.warmup

    def station(self, name: str) -> dict[str, Any]:
        for s in self.medium["stations"]:
            if s["name"] == name:
                return s  # type: ignore[no-any-return]
        raise KeyError(f"no station {name} in the model's output")

    def delivered_frames(self, tx: str, rx: str) -> int:
        return int(self.station(tx)["to"].get(rx, {}).get("frames", 0))

    def throughput_bps(self, tx: str, rx: str, payload_bytes: int) -> float:
        """Bits of ``payload_bytes`` per frame delivered from tx to rx in the measured window."""
        return self.delivered_frames(tx, rx) * payload_bytes * 8 / self.window_s

    def collision_probability(self) -> float:
        """Collided PPDUs over PPDUs sent, all stations together."""
        stations = self.medium["stations"]
        sent = sum(s["ppdus"] for s in stations)
        return sum(s["ppdus_collided"] for s in stations) / sent if sent else 0.0


@dataclass
class VirtualMedium:
    """A configuration for ``linkem --virtual``: one medium, its stations and its traffic."""

    preset: WirelessPreset
    loss: float = 0.0
    limit_pkts: int = 100
    seed: int = 1
    lines: list[str] = field(default_factory=list)

    def stations(self, *names: str) -> VirtualMedium:
        for name in names:  # a hears line of a station with itself is a no-op that declares it
            self.lines.append(f"hears air {name} {name} 0")
        return self

    def hears(self, listener: str, talker: str, hears: bool) -> VirtualMedium:
        self.lines.append(f"hears air {listener} {talker} {int(hears)}")
        return self

    def ranges(self, tx_m: float, cs_m: float, interference_m: float, capture: float) -> VirtualMedium:
        """Decode, carrier-sense and interference ranges, and the capture ratio (0: none;
        wireless.ChainGeometry.capture_ratio), for the stations placed with ``place``."""
        self.lines.append(
            f"ranges air tx_m={tx_m:g} cs_m={cs_m:g} interference_m={interference_m:g} capture={capture:.4f}"
        )
        return self

    def place(self, station: str, x_m: float, y_m: float = 0.0) -> VirtualMedium:
        self.lines.append(f"position air {station} x_m={x_m:g} y_m={y_m:g}")
        return self

    def relay(self, station: str, came_from: str, to: str) -> VirtualMedium:
        """``station`` sends on to ``to`` every frame it receives from ``came_from`` (a static route)."""
        self.lines.append(f"relay air {station} {came_from} {to}")
        return self

    def chain(self, nodes: int, geometry: ChainGeometry = CHAIN_RANGES) -> list[str]:
        """Nodes n0 .. n{nodes-1} on a line with the geometry's ranges, each relaying what it
        receives from its left neighbour to its right one and back (static routes both ways).
        Returns the names, source first."""
        names = [f"n{i}" for i in range(nodes)]
        self.stations(*names)
        self.lines += placement_lines("air", names, geometry)
        for i in range(1, nodes - 1):
            self.relay(names[i], names[i - 1], names[i + 1]).relay(names[i], names[i + 1], names[i - 1])
        return names

    def saturate(self, tx: str, rx: str, frame_bytes: int) -> VirtualMedium:
        self.lines.append(f"saturate air {tx} {rx} len={frame_bytes}")
        return self

    def offer(self, tx: str, rx: str, rate_pps: float, frame_bytes: int) -> VirtualMedium:
        """Frames at a constant rate, as a paced sender (iperf3 -u -b) offers them."""
        self.lines.append(f"offer air {tx} {rx} rate_pps={rate_pps:.3f} len={frame_bytes}")
        return self

    def reply(self, station: str, peer: str, every: int, frame_bytes: int) -> VirtualMedium:
        self.lines.append(f"reply air {station} {peer} every={every} len={frame_bytes}")
        return self

    def frame(self, t_us: float, tx: str, rx: str, frame_bytes: int) -> VirtualMedium:
        self.lines.append(f"frame air {t_us:.3f} {tx} {rx} len={frame_bytes}")
        return self

    def probe(self, frame_bytes: int) -> VirtualMedium:
        self.lines.append(f"probe air len={frame_bytes}")
        return self

    def config(
        self,
        seconds: float,
        warmup: float,
        events_path: Path | None = None,
        deliveries_path: Path | None = None,
    ) -> str:
        head = [
            f"seed {self.seed}",
            f"medium air {self.preset.linkem_medium_args(self.loss, self.limit_pkts)}",
        ]
        tail = [f"run seconds={seconds:g} warmup={warmup:g}"]
        if events_path is not None:
            tail.append(f"events {events_path}")
        if deliveries_path is not None:
            tail.append(f"deliveries {deliveries_path}")
        return "\n".join(head + self.lines + tail) + "\n"

    def run(
        self, seconds: float, warmup: float = 0.0, events: bool = False, deliveries: bool = False
    ) -> VirtualResult:
        # Not /tmp/ackwise*: that name space is the test bed's (integration-tests/leftovers.py).
        with tempfile.TemporaryDirectory(prefix="akw-linkem-virtual-") as tmp:
            conf = Path(tmp) / "medium.conf"
            events_path = Path(tmp) / "events" if events else None
            deliveries_path = Path(tmp) / "deliveries" if deliveries else None
            conf.write_text(self.config(seconds, warmup, events_path, deliveries_path))
            out = subprocess.run(
                [str(virtual_linkem()), "--virtual", str(conf)], capture_output=True, text=True, timeout=600
            )
            if out.returncode != 0:
                raise VirtualModelError(f"linkem --virtual failed: {out.stderr.strip()}")
            doc = json.loads(out.stdout)
            parsed = []
            if events_path is not None:
                for line in events_path.read_text().splitlines():
                    f = line.split()
                    parsed.append(
                        PpduEvent(int(f[0]), f[1], f[2], int(f[3]), int(f[4]), int(f[5]), f[6], int(f[7]))
                    )
            received = []
            if deliveries_path is not None:
                for line in deliveries_path.read_text().splitlines():
                    f = line.split()
                    received.append((int(f[0]), f[1], f[2], int(f[3])))
        return VirtualResult(float(doc["seconds"]), float(doc["warmup"]), doc["media"][0], parsed, received)
