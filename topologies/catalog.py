"""The parameterised topologies: dumbbell, parking-lot, WLAN and chain.

Each is a Mininet ``Topo`` that also declares its flows (sender, receiver) and any switch egress
queues that act as bottlenecks. Hosts are AckwiseHost, switches BMv2Switch, links between switches
go through a LinkEmulator node, wireless hops through one WirelessMedium node.
"""

from __future__ import annotations

import inspect
import math
import typing
from dataclasses import asdict, dataclass, field
from typing import Any

from mininet.topo import Topo

from ackwise.errors import InputError
from ackwise.topologies.bmv2 import BMv2Switch
from ackwise.topologies.hosts import AckwiseHost
from ackwise.topologies.links import LinkEmulator, LinkParams, WirelessMedium
from ackwise.topologies.tcp_settings import CONGESTION_CONTROLS, DEFAULT_CONGESTION_CONTROL, MAX_INITCWND
from ackwise.topologies.timescale import TimeScale
from ackwise.topologies.wireless import PRESETS
from ackwise.topologies.wireless import preset as wireless_preset
from ackwise.twins.p4names import BMV2_DEFAULT_QUEUE_DEPTH_PKTS
from ackwise.twins.policies import MSS_BYTES

# The IP header by version, then TCP's and the Timestamps option, which our hosts keep on
# (tcp_timestamps=1): what an MTU leaves for a segment's payload.
IP_HEADER_BYTES = {4: 20, 6: 40}
TCP_TIMESTAMPS_HEADER_BYTES = 20 + 12
DEFAULT_MTU_BYTES = 1500
IPV6_MIN_MTU_BYTES = 1280  # RFC 8200 section 5: below it Linux takes IPv6 off the interface


def mss_for_mtu(mtu_bytes: int, ip_version: int = 4) -> int:
    """The MSS a host with this IP MTU sends (IPv4: 1500 -> 1448, 1040 -> 988; IPv6: 1500 -> 1428)."""
    return mtu_bytes - IP_HEADER_BYTES[ip_version] - TCP_TIMESTAMPS_HEADER_BYTES


def window_clamp_bytes(max_window_pkts: int, mtu_bytes: int, ip_version: int = 4) -> int:
    """The receive-window clamp that lets at most ``max_window_pkts`` full segments be in flight:
    the paper's maximum window W (ns-2's ``window_``, in packets) as the bytes a Linux receiver
    advertises. 0: no clamp."""
    if max_window_pkts < 0:
        raise ValueError(f"max_window_pkts={max_window_pkts}: give 0 (no clamp) or more")
    return max_window_pkts * mss_for_mtu(mtu_bytes, ip_version)


# build() parameters every topology takes for its hosts' TCP (tcp_settings.TcpSettings).
TCP_PARAMS = ("cc", "ecn", "sack", "timestamps", "initcwnd")


class TopologyParamError(InputError, ValueError):
    """A topology parameter out of its range; the message names it as written (key=value)."""


@dataclass(frozen=True)
class Bound:
    """What a parameter accepts: numbers in lo..hi (with a unit to say so), or one of ``choices``."""

    lo: float | None = None
    hi: float | None = None
    unit: str = ""
    choices: tuple[str | int, ...] = ()

    def check(self, name: str, value: Any) -> None:
        if self.choices:
            if value not in self.choices:
                raise TopologyParamError(f"{name}={value}: give one of {', '.join(map(str, self.choices))}")
            return
        if isinstance(value, float) and not math.isfinite(value):
            raise TopologyParamError(f"{name}={value}: give a finite number{self._range()}")
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise TopologyParamError(f"{name}={value:g}: must be{self._range()}")

    def _range(self) -> str:
        unit = f" ({self.unit})" if self.unit else ""
        if self.hi is None:
            return f" >= {self.lo:g}{unit}"
        return f" {self.lo:g}..{self.hi:g}{unit}"


