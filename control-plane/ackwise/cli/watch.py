"""``ackwise watch``: the flows a switch tracks, live, refreshed in place (rich), or as JSON lines.

One row per ACK stream, the controller's unit: the data one endpoint sends and the ACKs the other
returns about it. The row building is pure (``build_rows``, ``select_rows``, ``port_rows``);
``watch`` only reads the switch, sleeps and draws.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from ackwise.bmv2.client import PortInfo, SwitchClient
from ackwise.cli.args import I32_MAX, float_in, int_in
from ackwise.cli.common import Registry, client_for
from ackwise.controller.config import policy_for
from ackwise.controller.decision import AckStream, tack_d
from ackwise.controller.ports import ecn_marks, queue_backlog_pkts
from ackwise.errors import BadOption
from ackwise.features.thinning import FlowRecord, PolicyRule, read_flows, rules_in_lookup_order
from ackwise.twins.policies import MSS_BYTES, Policy, PolicyParams
from ackwise.twins.serial import seq_diff

WATCH_COLUMNS = (
    "flow",
    "sender",
    "acks_seen",
    "acks_forwarded",
    "acks_thinned",
    "thinned_pct",
    "rtt_min_us",
    "rate_bytes_per_s",
    "policy",
    "d",
    "last_keep_reason",
    "port",
)
TEXT_COLUMNS = frozenset({"flow", "sender", "policy", "last_keep_reason"})
PortRead = Callable[[SwitchClient, int], int | None]


@dataclass(frozen=True)
class Progress:
    """Where a stream's data stood at the last refresh, for its rate."""

    t_s: float
    data_end: int
    data_segments: int


def _rate(previous: Progress | None, now: Progress, mss_bytes: int) -> float | None:
    if previous is None or now.t_s <= previous.t_s:
        return None
    if previous.data_end and now.data_end:
        new_bytes = max(0, seq_diff(now.data_end, previous.data_end))
    else:  # data_end not exposed: new segments as full-sized
        new_bytes = max(0, seq_diff(now.data_segments, previous.data_segments)) * mss_bytes
    return new_bytes / (now.t_s - previous.t_s)


def _d(params: PolicyParams, acc_d: int, rate: float | None, rtt_min_us: int) -> int | None:
    """Segments per forwarded ACK: every_d's d, acc's current d from the switch, tack's estimated
    from the rate and RTTmin; None where a policy has none."""
    if params.policy is Policy.EVERY_D:
        return params.d
    if params.policy is Policy.ACC:
        return acc_d or None
    if params.policy is Policy.TACK and rate is not None:
        return round(tack_d(rate, rtt_min_us, params.L, params.beta, params.mss))
    return None


def build_rows(
    records: Iterable[FlowRecord],
    rules: Sequence[PolicyRule],
    default: PolicyParams,
    previous: Mapping[AckStream, Progress],
    now_s: float,
    mss_bytes: int = MSS_BYTES,
) -> tuple[list[dict[str, Any]], dict[AckStream, Progress]]:
    """Rows for the streams that carried data or ACKs, and the progress to pass next time."""
    rows: list[dict[str, Any]] = []
    progress: dict[AckStream, Progress] = {}
    for record in records:
        for direction, data in enumerate(record.halves):
            acks = record.halves[1 - direction]
            if not (data.data_segments or acks.acks_seen):
                continue
            stream = AckStream.of(record.key, direction)
            now = Progress(now_s, data.data_end, data.data_segments)
            progress[stream] = now
            rate = _rate(previous.get(stream), now, mss_bytes)
            params = policy_for(stream, rules, default)
            seen = acks.acks_seen
            rows.append(
                {
                    "flow": str(record.key),
                    "sender": stream.data_sender,
                    "receiver": stream.data_receiver,
                    "data_segments": data.data_segments,
                    "acks_seen": seen,
                    "acks_forwarded": acks.acks_forwarded,
                    "acks_thinned": acks.acks_thinned,
                    "thinned_pct": round(100.0 * acks.acks_thinned / seen, 1) if seen else 0.0,
                    "rtt_min_us": data.rtt_min_us,
                    "rate_bytes_per_s": round(rate) if rate is not None else None,
                    "policy": params.policy.value,
                    "policy_params": params.describe(),
                    "d": _d(params, acks.acc_d, rate, data.rtt_min_us),
                    "last_keep_reason": acks.last_keep_reason,
                    "port": acks.egress_port,  # the port the ACKs leave by
                    "closed": record.closed,
                }
            )
    return rows, progress


