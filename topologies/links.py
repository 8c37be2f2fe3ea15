"""Link emulation: rate, one-way delay, random loss and a drop-tail queue per direction, and the
shared wireless medium.

Wired links use netem (with its own rate option) where the kernel has it. This project's target
machines often do not, so the fallback is linkem (topologies/linkem/linkem.c, built by
``make build``), a small userspace emulator with the same parameters. The backend is chosen once
per run (``link_backend()``) and recorded with the results. The wireless medium always runs in
linkem: netem has no notion of a medium shared by several transmitters.

Both backends sit in an emulator node between two Mininet nodes, so the nodes on either side keep
plain interfaces (and bmv2 sees exactly the frames the emulated link delivers).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mininet.node import Switch

from ackwise.bmv2.toolchain import BUILD_DIR
from ackwise.netdev import add_netns, delete_netns, disable_ipv6, set_offloads_off, set_receive_steering
from ackwise.processes import stop_process
from ackwise.topologies.wireless import CHAIN_RANGES, WirelessPreset, placement_lines

LINKEM_ENV = "ACKWISE_LINKEM"
BACKENDS = ("auto", "netem", "linkem")


class LinkEmulationError(RuntimeError):
    pass


@dataclass(frozen=True)
class LinkParams:
    """One direction of a link."""

    rate_bps: float = 0.0  # 0: no rate limit
    delay_ms: float = 0.0  # one-way
    loss: float = 0.0  # probability, 0..1
    limit_pkts: int = 1000  # drop-tail queue in front of the rate limit
    # The same queue's limit in bytes as well (0: none). A queue counted in packets lets a pure
    # ACK take a slot a data segment would otherwise fill; counted in bytes it costs 66 bytes.
    limit_bytes: int = 0

    def __post_init__(self) -> None:
        if (
            self.rate_bps < 0
            or self.delay_ms < 0
            or self.limit_pkts < 1
            or self.limit_bytes < 0
            or not 0 <= self.loss <= 1
        ):
            raise ValueError(
                f"invalid link parameters {self}: rate, delay and byte limit >= 0, loss in 0..1, limit >= 1"
            )

    def linkem_args(self) -> str:
        return (
            f"rate_bps={self.rate_bps:.0f} delay_us={self.delay_ms * 1000:.0f} loss={self.loss:g} "
            f"limit_pkts={self.limit_pkts} limit_bytes={self.limit_bytes}"
        )

    def netem_args(self) -> list[str]:
        if self.limit_bytes:
            raise LinkEmulationError("a queue limit in bytes needs the linkem backend (netem counts packets)")
        args = ["delay", f"{self.delay_ms}ms", "limit", str(self.limit_pkts)]
        if self.loss:
            args += ["loss", f"{self.loss * 100:g}%"]
        if self.rate_bps:
            args += ["rate", f"{self.rate_bps:.0f}bit"]
        return args


@cache
def netem_available() -> bool:
    """Whether this kernel has netem: try it on the loopback of a throwaway namespace."""
    name = f"awnetem{os.getpid()}"
    try:
        add_netns(name, loopback_up=False)
    except subprocess.CalledProcessError:
        return False
    try:
        probe = [
            "ip",
            "netns",
            "exec",
            name,
            "tc",
            "qdisc",
            "add",
            "dev",
            "lo",
            "root",
            "netem",
            "delay",
            "1ms",
        ]
        return subprocess.run(probe, capture_output=True).returncode == 0
    finally:
        delete_netns(name)


def link_backend(requested: str = "auto") -> str:
    if requested not in BACKENDS:
        raise ValueError(f"link backend must be one of {', '.join(BACKENDS)}")
    if requested == "auto":
        return "netem" if netem_available() else "linkem"
    if requested == "netem" and not netem_available():
        raise LinkEmulationError("this kernel has no netem (sch_netem): use the linkem backend")
    return requested


@cache
def linkem_version() -> str:
    """The link model the linkem binary implements (``linkem --version``), for run records."""
    try:
        out = subprocess.run([str(linkem_binary()), "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, LinkEmulationError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return out.stdout.strip() or f"unknown (exit {out.returncode})"


def linkem_binary() -> Path:
    path = Path(os.environ.get(LINKEM_ENV, BUILD_DIR / "linkem"))
    if not os.access(path, os.X_OK):
        raise LinkEmulationError(f"{path} missing: run 'make build' (it compiles the link emulator)")
    return path


class LinkemProcess:
    """One linkem process for a configuration; stopped by pid, leaving its counters behind."""

    def __init__(self, name: str, config_lines: list[str]) -> None:
        binary = linkem_binary()  # a missing build fails here, before anything is created
        self.workdir = Path(tempfile.mkdtemp(prefix=f"ackwise-linkem-{name}-"))
        self.stats_path = self.workdir / "stats.json"
        self.config_path = self.workdir / "linkem.conf"
        self._exit_reason: str | None = None
        try:
            self.config_path.write_text("\n".join([f"stats {self.stats_path}", *config_lines]) + "\n")
            self.proc = subprocess.Popen(
                [str(binary), str(self.config_path)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            line = self.proc.stdout.readline() if self.proc.stdout else ""
            if line.strip() != "ready":
                err = self.proc.stderr.read() if self.proc.stderr else ""
                self.proc.kill()
                self.proc.wait()
                raise LinkEmulationError(f"linkem for {name} did not start: {err.strip() or line.strip()}")
        except BaseException:
            shutil.rmtree(self.workdir, ignore_errors=True)  # what it created, also when it fails
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exit_reason(self) -> str | None:
        """None while linkem runs; once it has exited on its own (an interface it serves
        disappeared, a socket failed), its status and what it said why."""
        code = self.proc.poll()
        if code is None:
            return None
        if self._exit_reason is None:
            err = self.proc.stderr.read().strip() if self.proc.stderr else ""
            self._exit_reason = f"linkem exited with status {code}" + (f": {err}" if err else "")
        return self._exit_reason

    def stats(self) -> dict[str, Any]:
        """Counters so far (linkem writes them on SIGUSR1)."""
        if self.proc.poll() is None:
            mtime = self.stats_path.stat().st_mtime_ns if self.stats_path.exists() else 0
            self.proc.send_signal(signal.SIGUSR1)
            for _ in range(100):
                if self.stats_path.exists() and self.stats_path.stat().st_mtime_ns != mtime:
                    break
                time.sleep(0.01)
        return json.loads(self.stats_path.read_text()) if self.stats_path.exists() else {}

    def stop(self) -> dict[str, Any]:
        self.exit_reason()  # read before stopping: after a clean stop there is nothing to say
        stop_process(self.proc, timeout_s=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        stats = json.loads(self.stats_path.read_text()) if self.stats_path.exists() else {}
        for path in (self.stats_path, self.config_path):
            path.unlink(missing_ok=True)
        self.workdir.rmdir()
        return stats


# Tags the firewall rules the test bed adds, so that they can be found, removed and checked for.
FIREWALL_COMMENT = "ackwise-testbed"
FIREWALL_TOOLS = ("iptables", "ip6tables")


def _rule(name: str) -> list[str]:
    return ["INPUT", "-i", name, "-m", "comment", "--comment", FIREWALL_COMMENT, "-j", "DROP"]


def isolate_root_intf(name: str) -> None:
    """The root namespace's own IP stack takes nothing that arrives on ``name``.

    The switches' Thrift servers (bmv2 binds 0.0.0.0, with no option to do otherwise) and every
    other socket of the root namespace must be out of the Mininet hosts' reach; the hosts have no
    route to the root namespace's addresses, but a process on a host is root in its namespace and
    can add one (docs/security.md). bmv2, linkem and the agents read these interfaces with packet
    sockets, which see a frame before netfilter does: a DROP in INPUT stops the IP stack only."""
    for tool in FIREWALL_TOOLS:
        if subprocess.run([tool, "-w", "-C", *_rule(name)], capture_output=True).returncode != 0:
            subprocess.run([tool, "-w", "-I", *_rule(name)], check=True, capture_output=True)


def release_root_intfs(names: list[str] | set[str]) -> None:
    """Remove the rules ``isolate_root_intf`` added for these interfaces (any number of copies)."""
    for tool in FIREWALL_TOOLS:
        for name in names:
            while subprocess.run([tool, "-w", "-D", *_rule(name)], capture_output=True).returncode == 0:
                pass


def firewall_rules() -> list[str]:
    """The test bed's rules now in place (for checks that nothing is left behind)."""
    rules = []
    for tool in FIREWALL_TOOLS:
        out = subprocess.run([tool, "-w", "-S", "INPUT"], capture_output=True, text=True).stdout
        rules += [f"{tool} {line}" for line in out.splitlines() if FIREWALL_COMMENT in line]
    return rules