# Every parameter of every topology's build(), by name: what a test bed can actually be built
# with. Upper bounds are where the emulation stops meaning anything on this kind of machine
# (two cores): a 100 Gbit/s link or a 100-pair dumbbell would only fail later, less clearly.
PARAM_BOUNDS: dict[str, Bound] = {
    "n_pairs": Bound(1, 32, "sender/receiver pairs"),
    "n_stations": Bound(1, 32, "stations"),
    "hops": Bound(2, 16, "hops"),
    "fwd_rate_mbps": Bound(0, 10_000, "Mbit/s; 0: no limit"),
    "rev_rate_mbps": Bound(0, 10_000, "Mbit/s; 0: no limit"),
    "rate_mbps": Bound(0, 10_000, "Mbit/s; 0: no limit"),
    "wired_rate_mbps": Bound(0, 10_000, "Mbit/s; 0: no limit"),
    "fwd_delay_ms": Bound(0, 10_000, "ms, one way"),
    "rev_delay_ms": Bound(0, 10_000, "ms, one way"),
    "delay_ms": Bound(0, 10_000, "ms, one way"),
    "wired_delay_ms": Bound(0, 10_000, "ms, one way"),
    "fwd_buffer_pkts": Bound(1, 100_000, "packets"),
    "rev_buffer_pkts": Bound(1, 100_000, "packets"),
    "fwd_buffer_bytes": Bound(0, 100_000_000, "bytes, besides the packets; 0: packets only"),
    "rev_buffer_bytes": Bound(0, 100_000_000, "bytes, besides the packets; 0: packets only"),
    "buffer_pkts": Bound(1, 100_000, "packets"),
    "wired_buffer_pkts": Bound(1, 100_000, "packets"),
    "medium_buffer_pkts": Bound(1, 100_000, "packets"),
    "loss": Bound(0, 1, "a probability"),
    "medium_loss": Bound(0, 1, "a probability"),
    "geometry": Bound(choices=("one-domain", "line")),
    "bottleneck": Bound(choices=("link", "switch")),
    "fwd_queue_pps": Bound(0, 1_000_000, "packets/s; 0: no limit"),
    "rev_queue_pps": Bound(0, 1_000_000, "packets/s; 0: no limit"),
    "rev_shape_pps": Bound(0, 1_000_000, "packets/s; 0: off"),
    "queue_depth_pkts": Bound(1, 2**31 - 1, "packets"),
    "program": Bound(choices=("ack_switch", "forward_only", "ap_proxy", "parser_probe")),
    "cc": Bound(choices=CONGESTION_CONTROLS),
    "initcwnd": Bound(0, MAX_INITCWND, "segments, the senders' initial window; 0: Linux's default (10)"),
    "backend": Bound(choices=("auto", "netem", "linkem")),
    "preset": Bound(choices=tuple(PRESETS)),
    "scale": Bound(0.01, 1000, "times real time: the medium and every wired link (timescale.py)"),
    "proxy_budget_bytes": Bound(1, 2**32 - 1, "bytes"),
    # 576: IPv4's minimum datagram size (RFC 791), an MSS of 524 with the Timestamps option.
    "mtu_bytes": Bound(576, 1500, "bytes, the hosts' IP MTU"),
    # 0: no clamp (Linux's own receive window); the paper's axis runs 1..2000.
    "max_window_pkts": Bound(0, 65535, "segments in flight; 0: no clamp"),
    # 6: dual-stack hosts (an IPv6 address beside the IPv4 one) whose traffic runs over IPv6.
    "ip_version": Bound(choices=(4, 6)),
}