def select_rows(rows: Sequence[dict[str, Any]], sort: str, match: str | None) -> list[dict[str, Any]]:
    """Rows whose flow contains ``match``, sorted by ``sort``: numbers largest first, text A to Z,
    unknown values last."""
    if sort not in WATCH_COLUMNS:
        raise BadOption(f"--sort {sort}: use one of {', '.join(WATCH_COLUMNS)}")
    chosen = [r for r in rows if not match or match in r["flow"]]
    known = [r for r in chosen if r[sort] is not None]
    unknown = [r for r in chosen if r[sort] is None]
    known.sort(key=lambda r: r[sort], reverse=sort not in TEXT_COLUMNS)
    return known + unknown


def port_rows(
    ports: Sequence[PortInfo], backlog: Mapping[int, int | None], marks: Mapping[int, int | None]
) -> list[dict[str, Any]]:
    return [
        {
            "port": p.port,
            "interface": p.interface,
            "backlog_pkts": backlog.get(p.port),
            "ecn_marks": marks.get(p.port),
        }
        for p in ports
    ]


def json_lines(rows: Sequence[dict[str, Any]], wall_s: float) -> list[str]:
    """One JSON object per flow row, stamped with the refresh time."""
    return [json.dumps({"t": round(wall_s, 3), **row}) for row in rows]


def _rate_text(rate: float | None) -> str:
    if rate is None:
        return "-"
    return f"{rate * 8 / 1e6:.2f} Mbit/s" if rate >= 125_000 else f"{rate * 8 / 1e3:.0f} kbit/s"


def _text(value: Any) -> str:
    return "?" if value is None else str(value)


# The flows table's columns: header, the cell of a row, and whether a narrow terminal keeps it.
FLOW_TABLE: tuple[tuple[str, Callable[[dict[str, Any]], str], bool], ...] = (
    ("seen", lambda r: str(r["acks_seen"]), True),
    ("fwd", lambda r: str(r["acks_forwarded"]), False),
    ("thinned", lambda r: str(r["acks_thinned"]), True),
    ("%", lambda r: f"{r['thinned_pct']:.1f}", False),
    ("RTTmin", lambda r: f"{r['rtt_min_us'] / 1000:.1f} ms" if r["rtt_min_us"] else "-", False),
    ("rate", lambda r: _rate_text(r["rate_bytes_per_s"]), True),
    ("policy", lambda r: r["policy"], True),
    ("d", lambda r: "-" if r["d"] is None else str(r["d"]), True),
    ("kept", lambda r: r["last_keep_reason"], False),
)
WIDE_COLUMNS = 112  # the whole table with IPv4 addresses of up to 15 characters


