"""A running topology: Mininet plus bmv2 switches with their entries, emulated links, and a
cleanup that removes exactly what was created (by pid and by name), also on failure or Ctrl-C."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

from mininet.log import setLogLevel
from mininet.net import Mininet

from ackwise.bmv2.toolchain import running_build_config
from ackwise.features.ap import StationParams, agent_stats_path, configure_ap, read_agent_report
from ackwise.features.holdback import agent_stats_path as holdback_stats_path
from ackwise.features.queues import set_queue_depth, set_queue_rate
from ackwise.processes import stop_process
from ackwise.topologies.bmv2 import BMv2Switch
from ackwise.topologies.catalog import TOPOLOGIES, AckwiseTopo, check_params, describe_params
from ackwise.topologies.hosts import (
    DEFAULT_CONGESTION_CONTROL,
    AckwiseHost,
    allow_congestion_controls,
    restore_allowed_congestion_controls,
)
from ackwise.topologies.links import LinkEmulator, WirelessMedium, linkem_version, release_root_intfs
from ackwise.topologies.stale import StaleInterfaceInUse, remove_stale_intfs
from ackwise.topologies.wireless import AIRTIME_MODEL_VERSION
from ackwise.twins.p4names import ACTION_FORWARDING_L2_FORWARD, KEY_DST_ADDR, TABLE_FORWARDING_L2_EXACT


class TestbedError(RuntimeError):
    __test__ = False


class Testbed:
    __test__ = False  # not a pytest test class, despite the name

    # Test beds of this process that started and have not been stopped (see stop_all()).
    _running: ClassVar[list[Testbed]] = []
    _said_cc: ClassVar[bool] = False

    def __init__(self, topo: AckwiseTopo) -> None:
        self.topo = topo
        self.net: Mininet | None = None
        self.root_intfs: list[str] = []
        self.pids: dict[str, int] = {}
        self.final_link_stats: dict[str, Any] = {}
        self.ap_agent: subprocess.Popen[str] | None = None
        self.final_agent_report: dict[str, Any] = {}
        self.holdback_agents: dict[str, subprocess.Popen[str]] = {}
        self.holdback_reports: dict[str, dict[str, Any]] = {}
        self.allowed_cc_before: str | None = None  # the root's allowed list, if this test bed widened it

    @classmethod
    def create(cls, name: str, **params: Any) -> Testbed:
        try:
            topo_cls = TOPOLOGIES[name]
        except KeyError:
            raise TestbedError(f"unknown topology {name!r}; known: {', '.join(TOPOLOGIES)}") from None
        check_params(name, params)  # named as given (key=value), not as the link object it becomes
        return cls(topo_cls(**params))

    @property
    def name(self) -> str:
        return self.topo.meta.name

    @property
    def flows(self) -> list[tuple[str, str]]:
        return self.topo.meta.flows

    @property
    def ip_version(self) -> int:
        """The IP version the hosts' traffic runs over (the topology's ``ip_version``; 6: the
        hosts are dual-stack)."""
        return self.topo.ip_version

    @property
    def time_scale(self) -> float:
        """k as the topology was built (its default where the scenario names none; 1 for a
        topology without a time scale): what our own timers and the emulated-time rates use."""
        return float(self.topo.meta.params.get("scale", 1.0))

    # ---- lifecycle ----

    def start(self) -> Testbed:
        if os.geteuid() != 0:
            raise TestbedError("the test bed creates namespaces and interfaces: run it as root")
        setLogLevel("warning")
        try:
            removed = remove_stale_intfs(self.topo)
        except StaleInterfaceInUse as exc:
            raise TestbedError(str(exc)) from None
        if removed:
            print(
                f"ackwise: removed interfaces an earlier test bed left behind: {', '.join(removed)}",
                file=sys.stderr,
            )
        self.net = Mininet(
            topo=self.topo, controller=None, autoStaticArp=True, build=False, waitConnected=False
        )
        Testbed._running.append(self)
        try:
            ccs = {self.topo.nodeInfo(h).get("cc", DEFAULT_CONGESTION_CONTROL) for h in self.topo.hosts()}
            self.allowed_cc_before = allow_congestion_controls(ccs)
            if self.allowed_cc_before is not None and not Testbed._said_cc:
                Testbed._said_cc = True  # once per process: an experiment starts one test bed per run
                print(
                    f"ackwise: hosts may use {', '.join(sorted(ccs))} while the test bed runs: "
                    f"net.ipv4.tcp_allowed_congestion_control was {self.allowed_cc_before!r}",
                    file=sys.stderr,
                )
            self.net.build()
            self._track()
            self.net.start()
            self._track()
            self.install_forwarding()
            self._static_ipv6_neighbours()
            self._set_queues()
            self._start_ap_proxy()
            self._start_holdback_agents()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the AP agent, switches and emulators (by pid), then hosts and links. Safe to call twice."""
        if self in Testbed._running:
            Testbed._running.remove(self)
        if self.allowed_cc_before is not None:
            # The hosts' namespaces keep the default they were given; only new ones are refused.
            restore_allowed_congestion_controls(self.allowed_cc_before)
            self.allowed_cc_before = None
        if self.net is None:
            return
        self._stop_ap_agent()
        self._stop_holdback_agents()
        net, self.net = self.net, None
        for node in net.switches:
            try:
                node.stop(deleteIntfs=False)
                if isinstance(node, LinkEmulator | WirelessMedium):
                    self.final_link_stats[node.name] = node.final_stats
            except Exception:  # keep going: everything else must still be removed
                pass
        net.stop()
        release_root_intfs(self.isolated_intfs(net))
        self._wait_for_exit(timeout_s=5.0)

    def isolated_intfs(self, net: Mininet | None = None) -> set[str]:
        """Every root-namespace interface this test bed closed to the root's IP stack."""
        names = set(self.root_intfs)
        net = net or self.net
        for node in net.switches if net is not None else []:
            if isinstance(node, BMv2Switch) and node.cpu_port is not None:
                names.update(node.cpu_intfs)
        return names

    def _wait_for_exit(self, timeout_s: float) -> None:
        """Mininet signals its host shells and returns at once; a check right after stop() would
        still find them. Wait (bounded) until every process this test bed started has exited."""
        deadline = time.monotonic() + timeout_s
        while any(_alive(pid) for pid in self.pids.values()) and time.monotonic() < deadline:
            time.sleep(0.02)

    @classmethod
    def stop_all(cls) -> list[str]:
        """Stop every test bed of this process that is still running; return their names. For
        whoever must leave the machine clean whatever happened (a test harness, an interrupted run)."""
        names = []
        for testbed in list(cls._running):
            names.append(testbed.name)
            testbed.stop()
        return names

    def __enter__(self) -> Testbed:
        return self.start() if self.net is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self) -> None:
        assert self.net is not None
        for link in self.net.links:
            for intf in (link.intf1, link.intf2):
                if not intf.node.inNamespace and intf.name not in self.root_intfs:
                    self.root_intfs.append(intf.name)
        for node in self.net.hosts:
            self.pids[f"{node.name} shell"] = node.pid
        for node in self.net.switches:
            if isinstance(node, BMv2Switch) and node.running is not None:
                self.pids[f"{node.name} simple_switch"] = node.running.pid
            if isinstance(node, LinkEmulator | WirelessMedium) and node.linkem is not None:
                self.pids[f"{node.name} linkem"] = node.linkem.pid

    def health(self) -> list[str]:
        """What has died in the running test bed: switches, link emulators, the AP agent. Empty
        when all is well. Experiments check it after each run: a run on a broken test bed failed."""
        problems = []
        net = self._net()
        for node in net.switches:
            if isinstance(node, BMv2Switch) and (node.running is None or not node.running.alive):
                problems.append(f"{node.name}: simple_switch is not running")
            if isinstance(node, LinkEmulator | WirelessMedium) and node.linkem is not None:
                reason = node.linkem.exit_reason()
                if reason is not None:
                    problems.append(f"{node.name}: {reason}")
        if self.ap_agent is not None and self.ap_agent.poll() is not None:
            problems.append(f"the AP repair agent exited with status {self.ap_agent.returncode}")
        for name, agent in self.holdback_agents.items():
            if agent.poll() is not None:
                problems.append(f"the hold-back agent of {name} exited with status {agent.returncode}")
        return problems

    def leftovers(self) -> list[str]:
        """Interfaces and processes this test bed created that still exist."""
        left = [f"interface {name}" for name in self.root_intfs if Path(f"/sys/class/net/{name}").exists()]
        left += [f"{what} (pid {pid})" for what, pid in self.pids.items() if _alive(pid)]
        return left

    # ---- nodes ----

    def _net(self) -> Mininet:
        if self.net is None:
            raise TestbedError("the test bed is not running")
        return self.net

    def host(self, name: str) -> AckwiseHost:
        return self._net().get(name)

    @property
    def hosts(self) -> list[AckwiseHost]:
        return list(self._net().hosts)

    @property
    def switches(self) -> list[BMv2Switch]:
        return [s for s in self._net().switches if isinstance(s, BMv2Switch)]

    def switch(self, name: str) -> BMv2Switch:
        node = self._net().get(name)
        if not isinstance(node, BMv2Switch):
            raise TestbedError(f"{name} is not a bmv2 switch")
        return node

    def link_nodes(self) -> list[LinkEmulator | WirelessMedium]:
        return [s for s in self._net().switches if isinstance(s, LinkEmulator | WirelessMedium)]

    def provenance(self) -> dict[str, Any]:
        """What this test bed runs with, read back from it: each host's TCP settings and offloads,
        the build of its switches' simple_switch, the link model and, with a shared medium, the
        airtime model (run records keep this; the report refuses to pool runs where it differs)."""
        builds = {}
        for switch in self.switches:
            config = running_build_config(switch.running.pid) if switch.running is not None else None
            builds[switch.name] = config.as_record() if config else None
        doc: dict[str, Any] = {
            "ip_version": self.ip_version,
            "hosts": {host.name: host.provenance() for host in self.hosts},
            "bmv2_builds": builds,
        }
        nodes = self.link_nodes()
        media = [n for n in nodes if isinstance(n, WirelessMedium)]
        if nodes:
            linkem = media or [n for n in nodes if getattr(n, "backend", "") == "linkem"]
            doc["link_model"] = linkem_version() if linkem else "netem"
        if media:
            doc["airtime_model"] = AIRTIME_MODEL_VERSION
        return doc

    def link_stats(self) -> dict[str, Any]:
        if self.net is None:
            return self.final_link_stats
        return {node.name: node.stats() for node in self.link_nodes()}

    # ---- forwarding ----

    def egress_ports(self) -> dict[tuple[str, str], int]:
        """(switch, host) -> the switch's port on the shortest path to the host. Emulator nodes are
        transparent: a frame entering one of their ports leaves on its peer port."""
        result: dict[tuple[str, str], int] = {}
        for host in self._net().hosts:
            seen: set[str] = set()
            queue = deque(_far_end(intf) for intf in host.intfList() if intf.link is not None)
            while queue:
                intf = queue.popleft()
                node = intf.node
                port = node.ports[intf]
                if isinstance(node, BMv2Switch):
                    if node.name in seen:
                        continue
                    seen.add(node.name)
                    result[(node.name, host.name)] = port
                    queue.extend(
                        _far_end(other)
                        for other in node.intfList()
                        if other is not intf and other.link is not None
                    )
                elif isinstance(node, LinkEmulator | WirelessMedium):
                    out = node.intfs[node.peer_port(port)]
                    queue.append(_far_end(out))
        return result

    def install_forwarding(self) -> None:
        """An l2_exact entry on every bmv2 switch for every host's MAC."""
        ports = self.egress_ports()
        for switch in self.switches:
            with switch.client() as client:
                for host in self.hosts:
                    port = ports.get((switch.name, host.name))
                    if port is None:
                        raise TestbedError(f"{switch.name} has no path to {host.name}")
                    client.table_add(
                        TABLE_FORWARDING_L2_EXACT,
                        ACTION_FORWARDING_L2_FORWARD,
                        {KEY_DST_ADDR: host.MAC()},
                        {"port": port},
                    )

    def _static_ipv6_neighbours(self) -> None:
        """On dual-stack hosts, a permanent neighbour entry for every other host's IPv6 address
        (IPv6's autoStaticArp): neighbour discovery is multicast, which the switches' l2_exact
        entries do not forward. The switches need nothing more: they forward IPv6 by MAC address
        as they do IPv4 (install_forwarding)."""
        dual = [h for h in self.hosts if h.ip6]
        for src in dual:
            for dst in dual:
                if dst is not src:
                    src.cmd(
                        f"ip -6 neigh replace {dst.ip6} lladdr {dst.MAC()} "
                        f"dev {src.defaultIntf().name} nud permanent"
                    )

    def _set_queues(self) -> None:
        for q in self.topo.meta.queues:
            switch = self.switch(q.switch)
            with switch.client() as client:
                for port in switch.ports_to(q.toward):
                    set_queue_rate(client, port, q.rate_pps)
                    set_queue_depth(client, port, q.depth_pkts)

    # ---- the AP proxy ----

    def _station_prefixes(self, name: str) -> list[str]:
        """What the AP serves a station by: its IPv4 address and, on a dual-stack test bed, its
        IPv6 one (ap.stations6)."""
        host = self.host(name)
        return [f"{host.IP()}/32"] + ([f"{host.ip6}/128"] if host.ip6 else [])

    def _start_ap_proxy(self) -> None:
        setting = self.topo.meta.ap
        if setting is None:
            return
        ap = self.switch(setting.switch)
        uplink = ap.port_to(setting.uplink_toward)
        wireless = [
            p
            for p, intf in ap.intfs.items()
            if intf.link is not None and _far_end(intf).node.name == setting.wireless_toward
        ]
        params = StationParams(budget_bytes=setting.budget_bytes)
        with ap.client() as client:
            configure_ap(
                client,
                [uplink],
                wireless,
                setting.cpu_port,
                [(prefix, params) for s in setting.stations for prefix in self._station_prefixes(s)],
            )
        if setting.agent:
            self.ap_agent_stats = agent_stats_path(ap.thrift_port)
            self.ap_agent_log = Path(tempfile.mkstemp(prefix="ackwise-ap-agent-", suffix=".log")[1])
            with self.ap_agent_log.open("w") as log:  # a file, not a pipe nobody drains
                self.ap_agent = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "ackwise.daemons.ap_agent",
                        "--iface",
                        ap.cpu_intfs[1],
                        "--thrift-port",
                        str(ap.thrift_port),
                        "--stats",
                        str(self.ap_agent_stats),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                )
            self.pids["ap repair agent"] = self.ap_agent.pid
            assert self.ap_agent.stdout is not None
            if self.ap_agent.stdout.readline().strip() != "ready":
                raise TestbedError(
                    f"the AP repair agent did not start: {self.ap_agent_log.read_text().strip()}"
                )

    # ---- hold-back agents ----

    def _start_holdback_agents(self) -> None:
        for name in self.topo.meta.holdback:
            switch = self.switch(name)
            stats = holdback_stats_path(switch.thrift_port)
            log_path = Path(tempfile.mkstemp(prefix=f"ackwise-holdback-{name}-", suffix=".log")[1])
            cmd = [sys.executable, "-m", "ackwise.daemons.holdback_agent", "--iface", switch.cpu_intfs[1]]
            cmd += ["--thrift-port", str(switch.thrift_port), "--cpu-port", str(switch.cpu_port)]
            cmd += ["--stats", str(stats)]
            with log_path.open("w") as log:
                agent = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
            self.holdback_agents[name] = agent
            self.pids[f"{name} hold-back agent"] = agent.pid
            assert agent.stdout is not None
            ready = agent.stdout.readline().strip() == "ready"
            message = log_path.read_text().strip()
            log_path.unlink()
            if not ready:
                raise TestbedError(f"the hold-back agent of {name} did not start: {message or 'no output'}")

    def holdback_report(self, name: str) -> dict[str, Any]:
        """A hold-back agent's counters: live while it runs, its last report after stop()."""
        if name in self.holdback_agents:
            path = holdback_stats_path(self.switch(name).thrift_port)
            try:
                return dict(json.loads(path.read_text()))
            except (OSError, ValueError):
                return {}
        return self.holdback_reports.get(name, {})

    def _stop_holdback_agents(self) -> None:
        for name, agent in list(self.holdback_agents.items()):
            stop_process(agent, timeout_s=10)
            if agent.stdout is not None:
                agent.stdout.close()
            path = holdback_stats_path(self.switch(name).thrift_port)
            try:
                self.holdback_reports[name] = json.loads(path.read_text())
            except (OSError, ValueError):
                self.holdback_reports[name] = {}
            path.unlink(missing_ok=True)
            path.with_suffix(".tmp").unlink(missing_ok=True)
            del self.holdback_agents[name]

    def ap_agent_report(self) -> dict[str, Any]:
        """The repair agent's counters: live while it runs, its last report after stop()."""
        if self.ap_agent is None:
            return self.final_agent_report
        return read_agent_report(self.ap_agent_stats) or {}

    def _stop_ap_agent(self) -> None:
        agent, self.ap_agent = self.ap_agent, None
        if agent is None:
            return
        stop_process(agent, timeout_s=10)
        if agent.stdout is not None:
            agent.stdout.close()
        try:
            self.final_agent_report = json.loads(self.ap_agent_stats.read_text())
        except (OSError, ValueError):
            self.final_agent_report = {}
        for path in (self.ap_agent_stats, self.ap_agent_log):
            path.unlink(missing_ok=True)

    # ---- checks and description ----

    def pingall(self, timeout_s: float = 2.0) -> float:
        """Percentage of pings lost between every pair of hosts."""
        return float(self._net().pingAll(timeout=str(timeout_s)))

    def describe(self) -> dict[str, Any]:
        net = self._net()
        return {
            "topology": self.name,
            "params": describe_params(self.topo.meta.params),
            "flows": self.flows,
            "hosts": [h.describe() for h in net.hosts],
            "switches": [s.describe() for s in self.switches],
            "links": [n.describe() for n in self.link_nodes()],
            "switch_queues": [vars(q) for q in self.topo.meta.queues],
        }


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has exited: only its parent has not collected it yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _far_end(intf: Any) -> Any:
    link = intf.link
    return link.intf2 if link.intf1 is intf else link.intf1