def check_params(topology: str, params: dict[str, Any]) -> None:
    """Refuse, naming ``key=value`` as written, any parameter ``topology`` does not take or that
    is out of range, before anything is built."""
    cls = TOPOLOGIES[topology]
    known = build_params(cls)
    for name, value in params.items():
        if name not in known:
            raise TopologyParamError(f"{topology} has no parameter {name}; it takes: {', '.join(known)}")
        if value is None and known[name].default is None:
            continue
        expected = param_type(cls, name)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if (expected is not str and not isinstance(value, expected)) or isinstance(value, bool) != (
            expected is bool
        ):
            raise TopologyParamError(f"{name}={value}: give a {expected.__name__}")
        if name in PARAM_BOUNDS:
            PARAM_BOUNDS[name].check(name, value)
    merged = {name: p.default for name, p in known.items()} | params
    if merged["ip_version"] == 6 and merged.get("mtu_bytes", DEFAULT_MTU_BYTES) < IPV6_MIN_MTU_BYTES:
        raise TopologyParamError(
            f"mtu_bytes={merged['mtu_bytes']}: IPv6 (ip_version=6) needs at least {IPV6_MIN_MTU_BYTES}; "
            "raise mtu_bytes or run over IPv4"
        )
    if topology == "dumbbell" and merged["bottleneck"] == "switch":
        for name in ("fwd_queue_pps", "rev_queue_pps"):
            if merged[name] <= 0:
                raise TopologyParamError(
                    f"{name}={merged[name]}: a switch bottleneck (bottleneck=switch) needs a rate above 0"
                )
    if topology == "dumbbell":
        holdback = [x for x in str(merged["holdback"]).split(",") if x]
        if not set(holdback) <= {"s1", "s2"}:
            raise TopologyParamError(
                f"holdback={merged['holdback']}: name switches of the dumbbell, s1 and/or s2"
            )
        text = str(merged["access_delay_ms"])
        try:
            access = [float(x) for x in text.split(",")] if text else []
        except ValueError:
            raise TopologyParamError(
                f"access_delay_ms={text}: give comma-separated milliseconds, e.g. 0,30"
            ) from None
        if len(access) > merged["n_pairs"] or any(not 0 <= d <= 10_000 for d in access):
            raise TopologyParamError(
                f"access_delay_ms={text}: at most n_pairs={merged['n_pairs']} values, each 0..10000 ms"
            )


def build_params(cls: type[AckwiseTopo]) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(cls.build).parameters.items() if n != "self"}


def param_type(cls: type[AckwiseTopo], name: str) -> type:
    """The parameter's declared type (``int | None`` -> int), from build()'s annotations."""
    hint = typing.get_type_hints(cls.build)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


@dataclass(frozen=True)
class QueueSetting:
    """bmv2 egress queues, on ``switch``'s ports towards ``toward``: a bottleneck, or (rate 0) room
    enough that bmv2 never drops where the network being emulated would not."""

    switch: str
    toward: str
    rate_pps: int
    depth_pkts: int


# The hosts' IPv6 prefix with ip_version=6: unique local (RFC 4193), one link as 10.0.0.0/16 is.
IPV6_PREFIX = "fd00:ac::"
IPV6_PREFIX_LEN = 64


@dataclass
class HostAddressing:
    next_index: int = 1

    def take(self, ip_version: int = 4) -> dict[str, Any]:
        """The next host's addresses: IPv4 and MAC always, and with ``ip_version`` 6 an IPv6
        address too (``ip6``; the host is then dual-stack)."""
        i = self.next_index
        self.next_index += 1
        addresses: dict[str, Any] = {
            "ip": f"10.0.{i // 250}.{i % 250 + 1}/16",
            "mac": f"00:00:00:00:{i // 256:02x}:{i % 256:02x}",
        }
        if ip_version == 6:
            addresses["ip6"] = f"{IPV6_PREFIX}{i:x}/{IPV6_PREFIX_LEN}"
        return addresses


@dataclass(frozen=True)
class ApProxySetting:
    """An AP switch running ap_proxy: its uplink neighbour, the node its stations hang off, the
    CPU port wired to the repair agent, the station parameters."""

    switch: str
    uplink_toward: str
    wireless_toward: str
    cpu_port: int
    stations: tuple[str, ...]
    budget_bytes: int
    agent: bool


@dataclass
class TopoMeta:
    name: str
    params: dict[str, Any]
    flows: list[tuple[str, str]] = field(default_factory=list)
    queues: list[QueueSetting] = field(default_factory=list)
    ap: ApProxySetting | None = None
    holdback: list[str] = field(default_factory=list)  # switches with a hold-back agent on a CPU port