def render(
    rows: Sequence[dict[str, Any]], ports: Sequence[dict[str, Any]], title: str, width: int = WIDE_COLUMNS
) -> Any:
    """The flows and ports tables for a terminal ``width`` columns wide. Numbers are never cut
    short (a "1…" in a count is worse than no column): below WIDE_COLUMNS the table keeps the
    columns that say what happens to a flow (seen, thinned, rate, policy, d) and the stream's
    column wraps after its arrow."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    wide = width >= WIDE_COLUMNS
    columns = [c for c in FLOW_TABLE if wide or c[2]]
    caption = None if wide else f"(fwd, %, RTTmin and kept in a terminal of {WIDE_COLUMNS} columns or more)"
    flows = Table(title=title, title_justify="left", caption=caption, caption_justify="left", expand=False)
    flows.add_column("data: sender -> receiver", overflow="fold", min_width=len("10.0.0.10:40000 ->"))
    for header, _, _ in columns:
        flows.add_column(header, justify="left" if header in ("policy", "kept") else "right", no_wrap=True)
    for r in rows:
        # Text, not a string: rich would read an IPv6 endpoint's [address] as markup and drop it.
        flows.add_row(Text(f"{r['sender']} -> {r['receiver']}"), *(Text(cell(r)) for _, cell, _ in columns))
    table_ports = Table(
        title="ports",
        title_justify="left",
        caption="backlog: the switch's queue model ('-': no rate set)",
        caption_justify="left",
    )
    for header in ("port", "interface", "backlog (packets)", "ECN marks"):
        table_ports.add_column(header, justify="right" if header != "interface" else "left")
    for p in ports:
        backlog = "-" if p["backlog_pkts"] is None else str(p["backlog_pkts"])
        table_ports.add_row(str(p["port"]), Text(p["interface"]), backlog, _text(p["ecn_marks"]))
    return Group(flows, table_ports)


def check_options(interval_s: float, sort: str, count: int | None) -> None:
    """Refuse bad options before the switch is contacted or the screen taken."""
    if not 0 < interval_s <= 86400:  # also refuses nan
        raise BadOption(f"--interval {interval_s}: give seconds above 0 (at most a day), e.g. 1 or 0.5")
    if count is not None and count < 1:
        raise BadOption(f"--count {count}: give a number of refreshes, 1 or more")
    select_rows([], sort, None)


def watch(
    client: SwitchClient,
    *,
    interval_s: float = 1.0,
    sort: str = "acks_seen",
    match: str | None = None,
    as_json: bool = False,
    count: int | None = None,
    out: IO[str] | None = None,
    width: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    backlog: PortRead = queue_backlog_pkts,
    marks: PortRead = ecn_marks,
) -> int:
    """Refresh until ``count`` refreshes are done or Ctrl-C; 0 either way. ``out`` and ``width``
    default to the terminal's."""
    check_options(interval_s, sort, count)
    live = None
    previous: dict[AckStream, Progress] = {}
    ports = client.info().ports
    try:
        if not as_json:
            from rich.console import Console
            from rich.live import Live

            live = Live(console=Console(file=out, width=width), auto_refresh=False)
            live.start()
        done = 0
        while count is None or done < count:
            records = read_flows(client)
            now = clock()
            rules, default = rules_in_lookup_order(client)
            rows, previous = build_rows(records, rules, default, previous, now)
            rows = select_rows(rows, sort, match)
            if live is not None:
                table_ports = port_rows(
                    ports,
                    {p.port: backlog(client, p.port) for p in ports},
                    {p.port: marks(client, p.port) for p in ports},
                )
                title = f"{client.host}:{client.thrift_port}: {len(rows)} flows"
                live.update(render(rows, table_ports, title, live.console.width), refresh=True)
            else:
                for line in json_lines(rows, wall()):
                    print(line, file=out, flush=True)
            done += 1
            if count is None or done < count:
                sleep(interval_s)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how one leaves a live view: not a failure
    finally:
        if live is not None:
            live.stop()  # gives the terminal back: cursor shown, the last table left in place
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    check_options(args.interval, args.sort, args.count)
    with client_for(args) as client:
        return watch(
            client,
            interval_s=args.interval,
            sort=args.sort,
            match=args.match,
            as_json=args.json,
            count=args.count,
        )


def add_commands(registry: Registry) -> None:
    p = registry.command(
        None,
        "watch",
        cmd_watch,
        "live per-flow view: ACKs seen/forwarded/thinned, RTTmin, rate, policy and d; ports' queues",
    )
    p.add_argument(
        "--interval",
        type=float_in(0, 86400, "seconds", lo_open=True),
        default=1.0,
        metavar="S",
        help="seconds between refreshes (1)",
    )
    p.add_argument(
        "--sort", default="acks_seen", metavar="COLUMN", help=f"sort by ({', '.join(WATCH_COLUMNS)})"
    )
    p.add_argument("--match", metavar="TEXT", help="only flows whose 'addr:port <> addr:port' contains TEXT")
    p.add_argument(
        "--count", type=int_in(1, I32_MAX), metavar="N", help="stop after N refreshes (default: until Ctrl-C)"
    )