def prepare_root_intf(name: str) -> None:
    """Bring an interface of a root-namespace node up, with offloads off so that every frame on it
    is one wire-sized packet, receive steering on so that a host's segments arrive in the order it
    sent them (ackwise.netdev), with no IPv6 chatter, and closed to the root namespace's IP stack."""
    disable_ipv6(name)
    isolate_root_intf(name)
    subprocess.run(["ip", "link", "set", name, "up"], check=True)
    set_offloads_off(name)
    set_receive_steering(name)


class RootNode(Switch):
    """A Mininet node in the root namespace that is not an OpenFlow switch: no datapath id."""

    def __init__(self, name: str, **params: Any) -> None:
        params["inNamespace"] = False
        Switch.__init__(self, name, **params)

    def defaultDpid(self, dpid: str | None = None) -> str:
        return "0" * self.dpidLen

    def data_intfs(self) -> list[str]:
        return [self.intfs[p].name for p in sorted(self.intfs) if self.intfs[p].name != "lo"]


class LinkEmulator(RootNode):
    """A wired link between the two nodes this node is linked to: ``forward`` applies to frames
    from the node on its first link to the node on its second, ``reverse`` to the other way."""

    def __init__(
        self,
        name: str,
        forward: LinkParams = LinkParams(),
        reverse: LinkParams = LinkParams(),
        backend: str = "auto",
        **params: Any,
    ) -> None:
        RootNode.__init__(self, name, **params)
        self.forward, self.reverse = forward, reverse
        self.backend = link_backend(backend)
        self.linkem: LinkemProcess | None = None
        self.final_stats: dict[str, Any] = {}

    def peer_port(self, port: int) -> int:
        """Frames entering on one port leave on the other."""
        return 2 if port == 1 else 1

    def start(self, controllers: Any) -> None:
        intfs = self.data_intfs()
        if len(intfs) != 2:
            raise LinkEmulationError(f"link emulator {self.name} needs exactly two links, has {len(intfs)}")
        a, b = intfs
        for intf in intfs:
            prepare_root_intf(intf)
        if self.backend == "linkem":
            self.linkem = LinkemProcess(
                self.name,
                [f"wire {a} {b} {self.forward.linkem_args()}", f"wire {b} {a} {self.reverse.linkem_args()}"],
            )
        else:
            for src, dst, params in ((a, b, self.forward), (b, a, self.reverse)):
                run = lambda *cmd: subprocess.run(cmd, check=True, capture_output=True)  # noqa: E731
                run("tc", "qdisc", "add", "dev", dst, "root", "netem", *params.netem_args())
                run("tc", "qdisc", "add", "dev", src, "ingress")
                run(
                    "tc",
                    "filter",
                    "add",
                    "dev",
                    src,
                    "parent",
                    "ffff:",
                    "protocol",
                    "all",
                    "u32",
                    "match",
                    "u32",
                    "0",
                    "0",
                    "action",
                    "mirred",
                    "egress",
                    "redirect",
                    "dev",
                    dst,
                )

    def stats(self) -> dict[str, Any]:
        return self.linkem.stats() if self.linkem else self.final_stats

    def stop(self, deleteIntfs: bool = True) -> None:
        if self.linkem is not None:
            self.final_stats = self.linkem.stop()
            self.linkem = None
        RootNode.stop(self, deleteIntfs)

    def describe(self) -> dict[str, Any]:
        return {
            "node": self.name,
            "backend": self.backend,
            "forward": asdict(self.forward),
            "reverse": asdict(self.reverse),
        }


