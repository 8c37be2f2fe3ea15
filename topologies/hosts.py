"""Mininet hosts set up the way the experiments need them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mininet.node import Host

CONGESTION_CONTROLS = ("reno", "cubic", "bbr")


class AckwiseHost(Host):
    """ECN on or off, a congestion control per host, and no segmentation offloads, so that the
    segments on the wire are MSS-sized and their checksums are complete (bmv2 and the emulators see
    raw frames, not the kernel's super-packets)."""

    def config(self, cc: str = "cubic", ecn: bool = True, **params: Any) -> dict[str, Any]:
        result = Host.config(self, **params)
        available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        if cc not in CONGESTION_CONTROLS or cc not in available:
            raise ValueError(
                f"{self.name}: congestion control {cc!r} not available here ({', '.join(available)})"
            )
        self.cc, self.ecn = cc, ecn
        self.cmd(
            f"sysctl -qw net.ipv4.tcp_ecn={1 if ecn else 0} net.ipv4.tcp_congestion_control={cc} "
            "net.ipv4.tcp_no_metrics_save=1 net.ipv6.conf.all.disable_ipv6=1 "
            "net.ipv6.conf.default.disable_ipv6=1"
        )
        for intf in self.intfList():
            if intf.name != "lo":
                self.cmd(f"ethtool -K {intf.name} tso off gso off gro off tx off rx off >/dev/null 2>&1")
        return result

    def describe(self) -> dict[str, Any]:
        return {"node": self.name, "ip": self.IP(), "mac": self.MAC(), "cc": self.cc, "ecn": self.ecn}
