"""Saturated UDP through the bmv2 AP on the test bed, against the medium model's prediction.

For a preset and a time scale k: the WLAN topology with one station (fast bmv2 build, linkem),
iperf3 sending 1472-byte UDP payloads from the server to the station at 1.3 times what the model
says a saturated AP delivers, and the frames the medium delivered to the station counted by linkem
over a fixed window in steady state. The model's prediction is linkem --virtual with the same
frames offered to the AP at the same constant rate (same preset, k and queue): with 802.11ac's
64-frame aggregates a 100-packet queue (in-flight MPDUs count until acknowledged) refills too
slowly at 1.3 times the load to fill every aggregate, so the prediction has to see the same
arrivals. The smallest k at which the two agree within 5 % is the preset's k
(timescale.CHOSEN_K); below it, bmv2 or the machine cannot keep up.

Needs root and the test-bed lock:

    flock /tmp/ackwise-testbed.lock .venv/bin/python validation/testbed_k.py 802.11g 1 2 4 [--write-docs]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ackwise.topologies.medium_model import VirtualMedium
from ackwise.topologies.testbed import Testbed
from ackwise.topologies.wireless import PRESETS, preset

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "testbed.md"
BEGIN, END = "<!-- timescale:begin -->", "<!-- timescale:end -->"
FRAME_BYTES, PAYLOAD_BYTES = 1514, 1472
QUEUE_PKTS = 100  # the WLAN topology's default medium buffer
WARMUP_S, WINDOW_S = 2.0, 5.0
AGREEMENT = 0.05


@dataclass
class Measurement:
    preset: str
    k: float
    model_fps: float
    measured_fps: float
    ap_queue_drops: int
    medium: dict[str, Any]

    @property
    def error(self) -> float:
        return self.measured_fps / self.model_fps - 1


OVERLOAD = 1.3  # offered load over the saturated AP's delivery rate


def saturated_frames_per_s(name: str, k: float) -> float:
    vm = VirtualMedium(preset(name, k), limit_pkts=QUEUE_PKTS).stations("ap", "sta1")
    r = vm.saturate("ap", "sta1", FRAME_BYTES).run(20 * k, 2 * k)
    return r.delivered_frames("ap", "sta1") / r.window_s


def offered_frames_per_s(name: str, k: float, offered_fps: float) -> float:
    vm = VirtualMedium(preset(name, k), limit_pkts=QUEUE_PKTS).stations("ap", "sta1")
    r = vm.offer("ap", "sta1", offered_fps, FRAME_BYTES).run(20 * k, 2 * k)
    return r.delivered_frames("ap", "sta1") / r.window_s


def _ap(stats: dict[str, Any]) -> dict[str, Any]:
    for t in stats["media"][0]["transmitters"]:
        if t["name"] == "ap":
            return t  # type: ignore[no-any-return]
    raise KeyError("the medium has no transmitter ap")


def measure(name: str, k: float) -> Measurement:
    offered_fps = saturated_frames_per_s(name, k) * OVERLOAD
    model = offered_frames_per_s(name, k, offered_fps)
    offered_bps = offered_fps * PAYLOAD_BYTES * 8
    with Testbed.create(
        "wlan", n_stations=1, preset=name, scale=k, medium_buffer_pkts=QUEUE_PKTS, wired_rate_mbps=0.0
    ) as testbed:
        srv, sta = testbed.host("srv"), testbed.host("sta1")
        server = sta.popen(["iperf3", "-s", "-1", "-p", "5201"])
        time.sleep(0.5)
        seconds = WARMUP_S + WINDOW_S + 1
        client = srv.popen(
            [
                "iperf3",
                "-c",
                sta.IP(),
                "-p",
                "5201",
                "-u",
                "-b",
                f"{offered_bps:.0f}",
                "-l",
                str(PAYLOAD_BYTES),
                "-t",
                f"{seconds:g}",
            ]
        )
        try:
            # iperf3 sends data only after its control connection has set the test up, several
            # RTTs that grow with k (3 s and more at x40): wait for the medium to start delivering.
            started = _ap(testbed.link_stats()["air"])["delivered"]
            deadline = time.monotonic() + 60
            while _ap(testbed.link_stats()["air"])["delivered"] < started + 50:
                if time.monotonic() > deadline or client.poll() is not None:
                    raise RuntimeError(f"{name} x{k:g}: iperf3 delivered nothing through the AP in 60 s")
                time.sleep(0.1)
            time.sleep(WARMUP_S)
            before = _ap(testbed.link_stats()["air"])
            t0 = time.monotonic()
            time.sleep(WINDOW_S)
            after = _ap(testbed.link_stats()["air"])
            elapsed = time.monotonic() - t0
            client.wait(timeout=seconds + 10)
        finally:
            for proc in (client, server):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    delivered = after["delivered"] - before["delivered"]
    return Measurement(name, k, model, delivered / elapsed, after["queue_drops"], after)


def row_line(r: Measurement) -> str:
    return f"| {r.preset} | {r.k:g} | {r.model_fps:.0f} | {r.measured_fps:.0f} | {r.error:+.1%} |"


def render(lines_by_key: dict[tuple[str, float], str]) -> str:
    head = [
        BEGIN,
        "",
        "Measured by validation/testbed_k.py on this machine (2 cores, shared; fast bmv2 build): "
        f"saturated UDP (1514-byte frames, offered at {OVERLOAD:g} x what a saturated AP delivers) from srv "
        f"through the AP to one station; frames the medium delivered in {WINDOW_S:g} s after "
        f"{WARMUP_S:g} s of data, against linkem --virtual offered the same constant rate (same "
        f"preset, k and {QUEUE_PKTS}-packet queue).",
        "",
        "| preset | k | model frames/s | test bed frames/s | error |",
        "| --- | --- | --- | --- | --- |",
    ]
    return "\n".join([*head, *(lines_by_key[key] for key in sorted(lines_by_key)), "", END])


def write_docs(rows: list[Measurement]) -> None:
    """Merge the rows into the table in docs/testbed.md (a row per preset and k, newest kept)."""
    doc = DOC.read_text()
    old = re.search(re.escape(BEGIN) + ".*?" + re.escape(END), doc, flags=re.S)
    if old is None:
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} block: add one where the table goes")
    lines: dict[tuple[str, float], str] = {}
    for line in old.group(0).splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 5 and cells[0].startswith("802.11"):
            lines[(cells[0], float(cells[1]))] = line
    for r in rows:
        lines[(r.preset, r.k)] = row_line(r)
    DOC.write_text(doc.replace(old.group(0), render(lines)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("preset", choices=list(PRESETS))
    parser.add_argument("k", type=float, nargs="+")
    parser.add_argument(
        "--write-docs", action="store_true", help="merge the rows into docs/testbed.md's table"
    )
    args = parser.parse_args()
    rows = []
    for k in args.k:
        m = measure(args.preset, k)
        rows.append(m)
        print(
            f"{m.preset} x{m.k:g}: model {m.model_fps:.0f} frames/s, test bed {m.measured_fps:.0f} "
            f"({m.error:+.1%}), AP queue drops {m.ap_queue_drops}",
            file=sys.stderr,
            flush=True,
        )
    if args.write_docs:
        write_docs(rows)


if __name__ == "__main__":
    main()