class WirelessMedium(RootNode):
    """One half-duplex medium shared by every transmitter linked to it.

    ``hops`` lists pairs of this node's port numbers: a frame entering on one port of a pair
    leaves on the other. Each frame is queued at the transmitter it came from (the node on the
    other end of the link it arrived on) for the receiver at the far end of the pair; linkem's
    medium model (medium.c) decides when it is sent, whether it collides, and when it arrives.
    ``line``: the nodes, in order, placed on a line with the chain's ranges (wireless.CHAIN_RANGES:
    hidden terminals and spatial reuse); without it every node hears every other.
    """

    def __init__(
        self,
        name: str,
        preset: WirelessPreset,
        hops: list[tuple[int, int]],
        loss: float = 0.0,
        limit_pkts: int = 100,
        line: list[str] | None = None,
        **params: Any,
    ) -> None:
        RootNode.__init__(self, name, **params)
        if not 0 <= loss <= 1:
            raise ValueError("medium loss is a probability, 0..1")
        self.preset, self.hops, self.loss, self.limit_pkts = preset, hops, loss, limit_pkts
        self.line = line
        self.linkem: LinkemProcess | None = None
        self.final_stats: dict[str, Any] = {}

    def peer_port(self, port: int) -> int:
        for a, b in self.hops:
            if port in (a, b):
                return b if port == a else a
        raise KeyError(f"{self.name}: port {port} belongs to no hop")

    def _peer(self, port: int) -> tuple[str, str]:
        intf = self.intfs[port]
        link = intf.link
        other = link.intf2 if link.intf1 is intf else link.intf1
        return intf.name, other.node.name

    def start(self, controllers: Any) -> None:
        # Every 802.11 parameter comes from the table (wireless.py); the model is medium.c's.
        lines = [f"medium {self.name} {self.preset.linkem_medium_args(self.loss, self.limit_pkts)}"]
        for port_a, port_b in self.hops:
            (intf_a, node_a), (intf_b, node_b) = self._peer(port_a), self._peer(port_b)
            for intf in (intf_a, intf_b):
                prepare_root_intf(intf)
            lines.append(f"air {intf_a} {intf_b} {self.name} {node_a} {node_b}")
            lines.append(f"air {intf_b} {intf_a} {self.name} {node_b} {node_a}")
        if self.line:
            lines += placement_lines(self.name, self.line)
        self.linkem = LinkemProcess(self.name, lines)

    def stats(self) -> dict[str, Any]:
        return self.linkem.stats() if self.linkem else self.final_stats

    def stop(self, deleteIntfs: bool = True) -> None:
        if self.linkem is not None:
            self.final_stats = self.linkem.stop()
            self.linkem = None
        RootNode.stop(self, deleteIntfs)

    def describe(self) -> dict[str, Any]:
        return {
            "node": self.name,
            "backend": "linkem",
            "preset": asdict(self.preset),
            "loss": self.loss,
            "limit_pkts": self.limit_pkts,
            "line": self.line,
            "ranges": asdict(CHAIN_RANGES) if self.line else None,
        }
