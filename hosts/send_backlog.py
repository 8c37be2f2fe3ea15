"""The host's own send state on one of its TCP connections, read from the kernel: whether it has
bytes to send that its congestion window holds back, or a backlog beyond what Nagle's algorithm
keeps back.

``tcpi_notsent_bytes`` (struct tcp_info, Linux 4.6+) counts what the application has written and
the kernel has not sent yet. Unsent bytes alone do not say why. Shang and Wills' client writing
100 bytes per read had unsent bytes at all 73 pure ACKs the hold decided on in one run, while a
rule that also asks for a full window found it full at none of them in two runs: small writes kept
back while earlier data is unacknowledged, most likely by Nagle's algorithm, not by the network.
The window says the data waits for the network: the segments in flight (``tcpi_unacked``) fill
the congestion window (``tcpi_snd_cwnd``). That test reads one instant: the window opens for a
moment each time an ACK arrives, and the DSL client writing 700 bytes per read, its 64 kB send
buffer full, still had 103 of its pure ACKs found "not window-limited" a run
(docs/piggyback-reading). A backlog is steadier: a full segment's worth of unsent bytes
(``tcpi_snd_mss``) is more than Nagle's algorithm keeps back (less than a segment), so the data
waits for a window (congestion or the peer's), whatever the instant.
The agent runs in the receiving host's network namespace without owning the application's socket,
so it reads them as ``ss -i`` does, through sock_diag (NETLINK_SOCK_DIAG, INET_DIAG_INFO), with
pyroute2's DiagSocket. One reading dumps the namespace's connected TCP sockets of one address
family: 0.37 ms with two sockets here. The host's own state only: nothing of the sender's is read.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any

# A connection that can still send: established, or closing on the peer's side (CLOSE_WAIT) or on
# ours with data still queued (FIN_WAIT1, CLOSING, LAST_ACK). Bit k is TCP state k
# (include/net/tcp_states.h).
SENDING_STATES = sum(1 << state for state in (1, 4, 8, 9, 11))
INET_DIAG_INFO = 2  # the tcp_info extension (include/uapi/linux/inet_diag.h)


def same_address(a: str, b: str) -> bool:
    """Two textual addresses, the IPv6 form of an IPv4 address (::ffff:a.b.c.d, a dual-stack
    listener's view of an IPv4 peer) equal to the IPv4 one."""
    x, y = ipaddress.ip_address(a), ipaddress.ip_address(b)
    x = x.ipv4_mapped or x if isinstance(x, ipaddress.IPv6Address) else x
    y = y.ipv4_mapped or y if isinstance(y, ipaddress.IPv6Address) else y
    return x == y


@dataclass(frozen=True)
class SendState:
    """What the host's own side of a connection has to send and what holds it back."""

    unsent_bytes: int  # written by the application, not sent yet
    in_flight_segments: int  # sent, not yet acknowledged
    cwnd_segments: int
    snd_mss_bytes: int  # the connection's sending MSS

    @property
    def window_limited(self) -> bool:
        """Bytes wait for the congestion window: the next data segment leaves when an ACK from the
        peer opens it, not when the application writes."""
        return self.unsent_bytes > 0 and self.in_flight_segments >= self.cwnd_segments

    @property
    def backlogged(self) -> bool:
        """At least a full segment written and not sent: more than Nagle's algorithm keeps back,
        so the reverse data is network-limited, not application-limited."""
        return self.unsent_bytes >= self.snd_mss_bytes


def match_send_state(sockets: Any, local_port: int, remote_addr: str, remote_port: int) -> SendState | None:
    """The send state of the connection (local_port, remote_addr:remote_port) among sock_diag
    answers (pyroute2 messages: idiag_sport, idiag_dst, idiag_dport, INET_DIAG_INFO), or None if
    it is not there (closed, or not yet accepted) or has no tcp_info."""
    for msg in sockets:
        if (
            msg["idiag_sport"] == local_port
            and msg["idiag_dport"] == remote_port
            and same_address(msg["idiag_dst"], remote_addr)
        ):
            info = msg.get_attr("INET_DIAG_INFO")
            if info is None:
                return None
            return SendState(
                int(info["tcpi_notsent_bytes"]),
                int(info["tcpi_unacked"]),
                int(info["tcpi_snd_cwnd"]),
                int(info["tcpi_snd_mss"]),
            )
    return None


class SendStateReader:
    """Reads a connection's send state in the caller's network namespace (open it there)."""

    def __init__(self) -> None:
        try:
            from pyroute2 import DiagSocket
        except ImportError as exc:
            raise ValueError(
                "the piggyback hold's release_if_blocked and release_if_backlogged read the connection "
                "through pyroute2, which is not installed: run `make deps`"
            ) from exc
        self.sock = DiagSocket()
        self.sock.bind()
        self.readings = 0

    def read(self, local_port: int, remote_addr: str, remote_port: int) -> SendState | None:
        self.readings += 1
        families = [socket.AF_INET6] if ":" in remote_addr else [socket.AF_INET, socket.AF_INET6]
        for family in families:  # an IPv4 peer of a dual-stack listener is in AF_INET6's dump
            found = match_send_state(
                self.sock.get_sock_stats(
                    family=family, states=SENDING_STATES, extensions=1 << (INET_DIAG_INFO - 1)
                ),
                local_port,
                remote_addr,
                remote_port,
            )
            if found is not None:
                return found
        return None

    def close(self) -> None:
        self.sock.close()
