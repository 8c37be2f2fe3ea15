"""Network devices the test bed, the benchmarks, the fuzzer and the PTF runner make: veth pairs,
network namespaces, and offloads. One place, so every one of them gets the same interface.

Why offloads off: bmv2, the link emulator and the agents read raw frames from packet sockets; with
segmentation or receive offloads on, the kernel hands them super-packets, and with checksum
offload the checksums are left for a NIC that does not exist. Every frame must be a frame as a
wire would carry it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

OFFLOADS_OFF = ("tso", "gso", "gro", "tx", "rx")  # ethtool -K features set off on every interface
JUMBO_MTU = 9000  # test ports carry any frame a test makes


def offloads_off_command(iface: str) -> list[str]:
    """The ethtool command that sets OFFLOADS_OFF on ``iface`` (for a Mininet host's cmd() too)."""
    return ["ethtool", "-K", iface, *(x for feature in OFFLOADS_OFF for x in (feature, "off"))]


def _in(netns: str | None, cmd: Sequence[str]) -> list[str]:
    return ["ip", "netns", "exec", netns, *cmd] if netns else list(cmd)


def set_offloads_off(iface: str, netns: str | None = None) -> None:
    """OFFLOADS_OFF on ``iface``; a feature the driver does not have is left as it is."""
    subprocess.run(_in(netns, offloads_off_command(iface)), capture_output=True, check=False)


def disable_ipv6(iface: str) -> None:
    """No IPv6 neighbour discovery or router solicitations on a test port (root namespace)."""
    Path(f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6").write_text("1")


def add_veth(
    name: str,
    peer: str,
    *,
    netns: str | None = None,
    mtu: int | None = JUMBO_MTU,
    offloads: bool = False,
    ipv6: bool = False,
) -> None:
    """A veth pair, both ends up: jumbo MTU, offloads off and IPv6 off unless asked otherwise.
    If setting it up fails, the pair is deleted again before the error propagates."""
    subprocess.run(_in(netns, ["ip", "link", "add", name, "type", "veth", "peer", "name", peer]), check=True)
    try:
        for iface in (name, peer):
            if not ipv6:
                if netns is None:
                    disable_ipv6(iface)
                else:
                    subprocess.run(
                        _in(netns, ["sysctl", "-qw", f"net.ipv6.conf.{iface}.disable_ipv6=1"]), check=True
                    )
            up = ["ip", "link", "set", iface, *(["mtu", str(mtu)] if mtu else []), "up"]
            subprocess.run(_in(netns, up), check=True)
            if not offloads:
                set_offloads_off(iface, netns)
    except BaseException:
        delete_link(name, netns)
        raise


def delete_link(name: str, netns: str | None = None) -> None:
    """Delete an interface (a veth's peer goes with it); no error if it is already gone."""
    subprocess.run(_in(netns, ["ip", "link", "del", name]), capture_output=True, check=False)


def add_netns(name: str, loopback_up: bool = True) -> None:
    """A network namespace, with its loopback up."""
    subprocess.run(["ip", "netns", "add", name], check=True)
    if loopback_up:
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)


def delete_netns(name: str) -> None:
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def netns_pids(name: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def remove_netns(name: str) -> None:
    """Kill whatever still runs in the namespace, then delete it."""
    for pid in netns_pids(name):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    delete_netns(name)


def run_in_new_netns(name: str, cmd: Sequence[str]) -> int:
    """Run ``cmd`` in a new namespace ``name`` (loopback up), then remove the namespace with
    everything left running in it, also on failure or Ctrl-C. Returns the command's exit status."""
    add_netns(name)
    try:
        return subprocess.run(["ip", "netns", "exec", name, *cmd], check=False).returncode
    finally:
        remove_netns(name)
