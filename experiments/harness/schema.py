"""What one run of the comparison records: the run's identity and configuration, and its metrics.

One JSON object per line in ``runs.jsonl`` of an experiment's output directory (store.py), written
by the runner (runner.py), read by the report (report.py). Everything a reader needs to repeat or
judge a run is in its record: the scenario point, where the ACK policy ran and with which
parameters, the repeat and seed, the scale applied to fit bmv2, the code and tool versions, the
link backend, and whether it succeeded. A run that failed is recorded with its reason, never
dropped.

Metric names, units and which way is better live here once (METRICS); the report and the
verdicts use them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = 1

# Where an ACK policy runs: the comparison's axis. "none" is the baseline (nothing on); an arm may
# combine places ("host+switch", "host+ap": in this order).
PLACES = ("host", "switch", "ap")
BASELINE = "none"
# A scenario's scale.factor where each point sets its own k (its topology's ``scale``: the WLAN
# scenarios of issue 37, each 802.11 standard at its timescale.CHOSEN_K); the run records say each
# run's k in config.topology_params.scale. Reports then give a header line per point.
PER_POINT = "per point"


def is_scale_factor(value: object) -> bool:
    """A scale factor a scenario and a record may state: a number, or PER_POINT."""
    return value == PER_POINT or (isinstance(value, int | float) and not isinstance(value, bool))


@dataclass(frozen=True)
class MetricInfo:
    unit: str
    better: str  # "lower" or "higher"; "" when neither (a count described, not judged)
    label: str


METRICS: dict[str, MetricInfo] = {
    "completion_s": MetricInfo("s", "lower", "completion time (mean over flows)"),
    "completion_p95_s": MetricInfo("s", "lower", "completion time, 95th percentile over flows"),
    "completion_max_s": MetricInfo("s", "lower", "completion time of the slowest flow"),
    "goodput_mbps": MetricInfo("Mbit/s", "higher", "goodput (sum over flows)"),
    "acks_per_data_segment": MetricInfo("", "lower", "pure ACKs per data segment on the constrained link"),
    "pure_acks": MetricInfo("", "", "pure ACKs on the constrained link"),
    "data_segments": MetricInfo("", "", "data segments on the constrained link"),
    "retransmissions": MetricInfo("", "lower", "retransmitted segments (senders)"),
    "rto_timeouts": MetricInfo("", "lower", "retransmission timeouts (senders)"),
    "jain_fairness": MetricInfo("", "higher", "Jain's fairness index over per-flow goodput"),
    "queue_delay_ms": MetricInfo("ms", "lower", "mean queueing delay at the bottleneck"),
    "ack_airtime_share": MetricInfo("", "lower", "share of the medium's airtime taken by ACK frames"),
    # No longer computed (a scaled count of pure ACKs, none of Shang and Wills' quantities: see the
    # shang-wills-* scenarios); kept so that the records published before still load and report.
    "avoidable_pure_acks": MetricInfo(
        "", "lower", "pure ACKs sent while reverse data on the same connection could have carried them"
    ),
    "reverse_bytes": MetricInfo("bytes", "", "data the receivers wrote back on their connections"),
    "throughput_mbps": MetricInfo("Mbit/s", "higher", "throughput of the flow (chain)"),
    # Altman and Jiménez's unit: full segments delivered per second (size / MSS / completion time)
    "throughput_pkts_per_s": MetricInfo("pkt/s", "higher", "throughput in segments per second (chain)"),
    "max_in_flight_segments": MetricInfo(
        "", "", "most segments in flight in any sample of the sender (a maximum window's check)"
    ),
    "max_snd_wnd_bytes": MetricInfo("bytes", "", "largest receive window the sender heard (ss snd_wnd)"),
    "down_throughput_kBps": MetricInfo("kB/s", "higher", "download throughput (bytes / transfer time)"),
    "up_throughput_kBps": MetricInfo(
        "kB/s", "", "upload throughput (piggyback: bytes delivered during the download / its time)"
    ),
    "down_packets": MetricInfo("", "", "packets downstream (server to client) on the capture"),
    "up_packets": MetricInfo("", "lower", "packets upstream (client to server) on the capture"),
    "acks_per_window": MetricInfo(
        "", "", "pure ACKs per send window of data (data segments / the sender's mean cwnd in CA)"
    ),
    "cwnd_estimate_error": MetricInfo(
        "", "lower", "the receiver's window estimate against the sender's cwnd: median |relative error| in CA"
    ),
    "cwnd_estimate_bias": MetricInfo(
        "", "", "the receiver's window estimate against the sender's cwnd: median relative error in CA"
    ),
    # The WLAN scenarios' (issue 37), under names of their own so that no record of linkem 1's model
    # pools with them; rates in the emulated network's time (the test bed's x its time scale k).
    "aggregate_goodput_mbps": MetricInfo(
        "Mbit/s", "higher", "aggregate goodput: all bytes / time from the first start to the last byte, x k"
    ),
    "steady_goodput_mbps": MetricInfo(
        "Mbit/s",
        "higher",
        "steady goodput: the middle half of all bytes (25 % to 75 % received, as the stations' ACKs and "
        "SACK blocks at the AP said) over the time it took, x k: without the startup and the transfers' ends",
    ),
    "station_jain_index": MetricInfo("", "higher", "Jain's index over the stations' goodput"),
    "pure_acks_per_segment": MetricInfo(
        "", "lower", "pure ACKs the stations sent over the air per data segment sent to them"
    ),
    "ack_frequency_hz": MetricInfo("Hz", "lower", "pure ACKs per second of the emulated network's time"),
    "ack_airtime_fraction": MetricInfo(
        "", "lower", "share of the medium's busy time the stations' ACK exchanges held (linkem)"
    ),
    "collided_ppdus_per_s": MetricInfo(
        "1/s", "lower", "PPDUs that collided, per second of the emulated network's time (linkem)"
    ),
    "ap_mpdus_per_ppdu": MetricInfo("", "", "MPDUs per PPDU the AP sent: its mean A-MPDU size (linkem)"),
    "ap_queue_drops": MetricInfo("", "", "frames the AP's queue in front of the air refused (linkem)"),
    # TACK Fig. 13 (udp-answers traffic, experiments/measure/udp_answers.py): UDP one way, an answer
    # per L datagrams back; over the receiver's steady window, in the emulated network's time.
    "udp_goodput_mbps": MetricInfo(
        "Mbit/s", "higher", "UDP payload the receiver got per second of emulated time (ideal goodput)"
    ),
    "answers_per_datagram": MetricInfo("", "", "answers the UDP receiver sent per datagram it got"),
    "answer_frequency_hz": MetricInfo("Hz", "", "the UDP receiver's answers per second of emulated time"),
    "udp_rcvbuf_drops": MetricInfo(
        "", "", "datagrams the receiver's kernel dropped from its full socket buffer (a late application)"
    ),
}


@dataclass(frozen=True)
class PolicySpec:
    """An ACK policy at one place: its name and parameters (strings, as on a command line)."""

    name: str
    params: dict[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:  # params is a dict: hash its items
        return hash((self.name, tuple(sorted(self.params.items()))))

    def label(self) -> str:
        return self.name + "".join(f" {k}={v}" for k, v in sorted(self.params.items()))


@dataclass(frozen=True)
class Arm:
    """Where ACK reduction runs in one run, and what: at most one policy per place. ``switches``
    names the bmv2 switches a switch policy is set on; the AP proxy takes no policy name."""

    host: PolicySpec | None = None
    switch: PolicySpec | None = None
    switches: tuple[str, ...] = ()
    ap: bool = False

    @property
    def where(self) -> str:
        places = [p for p, on in (("host", self.host), ("switch", self.switch), ("ap", self.ap)) if on]
        return "+".join(places) or BASELINE

    def label(self) -> str:
        parts = []
        if self.host:
            parts.append(f"host {self.host.label()}")
        if self.switch:
            parts.append(
                f"switch {self.switch.label()}" + (f" @{','.join(self.switches)}" if self.switches else "")
            )
        if self.ap:
            parts.append("ap proxy")
        return "; ".join(parts) or "baseline (nothing on)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "label": self.label(),
            "host": asdict(self.host) if self.host else None,
            "switch": asdict(self.switch) if self.switch else None,
            "switches": list(self.switches),
            "ap": self.ap,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Arm:
        def spec(x: dict[str, Any] | None) -> PolicySpec | None:
            return PolicySpec(x["name"], dict(x.get("params", {}))) if x else None

        return cls(
            spec(d.get("host")), spec(d.get("switch")), tuple(d.get("switches", ())), bool(d.get("ap"))
        )


@dataclass(frozen=True)
class Point:
    """One value of a scenario's swept axis (or its only point), with the topology parameters it
    sets. ``x`` is in the axis's unit (e.g. kbit/s); ``label`` is what tables print."""

    x: float | str
    label: str
    params: dict[str, Any] = field(default_factory=dict)


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def run_id(scenario: str, point: Point, arm: Arm, repeat: int, seed: int, config: dict[str, Any]) -> str:
    """Identity of a run: the same inputs give the same id, so a resumed matrix finds it done."""
    key = {
        "scenario": scenario,
        "point": asdict(point),
        "arm": arm.to_dict(),
        "repeat": repeat,
        "seed": seed,
        "config": config,
    }
    return hashlib.sha256(canonical(key).encode()).hexdigest()[:16]


