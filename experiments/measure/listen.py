"""Where the host-side traffic tools listen, by the IP version the test bed's traffic runs over
(its ``ip_version``): one place for each version's address family and wildcard address."""

from __future__ import annotations

import argparse
import socket

IP_VERSIONS = (4, 6)
_FAMILY = {4: socket.AF_INET, 6: socket.AF_INET6}
_WILDCARD = {4: "0.0.0.0", 6: "::"}


def listen(port: int, ip_version: int = 4) -> socket.socket:
    """A listening TCP socket on every address of ``ip_version`` (IPv6's takes IPv6 only)."""
    if ip_version not in IP_VERSIONS:
        raise ValueError(f"ip_version={ip_version}: give 4 or 6")
    return socket.create_server((_WILDCARD[ip_version], port), family=_FAMILY[ip_version])


def add_ip_version_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ip-version",
        type=int,
        choices=IP_VERSIONS,
        default=4,
        help="listen on IPv4 (default) or IPv6 (a dual-stack test bed's ip_version=6)",
    )
