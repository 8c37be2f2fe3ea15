"""Network devices the test bed, the benchmarks, the fuzzer and the PTF runner make: veth pairs,
network namespaces, offloads and receive steering. One place, so every one of them gets the same interface.

Why offloads off: bmv2, the link emulator and the agents read raw frames from packet sockets; with
segmentation or receive offloads on, the kernel hands them super-packets, and with checksum
offload the checksums are left for a NIC that does not exist. Every frame must be a frame as a
wire would carry it.

Why receive steering (RPS) on: a veth delivers a frame into the backlog of the CPU that sent it.
When two CPUs send segments of one TCP flow back to back (the application's write on one, the
softirq that processes an ACK on the other), the two backlogs drain independently and the
segments can arrive swapped: measured on 2 cores with bulk iperf3 over one veth pair, 600-1250
out-of-order segments and 450-850 spurious retransmissions per 6.6 million segments; through the
test bed (bmv2 at 10 Mbit/s), a swapped pair in 2 of 46 transfers of 2 MB here, and on CI one
swap that the sender took for a loss (a spurious retransmission in a loss-free test).
With RPS, every frame of a flow goes to the backlog its flow hash picks, in the order sent: none.

Frames of different flows can still swap: each flow's backlog drains on its own CPU. A test port
is a wire, and a test checks the order of what several flows sent back to back (PTF: two flows'
ACKs into one egress queue, which serves them in arrival order; the fuzzer: a burst's marker
behind the burst), so the PTF runner's and the fuzzer's pairs steer every frame into one backlog
(``in_order``): measured over one pair on 2 cores, 20 000 frames of
8 flows sent back to back arrived with 2189-3562 after a later one, none with one backlog
(integration-tests/test_segment_order.py). The test bed keeps per-flow steering, which spreads its
far heavier traffic over every CPU.
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


def rps_cpus_mask(in_order: bool = False) -> str:
    """The rps_cpus mask of every CPU this process may run on: flows spread over all of them,
    each flow's frames kept to one backlog (in order). ``in_order``: the first of them only, so
    every frame, of whatever flow, keeps the order it was sent in."""
    cpus = sorted(os.sched_getaffinity(0))
    return format(sum(1 << cpu for cpu in (cpus[:1] if in_order else cpus)), "x")


def in_own_sysfs(script: str) -> str:
    """``script`` run where /sys shows the devices of the caller's network namespace. /sys shows
    those of the namespace that mounted it: a Mininet host shares the root's mounts, so its own
    interfaces are not there. The wrapper remounts sysfs in a private mount namespace (the old
    mount detached first: mount(8) refuses a second sysfs on /sys), which works in the root
    namespace, under ``ip netns exec`` and in a Mininet host alike."""
    return f"unshare -m sh -c 'umount -l /sys && mount -t sysfs sysfs /sys && {script}'"


def receive_steering_script(iface: str, in_order: bool = False) -> str:
    """Shell that sets rps_cpus (rps_cpus_mask) on every receive queue of ``iface`` and prints
    what each queue then has."""
    mask = rps_cpus_mask(in_order)
    return in_own_sysfs(
        f"for q in /sys/class/net/{iface}/queues/rx-*; do echo {mask} > $q/rps_cpus; cat $q/rps_cpus; done"
    )


class ReceiveSteeringError(RuntimeError):
    pass


def check_receive_steering(iface: str, shown: str) -> None:
    """Raise unless every receive queue of ``iface`` read back a non-zero rps_cpus (``shown``: the
    output of receive_steering_script)."""
    masks = [line.strip().replace(",", "") for line in shown.splitlines() if line.strip()]
    try:
        steered = bool(masks) and all(int(mask, 16) != 0 for mask in masks)
    except ValueError:  # an error message, not a mask
        steered = False
    if not steered:
        raise ReceiveSteeringError(
            f"{iface}: receive packet steering (rps_cpus) could not be set ({shown.strip()!r}); without it "
            "veth can swap segments of one flow (ackwise.netdev). It needs a kernel with CONFIG_RPS and root."
        )


def set_receive_steering(iface: str, netns: str | None = None, in_order: bool = False) -> None:
    """RPS on every receive queue of ``iface`` (see the module's docstring); raises if refused."""
    out = subprocess.run(
        _in(netns, ["sh", "-c", receive_steering_script(iface, in_order)]),
        capture_output=True,
        text=True,
        check=False,
    )
    check_receive_steering(iface, out.stdout + out.stderr)


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
    in_order: bool = False,
) -> None:
    """A veth pair, both ends up: jumbo MTU, offloads off and IPv6 off unless asked otherwise;
    receive steering per flow, or with ``in_order`` every frame in the order sent (a test port).
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
            set_receive_steering(iface, netns, in_order)
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