@dataclass
class FlowResult:
    sender: str
    receiver: str
    size_bytes: int
    completion_s: float | None
    goodput_bps: float | None
    byte_exact: bool
    retransmissions: int | None = None
    max_stall_s: float | None = None


@dataclass
class RunRecord:
    """One line of runs.jsonl."""

    run_id: str
    scenario: str
    point: dict[str, Any]  # asdict(Point)
    arm: dict[str, Any]  # Arm.to_dict()
    repeat: int
    seed: int
    scale: dict[str, Any]  # {"factor": float, "what": str}: how the scenario was scaled to fit bmv2
    config: dict[str, Any]  # topology name and parameters as run, traffic, capture point, ...
    code_version: str  # git describe --always --dirty
    versions: dict[str, str]  # tools (simple_switch, p4c, kernel, ...)
    link_backend: str
    status: str  # "ok" or "failed"
    reason: str | None  # why it failed
    started_at: str  # ISO 8601
    duration_s: float  # the whole run: test bed set-up, traffic, measurement, tear-down
    metrics: dict[str, float | int | None] = field(default_factory=dict)  # keys from METRICS
    flows: list[dict[str, Any]] = field(default_factory=list)  # asdict(FlowResult) per flow
    # Per flow, time series: {"flow": "h1->r1", "t_s": [...], "cwnd": [...]} under "cwnd";
    # {"flow": ..., "t_s": [...], "acks_per_s": [...]} under "ack_rate".
    series: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # What the run ran with, read back from the test bed (Testbed.provenance()) plus the scenario
    # file's hash and the scale: runs whose provenance differs are not pooled without saying so.
    provenance: dict[str, Any] = field(default_factory=dict)
    # What the run used of the machine while the traffic ran (measure/resources.py): the emulator's
    # processes' CPU in cores, the machine's busy share, CPU pressure, linkem's lateness.
    resources: dict[str, Any] = field(default_factory=dict)
    schema: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, default=str)

    def congestion_control(self) -> str:
        """The congestion control(s) the senders ran, as ss named them during the run; records
        made before ackwise recorded it (c802642) say "not recorded": those asked for CUBIC and,
        on a machine whose default is BBR, ran BBR (docs/testbed.md, "Congestion control")."""
        seen = {cc for s in self.series.get("cwnd", []) for cc in s.get("congestion_controls", [])}
        return ", ".join(sorted(seen)) or "not recorded"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunRecord:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