class AckwiseTopo(Topo):
    """Common helpers; subclasses fill ``meta``."""

    meta: TopoMeta
    HOLDBACK_CPU_PORT = 100  # the port of a switch's hold-back agent (ackwise/holdback.py)

    def __init__(self, **params: Any) -> None:
        self.addressing = HostAddressing()
        Topo.__init__(self, **params)

    def host(self, name: str, mtu: int | None = None) -> str:
        """A host with the topology's TCP settings (build()'s cc, ecn, sack, timestamps, initcwnd)
        and, where given, its interfaces' IP MTU."""
        tcp = {k: self.meta.params[k] for k in TCP_PARAMS}
        addresses = self.addressing.take(self.ip_version)
        return self.addHost(name, cls=AckwiseHost, **tcp, mtu=mtu, **addresses)

    @property
    def ip_version(self) -> int:
        """The IP version the hosts' traffic runs over (build()'s ``ip_version``)."""
        return int(self.meta.params.get("ip_version", 4))

    @property
    def mss_bytes(self) -> int:
        """The MSS the hosts send: from ``mtu_bytes`` where the topology takes it, else 1500's,
        less the IP header of the version the traffic runs over."""
        return mss_for_mtu(int(self.meta.params.get("mtu_bytes", DEFAULT_MTU_BYTES)), self.ip_version)

    @property
    def window_clamp_bytes(self) -> int:
        """The receivers' window clamp (``max_window_pkts`` x MSS); 0: none."""
        mtu = int(self.meta.params.get("mtu_bytes", DEFAULT_MTU_BYTES))
        return window_clamp_bytes(int(self.meta.params.get("max_window_pkts", 0)), mtu, self.ip_version)

    def bmv2(self, name: str, program: str, log_dir: str | None, cpu_port: int | None = None) -> str:
        return self.addSwitch(name, cls=BMv2Switch, program=program, log_dir=log_dir, cpu_port=cpu_port)

    def wire(self, name: str, a: str, b: str, forward: LinkParams, reverse: LinkParams, backend: str) -> str:
        """A link from a to b through an emulator node (forward = a -> b)."""
        self.addSwitch(name, cls=LinkEmulator, forward=forward, reverse=reverse, backend=backend)
        self.addLink(a, name, port2=1)
        self.addLink(name, b, port1=2)
        return name


def _mbps(value: float) -> float:
    return value * 1e6


