"""A Mininet switch that is one simple_switch process, started and stopped through ackwise's
control plane."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from ackwise.bmv2.client import SwitchClient, port_answers
from ackwise.bmv2.launcher import RunningSwitch, SwitchSpec, start_switch
from ackwise.bmv2.toolchain import compiled_program
from ackwise.netdev import add_veth
from ackwise.topologies.links import RootNode, prepare_root_intf

_taken_thrift_ports: set[int] = set()


THRIFT_BASE_ENV = "ACKWISE_TESTBED_THRIFT_BASE"


def free_thrift_port(start: int | None = None) -> int:
    """The first Thrift port from ``start`` (default 9090, or $ACKWISE_TESTBED_THRIFT_BASE: runs
    sharing a machine keep to their own range) that no switch answers on and this process has not
    handed out."""
    port = start if start is not None else int(os.environ.get(THRIFT_BASE_ENV, "9090"))
    while port in _taken_thrift_ports or port_answers("localhost", port, timeout_s=0.2):
        port += 1
    _taken_thrift_ports.add(port)
    return port


class BMv2Switch(RootNode):
    """simple_switch running ``program`` on this node's interfaces (Mininet port numbers)."""

    def __init__(
        self,
        name: str,
        program: str = "ack_switch",
        thrift_port: int | None = None,
        log_dir: str | None = None,
        pcap_dir: str | None = None,
        cpu_port: int | None = None,
        **params: Any,
    ) -> None:
        """``cpu_port``: a port wired to a veth pair <name>-cpu / <name>-cpua in the root namespace,
        the second end for an agent (the AP proxy's repair agent)."""
        RootNode.__init__(self, name, **params)
        self.program = program
        self.thrift_port = thrift_port or free_thrift_port()
        self.log_dir, self.pcap_dir, self.cpu_port = log_dir, pcap_dir, cpu_port
        self.running: RunningSwitch | None = None

    def data_ports(self) -> dict[int, str]:
        return {port: intf.name for port, intf in sorted(self.intfs.items()) if intf.name != "lo"}

    def port_to(self, node_name: str) -> int:
        """This switch's port on the link to ``node_name`` (the first, if there are several)."""
        return self.ports_to(node_name)[0]

    def ports_to(self, node_name: str) -> list[int]:
        """This switch's ports on its links to ``node_name`` (an AP has one per station, all to
        the medium)."""
        ports = []
        for port, intf in self.intfs.items():
            link = intf.link
            if link is None:
                continue
            other = link.intf2 if link.intf1 is intf else link.intf1
            if other.node.name == node_name:
                ports.append(port)
        if not ports:
            raise KeyError(f"{self.name} has no link to {node_name}")
        return ports

    @property
    def cpu_intfs(self) -> tuple[str, str]:
        return f"{self.name}-cpu", f"{self.name}-cpua"

    def start(self, controllers: Any) -> None:
        ports = self.data_ports()
        if self.cpu_port is not None:
            switch_side, agent_side = self.cpu_intfs
            add_veth(switch_side, agent_side, mtu=None, ipv6=True, offloads=True)  # set up below, as the rest
            prepare_root_intf(agent_side)
            ports[self.cpu_port] = switch_side
        for intf in ports.values():
            prepare_root_intf(intf)
        log_file = str(Path(self.log_dir) / f"{self.name}.log") if self.log_dir else None
        spec = SwitchSpec(
            program_json=str(compiled_program(self.program)),
            ports=ports,
            thrift_port=self.thrift_port,
            log_file=log_file,
            pcap_dir=self.pcap_dir,
        )
        self.running = start_switch(spec)

    def client(self) -> SwitchClient:
        return SwitchClient("localhost", self.thrift_port).connect()

    def stop(self, deleteIntfs: bool = True) -> None:
        if self.running is not None:
            self.running.stop()
            self.running = None
        if self.cpu_port is not None:
            subprocess.run(["ip", "link", "del", self.cpu_intfs[0]], stderr=subprocess.DEVNULL)
        _taken_thrift_ports.discard(self.thrift_port)
        RootNode.stop(self, deleteIntfs)

    def describe(self) -> dict[str, Any]:
        return {
            "node": self.name,
            "program": self.program,
            "thrift_port": self.thrift_port,
            "pid": self.running.pid if self.running else None,
            "ports": self.data_ports(),
        }
