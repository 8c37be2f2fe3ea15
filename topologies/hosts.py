"""Mininet hosts set up the way the experiments need them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mininet.node import Host

from ackwise.netdev import offloads_off_command
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
        **params: Any,
    ) -> dict[str, Any]:
        result = Host.config(self, **params)
        available = (_SYSCTL / "tcp_available_congestion_control").read_text().split()
        if cc not in CONGESTION_CONTROLS or cc not in available:
            raise ValueError(
                f"{self.name}: congestion control {cc!r} not available here ({', '.join(available)})"
            )
        self.tcp = TcpSettings(cc, ecn, sack, timestamps, initcwnd)
        self.cc, self.ecn = cc, ecn
        self.cmd(
            f"{self.tcp.sysctl_command()} net.ipv4.tcp_no_metrics_save=1 "
            "net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null"
        )
        if initcwnd:
            for command in route_initcwnd_commands(self.cmd("ip -4 route show"), initcwnd):
                self.cmd(command + " 2>/dev/null")
        # Read back what the namespace has: a setting the kernel refused must not pass for one made
        # (every flow's record says which congestion control its sender ran).
        problems = check_readback(
            self.name,
            self.tcp,
            self.cmd(self.tcp.readback_command()),
            self.cmd("ip -4 route show"),
            ALLOWED_CONGESTION_CONTROLS.read_text().strip(),
        )
        if problems:
            raise TcpSettingsError("; ".join(problems))
        for intf in self.intfList():
            if intf.name != "lo":
                self.cmd(" ".join(offloads_off_command(intf.name)) + " >/dev/null 2>&1")
                if mtu is not None:
                    self.cmd(f"ip link set dev {intf.name} mtu {int(mtu)}")
        return result

    def provenance(self) -> dict[str, Any]:
        """What this host's TCP runs with, read back from its namespace (not what was asked for):
        congestion control, ECN, SACK, timestamps, the initial windows its routes set (Linux's
        default, 10 segments, where none is set) and each interface's offloads."""
        names = ("tcp_congestion_control", "tcp_ecn", "tcp_sack", "tcp_timestamps")
        values = self.cmd("sysctl -n " + " ".join(f"net.ipv4.{n}" for n in names)).split()
        settings: dict[str, Any] = dict(zip(names, [*values, *[""] * len(names)][: len(names)], strict=True))
        windows = {}
        for key in ("initcwnd", "initrwnd"):
            found = sorted(set(re.findall(rf"\b{key} (\d+)", self.cmd("ip route show"))))
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
        return {**settings, **windows, "offloads": offloads, "mtu": mtus}

    def describe(self) -> dict[str, Any]:
        return {"node": self.name, "ip": self.IP(), "mac": self.MAC(), **self.tcp.to_dict()}