class Dumbbell(AckwiseTopo):
    """n sender/receiver pairs: h_i -- s1 == bottleneck == s2 -- r_i.

    The bottleneck is set per direction (forward = s1 -> s2, the data direction). It is the
    emulated link by default; with ``bottleneck="switch"`` it is bmv2's own egress queues (s1
    towards s2 at ``fwd_queue_pps``, s2 towards s1 at ``rev_queue_pps``) and the link only delays.
    """

    def build(
        self,
        n_pairs: int = 1,
        fwd_rate_mbps: float = 10.0,
        rev_rate_mbps: float = 10.0,
        fwd_delay_ms: float = 10.0,
        rev_delay_ms: float = 10.0,
        fwd_buffer_pkts: int = 100,
        rev_buffer_pkts: int = 100,
        fwd_buffer_bytes: int = 0,
        rev_buffer_bytes: int = 0,
        loss: float = 0.0,
        bottleneck: str = "link",
        fwd_queue_pps: int = 0,
        rev_queue_pps: int = 0,
        queue_depth_pkts: int = 64,
        program: str = "ack_switch",
        cc: str = DEFAULT_CONGESTION_CONTROL,
        ecn: bool = True,
        sack: bool = True,
        timestamps: bool = True,
        initcwnd: int = 0,
        ip_version: int = 4,
        backend: str = "auto",
        log_dir: str | None = None,
        access_delay_ms: str = "",
        holdback: str = "",
        rev_shape_pps: int = 0,
        mtu_bytes: int = DEFAULT_MTU_BYTES,
    ) -> None:
        """``mtu_bytes``: the hosts' IP MTU (1052: Landström's 1000-byte segments with
        timestamps); the buffers stay in packets, so they hold the paper's packets.
        ``access_delay_ms``: extra one-way delay between each sender and s1, comma-separated per
        pair ("0,30": pair 2's round trip is 60 ms longer), through an emulator node a<i>.
        ``holdback``: switches (``s1``, ``s2``, ``s1,s2``) that get a hold-back agent on a CPU port
        (hold-back for every_d, dynamic_d, tack, acc; the queue share for coalesce).
        ``fwd_buffer_bytes``, ``rev_buffer_bytes``: the link's queue also limited in bytes (0:
        in packets only), as a buffer that counts bytes would be: a pure ACK then takes 66 bytes of
        it, not a slot a data segment could fill (linkem only).
        ``rev_shape_pps``: with the link as bottleneck, also serve s2's queue towards it at this
        rate (packets/s), a little below the link's, so the reverse queue forms in the switch where
        a P4 program can act on it (coalescing), not in the emulator (docs/ack-thinning.md)."""
        if bottleneck not in ("link", "switch"):
            raise ValueError("bottleneck is 'link' or 'switch'")
        if n_pairs < 1:
            raise ValueError("a dumbbell needs at least one pair")
        self.meta = TopoMeta(
            "dumbbell", {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        )
        self.meta.holdback = [name for name in holdback.split(",") if name]
        if not set(self.meta.holdback) <= {"s1", "s2"}:
            raise ValueError(f"holdback={holdback!r}: name switches of the dumbbell, s1 and/or s2")
        s1, s2 = (
            self.bmv2(name, program, log_dir, self.HOLDBACK_CPU_PORT if name in self.meta.holdback else None)
            for name in ("s1", "s2")
        )
        if bottleneck == "link":
            forward = LinkParams(_mbps(fwd_rate_mbps), fwd_delay_ms, loss, fwd_buffer_pkts, fwd_buffer_bytes)
            reverse = LinkParams(_mbps(rev_rate_mbps), rev_delay_ms, loss, rev_buffer_pkts, rev_buffer_bytes)
            # The link's buffer is the only one in front of it: a switch's egress queue toward it
            # (bmv2's default 64 packets, served as fast as bmv2 runs) holds at least as much. A
            # sender answering one ACK of 100-170 segments (smartacking's holds) sends them at
            # the host's rate, bmv2's ingress ran ahead of its egress and s1 dropped up to 35 of
            # them (4 of 11 runs), though the link's buffer held the whole transfer; with 2000
            # packets, 0 of 6 (docs/testbed.md).
            self.meta.queues.append(
                QueueSetting("s1", "e1", 0, max(BMV2_DEFAULT_QUEUE_DEPTH_PKTS, fwd_buffer_pkts))
            )
            self.meta.queues.append(
                QueueSetting(
                    "s2",
                    "e1",
                    rev_shape_pps,
                    queue_depth_pkts
                    if rev_shape_pps > 0
                    else max(BMV2_DEFAULT_QUEUE_DEPTH_PKTS, rev_buffer_pkts),
                )
            )
        else:
            if fwd_queue_pps <= 0 or rev_queue_pps <= 0:
                raise ValueError("a switch bottleneck needs fwd_queue_pps and rev_queue_pps")
            if fwd_buffer_bytes or rev_buffer_bytes:
                raise ValueError("fwd_buffer_bytes, rev_buffer_bytes: the link's queue (bottleneck 'link')")
            forward = LinkParams(0, fwd_delay_ms, loss)
            reverse = LinkParams(0, rev_delay_ms, loss)
            self.meta.queues += [
                QueueSetting("s1", "e1", fwd_queue_pps, queue_depth_pkts),
                QueueSetting("s2", "e1", rev_queue_pps, queue_depth_pkts),
            ]
        self.wire("e1", s1, s2, forward, reverse, backend)
        try:
            access = [float(x) for x in access_delay_ms.split(",")] if access_delay_ms else []
        except ValueError:
            raise ValueError(f"access_delay_ms={access_delay_ms!r}: comma-separated milliseconds") from None
        if len(access) > n_pairs or any(d < 0 for d in access):
            raise ValueError(f"access_delay_ms: at most {n_pairs} values, each >= 0")
        mtu = mtu_bytes if mtu_bytes != DEFAULT_MTU_BYTES else None  # None: the interface's own
        for i in range(1, n_pairs + 1):
            h, r = self.host(f"h{i}", mtu), self.host(f"r{i}", mtu)
            delay = access[i - 1] if i <= len(access) else 0.0
            if delay > 0:
                self.wire(f"a{i}", h, s1, LinkParams(0, delay), LinkParams(0, delay), backend)
            else:
                self.addLink(h, s1)
            self.addLink(r, s2)
            self.meta.flows.append((h, r))


class ParkingLot(AckwiseTopo):
    """Three bottlenecks in a row, s1 == s2 == s3 == s4, and four flows: f0 crosses all three,
    f1, f2 and f3 one each."""

    def build(
        self,
        rate_mbps: float = 10.0,
        delay_ms: float = 5.0,
        buffer_pkts: int = 100,
        loss: float = 0.0,
        program: str = "ack_switch",
        cc: str = DEFAULT_CONGESTION_CONTROL,
        ecn: bool = True,
        sack: bool = True,
        timestamps: bool = True,
        initcwnd: int = 0,
        ip_version: int = 4,
        backend: str = "auto",
        log_dir: str | None = None,
    ) -> None:
        self.meta = TopoMeta(
            "parking-lot", {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        )
        switches = [self.bmv2(f"s{i}", program, log_dir) for i in range(1, 5)]
        link = LinkParams(_mbps(rate_mbps), delay_ms, loss, buffer_pkts)
        for i in range(3):
            self.wire(f"e{i + 1}", switches[i], switches[i + 1], link, link, backend)
        for flow, (src_sw, dst_sw) in enumerate([(0, 3), (0, 1), (1, 2), (2, 3)]):
            h, r = self.host(f"h{flow}"), self.host(f"r{flow}")
            self.addLink(h, switches[src_sw])
            self.addLink(r, switches[dst_sw])
            self.meta.flows.append((h, r))


# bmv2's egress queues at the WLAN's AP: the medium's queue (linkem's, medium_buffer_pkts) is the
# AP's queue of the network being emulated; bmv2's own, 64 packets by default, is an emulator
# artefact that dropped segments when the switch's egress thread fell behind its ingress on a busy
# machine (issue 37: 300-1000 of 28 000 segments lost inside the AP in some runs, none in its
# medium queue). As deep as simple_switch's input buffer: bmv2 then stalls, it does not drop.
AP_EMULATOR_QUEUE_PKTS = 1024


def budget_for_buffer(buffer_pkts: int, n_stations: int, mss: int = MSS_BYTES) -> int:
    """A per-station proxy budget whose sum over all stations is half the AP's queue: spoofed
    ACKs let a sender fill the budget at once, and the queue must also hold repairs."""
    return max(4, buffer_pkts // (2 * n_stations)) * mss


class Wlan(AckwiseTopo):
    """srv -- wired link -- ap (bmv2) -- one shared wireless medium -- sta1..staN.

    With ``proxy=True`` the AP runs ap_proxy with its repair agent on a CPU port (``agent=False``
    leaves the agent out: the proxy then never spoofs). The per-station budget defaults to half
    the AP's share of the medium's buffer: with every station busy, what the proxy lets the
    sender put in flight still fits the AP's queue (docs/ap-proxy.md).

    ``scale`` is the time scale k of the whole topology (timescale.py): the medium's every duration
    and the wired link's delay are multiplied by it and the wired rate divided by it, so
    ``wired_delay_ms`` and ``wired_rate_mbps`` are the real network's and the BDP in packets is
    too."""

    AP_CPU_PORT = 100

    def build(
        self,
        n_stations: int = 1,
        preset: str = "802.11g",
        scale: float = 4.0,
        medium_loss: float = 0.0,
        medium_buffer_pkts: int = 100,
        wired_rate_mbps: float = 100.0,
        wired_delay_ms: float = 10.0,
        wired_buffer_pkts: int = 1000,
        program: str = "ack_switch",
        proxy: bool = False,
        proxy_budget_bytes: int | None = None,
        agent: bool = True,
        cc: str = DEFAULT_CONGESTION_CONTROL,
        ecn: bool = True,
        sack: bool = True,
        timestamps: bool = True,
        initcwnd: int = 0,
        ip_version: int = 4,
        backend: str = "auto",
        log_dir: str | None = None,
    ) -> None:
        if n_stations < 1:
            raise ValueError("a WLAN needs at least one station")
        self.meta = TopoMeta("wlan", {k: v for k, v in locals().items() if k not in ("self", "__class__")})
        srv = self.host("srv")
        if proxy:
            program = "ap_proxy"
            stations = tuple(f"sta{k}" for k in range(1, n_stations + 1))
            if proxy_budget_bytes is None:
                proxy_budget_bytes = budget_for_buffer(medium_buffer_pkts, n_stations)
                self.meta.params["proxy_budget_bytes"] = proxy_budget_bytes
            self.meta.ap = ApProxySetting(
                "ap", "e1", "air", self.AP_CPU_PORT, stations, proxy_budget_bytes, agent
            )
        ap = self.bmv2("ap", program, log_dir, cpu_port=self.AP_CPU_PORT if proxy else None)
        k = TimeScale(scale)
        wired = LinkParams(
            _mbps(k.rate_mbps(wired_rate_mbps)), k.delay_ms(wired_delay_ms), 0.0, wired_buffer_pkts
        )
        self.wire("e1", srv, ap, wired, wired, backend)
        hops = [(2 * k - 1, 2 * k) for k in range(1, n_stations + 1)]
        self.addSwitch(
            "air",
            cls=WirelessMedium,
            preset=wireless_preset(preset, scale),
            hops=hops,
            loss=medium_loss,
            limit_pkts=medium_buffer_pkts,
        )
        for k in range(1, n_stations + 1):
            sta = self.host(f"sta{k}")
            self.addLink(ap, "air", port2=2 * k - 1)
            self.addLink("air", sta, port1=2 * k)
            self.meta.flows.append((srv, sta))
        self.meta.queues += [
            QueueSetting("ap", "air", 0, AP_EMULATOR_QUEUE_PKTS),
            QueueSetting("ap", "e1", 0, AP_EMULATOR_QUEUE_PKTS),
        ]


class Chain(AckwiseTopo):
    """A multihop line src -- r1 -- ... -- dst, every hop over the same shared medium; the relays
    are bmv2 switches. ``scale``: the time scale of the medium (it has no wired link).
    ``geometry``: one-domain (every node hears every other) or line (the nodes 200 m apart with
    the chain's ranges, wireless.CHAIN_RANGES: Altman and Jiménez's chain, hidden terminals and
    spatial reuse).

    ``mtu_bytes``: the hosts' IP MTU (1040: the paper's 1040-byte data packets, 988-byte segments).
    ``max_window_pkts``: the paper's maximum window W, as a clamp on the receiver's advertised
    window of W segments, which the transfers' receivers set (TCP_WINDOW_CLAMP) and each run
    checks from the sender's side; 0: none (Linux's own window)."""

    def build(
        self,
        hops: int = 3,
        preset: str = "802.11b",
        scale: float = 1.0,
        medium_loss: float = 0.0,
        medium_buffer_pkts: int = 50,
        geometry: str = "one-domain",
        mtu_bytes: int = DEFAULT_MTU_BYTES,
        max_window_pkts: int = 0,
        program: str = "ack_switch",
        cc: str = DEFAULT_CONGESTION_CONTROL,
        ecn: bool = True,
        sack: bool = True,
        timestamps: bool = True,
        initcwnd: int = 0,
        ip_version: int = 4,
        log_dir: str | None = None,
    ) -> None:
        if hops < 2:
            raise ValueError("a chain needs at least two hops (one relay)")
        self.meta = TopoMeta("chain", {k: v for k, v in locals().items() if k not in ("self", "__class__")})
        mtu = mtu_bytes if mtu_bytes != DEFAULT_MTU_BYTES else None  # None: the interface's own
        nodes = [self.host("src", mtu)]
        nodes += [self.bmv2(f"r{i}", program, log_dir) for i in range(1, hops)]
        nodes.append(self.host("dst", mtu))
        self.addSwitch(
            "air",
            cls=WirelessMedium,
            preset=wireless_preset(preset, scale),
            hops=[(2 * k - 1, 2 * k) for k in range(1, hops + 1)],
            loss=medium_loss,
            limit_pkts=medium_buffer_pkts,
            line=nodes if geometry == "line" else None,
        )
        for k in range(1, hops + 1):
            self.addLink(nodes[k - 1], "air", port2=2 * k - 1)
            self.addLink("air", nodes[k], port1=2 * k)
        self.meta.flows.append(("src", "dst"))


TOPOLOGIES: dict[str, type[AckwiseTopo]] = {
    "dumbbell": Dumbbell,
    "parking-lot": ParkingLot,
    "wlan": Wlan,
    "chain": Chain,
}


def describe_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: (asdict(v) if hasattr(v, "__dataclass_fields__") else v) for k, v in params.items()}
