"""Mininet hosts set up the way the experiments need them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mininet.node import Host

from ackwise.netdev import check_receive_steering, offloads_off_command, receive_steering_script
from ackwise.topologies.tcp_settings import (
    CONGESTION_CONTROLS,
    DEFAULT_CONGESTION_CONTROL,
    TcpSettings,
    TcpSettingsError,
    check_readback,
    route_initcwnd_commands,
)

__all__ = ["CONGESTION_CONTROLS", "DEFAULT_CONGESTION_CONTROL", "AckwiseHost", "TcpSettingsError"]


_SYSCTL = Path("/proc/sys/net/ipv4")
# Only the root namespace may make an algorithm outside this list the default; a host's namespace
# asking for one gets EPERM (Linux tcp_set_default_congestion_control), and keeps the root's default.
ALLOWED_CONGESTION_CONTROLS = _SYSCTL / "tcp_allowed_congestion_control"


# The offloads a record names (ethtool -k): what decides whether the wire carries MSS-sized
# segments with complete checksums.
OFFLOAD_FEATURES = (
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "tx-checksumming",
    "rx-checksumming",
)


def allow_congestion_controls(names: set[str]) -> str | None:
    """Let the hosts' namespaces use ``names``: add those missing to the root namespace's
    net.ipv4.tcp_allowed_congestion_control. Returns the list as it was if it changed (give it to
    restore_allowed_congestion_controls() at the end), None if nothing was missing. A machine whose
    default is bbr allows "reno bbr" only, and a host asking for cubic silently kept bbr."""
    before = ALLOWED_CONGESTION_CONTROLS.read_text().split()
    missing = sorted(names - set(before))
    if not missing:
        return None
    ALLOWED_CONGESTION_CONTROLS.write_text(" ".join(before + missing))
    return " ".join(before)


def restore_allowed_congestion_controls(before: str) -> None:
    ALLOWED_CONGESTION_CONTROLS.write_text(before)


class AckwiseHost(Host):
    """A host with the TCP a scenario asks for (tcp_settings.TcpSettings: congestion control,
    ECN, SACK, timestamps, initial window), read back and refused if the kernel did not take it,
    and no segmentation offloads, so that the segments on the wire are MSS-sized and their
    checksums are complete (bmv2 and the emulators see raw frames, not the kernel's super-packets)."""

    def config(
        self,
        cc: str = DEFAULT_CONGESTION_CONTROL,
        ecn: bool = True,
        sack: bool = True,
        timestamps: bool = True,
        initcwnd: int = 0,
        mtu: int | None = None,
        ip6: str | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """``ip6``: an IPv6 address with its prefix length (``fd00:ac::1/64``) for the default
        interface, which makes the host dual-stack; without it IPv6 is off in the namespace."""
        result = Host.config(self, **params)
        available = (_SYSCTL / "tcp_available_congestion_control").read_text().split()
        if cc not in CONGESTION_CONTROLS or cc not in available:
            raise ValueError(
                f"{self.name}: congestion control {cc!r} not available here ({', '.join(available)})"
            )
        self.tcp = TcpSettings(cc, ecn, sack, timestamps, initcwnd)
        self.cc, self.ecn = cc, ecn
        self.ip6 = ip6.split("/")[0] if ip6 else None
        self.cmd(
            f"{self.tcp.sysctl_command()} net.ipv4.tcp_no_metrics_save=1 {ipv6_sysctls(ip6 is not None)}"
        )
        if ip6:
            # nodad: the address is usable at once (duplicate address detection would hold it
            # back a second, and the switches do not forward its multicast anyway).
            self.cmd(f"ip -6 addr add {ip6} dev {self.defaultIntf().name} nodad")
        if initcwnd:
            for command in route_initcwnd_commands(self.routes_shown(), initcwnd):
                self.cmd(command + " 2>/dev/null")
        # Read back what the namespace has: a setting the kernel refused must not pass for one made
        # (every flow's record says which congestion control its sender ran).
        problems = check_readback(
            self.name,
            self.tcp,
            self.cmd(self.tcp.readback_command()),
            self.routes_shown(),
            ALLOWED_CONGESTION_CONTROLS.read_text().strip(),
        )
        if ip6 and self.ip6 not in self.cmd(f"ip -6 addr show dev {self.defaultIntf().name}"):
            problems.append(f"{self.name}: the IPv6 address {ip6} was refused (`ip -6 addr` in the host)")
        if problems:
            raise TcpSettingsError("; ".join(problems))
        for intf in self.intfList():
            if intf.name != "lo":
                self.cmd(" ".join(offloads_off_command(intf.name)) + " >/dev/null 2>&1")
                check_receive_steering(intf.name, self.cmd(receive_steering_script(intf.name) + " 2>&1"))
                if mtu is not None:
                    self.cmd(f"ip link set dev {intf.name} mtu {int(mtu)}")
        return result

    @property
    def ip_version(self) -> int:
        """The IP version this host's traffic runs over: 6 where it has an IPv6 address."""
        return 6 if self.ip6 else 4

    def traffic_ip(self) -> str:
        """The address the traffic tools connect to: the IPv6 one on a dual-stack host, else IP()."""
        return self.ip6 or str(self.IP())

    def routes_shown(self) -> str:
        """``ip route show`` of the main table, IPv4's and, on a dual-stack host, IPv6's."""
        text = self.cmd("ip -4 route show")
        return text + self.cmd("ip -6 route show") if self.ip6 else text

    def provenance(self) -> dict[str, Any]:
        """What this host's TCP runs with, read back from its namespace (not what was asked for):
        congestion control, ECN, SACK, timestamps, the initial windows its routes set (Linux's
        default, 10 segments, where none is set) and each interface's offloads."""
        names = ("tcp_congestion_control", "tcp_ecn", "tcp_sack", "tcp_timestamps")
        values = self.cmd("sysctl -n " + " ".join(f"net.ipv4.{n}" for n in names)).split()
        settings: dict[str, Any] = dict(zip(names, [*values, *[""] * len(names)][: len(names)], strict=True))
        windows = {}
        for key in ("initcwnd", "initrwnd"):
            found = sorted(set(re.findall(rf"\b{key} (\d+)", self.routes_shown())))
            windows[key] = ",".join(found) or "kernel default"
        offloads = {}
        mtus = {}
        for intf in self.intfList():
            if intf.name == "lo":
                continue
            mtus[intf.name] = self.cmd(f"cat /sys/class/net/{intf.name}/mtu").strip()
            shown = self.cmd(f"ethtool -k {intf.name} 2>/dev/null")
            offloads[intf.name] = {
                feature: state
                for feature, state in re.findall(r"^([a-z-]+): (on|off)", shown, re.MULTILINE)
                if feature in OFFLOAD_FEATURES
            }
        addresses = {"ip_version": self.ip_version}
        if self.ip6:  # read back: the address as the namespace has it
            addresses["ipv6_addresses"] = re.findall(r"inet6 (\S+) scope global", self.cmd("ip -6 addr show"))
        return {**settings, **windows, "offloads": offloads, "mtu": mtus, **addresses}

    def describe(self) -> dict[str, Any]:
        ip6 = {"ip6": self.ip6} if self.ip6 else {}
        return {"node": self.name, "ip": self.IP(), **ip6, "mac": self.MAC(), **self.tcp.to_dict()}


def ipv6_sysctls(on: bool) -> str:
    """The namespace's IPv6 settings: off altogether (IPv4-only hosts), or on with nothing that
    talks on its own (no router solicitations or advertisements taken, no duplicate address
    detection): the switches forward by MAC address, unicast only, and the neighbours are static."""
    if not on:
        return "net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null"
    settings = ("disable_ipv6=0", "accept_ra=0", "accept_dad=0", "router_solicitations=0")
    return (
        " ".join(f"net.ipv6.conf.{scope}.{s}" for scope in ("all", "default") for s in settings)
        + " 2>/dev/null"
    )
