"""Reading a connection's unsent bytes from the kernel (hosts/send_backlog.py), on real sockets
over the loopback of the namespace the test runs in: a sender whose peer does not read has bytes
it cannot send; once the peer has read everything, none."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ackwise.hosts.send_backlog import SENDING_STATES, UnsentBytesReader, match_unsent_bytes, same_address


@contextmanager
def connection(family: int, host: str) -> Iterator[tuple[socket.socket, socket.socket]]:
    """(sender, receiver): the receiver's buffer small, so that the sender's queue stays full."""
    listener = socket.socket(family, socket.SOCK_STREAM)
    sender = socket.socket(family, socket.SOCK_STREAM)
    receiver: socket.socket | None = None
    try:
        listener.bind((host, 0))
        listener.listen(1)
        sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        sender.connect(listener.getsockname()[:2])
        receiver, _ = listener.accept()
        yield sender, receiver
    finally:
        for s in (sender, receiver, listener):
            if s is not None:
                s.close()


def fill(sender: socket.socket) -> int:
    sender.setblocking(False)
    sent = 0
    try:
        while True:
            sent += sender.send(b"x" * 65536)
    except BlockingIOError:
        return sent


def drain(receiver: socket.socket, total: int) -> None:
    got = 0
    while got < total:
        got += len(receiver.recv(1 << 20))


@pytest.mark.parametrize(("family", "host"), [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_unsent_bytes_of_a_blocked_sender_then_none_once_read(family: int, host: str) -> None:
    if family == socket.AF_INET6 and not socket.has_ipv6:
        pytest.skip("no IPv6 in this namespace")
    reader = UnsentBytesReader()
    try:
        with connection(family, host) as (sender, receiver):
            local_port = sender.getsockname()[1]
            peer_addr, peer_port = sender.getpeername()[:2]
            assert reader.read(local_port, peer_addr, peer_port) == 0  # nothing written yet
            written = fill(sender)
            unsent = reader.read(local_port, peer_addr, peer_port)
            assert unsent is not None and 0 < unsent < written
            drain(receiver, written)
            deadline = time.monotonic() + 5
            while reader.read(local_port, peer_addr, peer_port) != 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert reader.read(local_port, peer_addr, peer_port) == 0
            # the receiver's side of the same connection has written nothing
            assert reader.read(peer_port, sender.getsockname()[0], local_port) == 0
            # a connection that is not there: unknown, not zero
            assert reader.read(local_port, peer_addr, peer_port + 1 if peer_port < 65535 else 1) is None
    finally:
        reader.close()


def test_an_ipv4_peer_of_a_dual_stack_socket_is_found_in_the_ipv6_dump() -> None:
    reader = UnsentBytesReader()
    try:
        listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sender = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            listener.bind(("::", 0))
            listener.listen(1)
            sender.connect(("127.0.0.1", listener.getsockname()[1]))
            accepted, _ = listener.accept()
            try:
                accepted.sendall(b"y" * 1000)  # sent at once: nothing left unsent
                # the accepted socket is AF_INET6 with the peer ::ffff:127.0.0.1; asked by its IPv4 text
                assert reader.read(accepted.getsockname()[1], "127.0.0.1", sender.getsockname()[1]) == 0
            finally:
                accepted.close()
        finally:
            sender.close()
            listener.close()
    finally:
        reader.close()


class Msg(dict):  # type: ignore[type-arg]
    def __init__(self, sport: int, dst: str, dport: int, info: dict[str, int] | None) -> None:
        super().__init__(idiag_sport=sport, idiag_dst=dst, idiag_dport=dport)
        self.info = info

    def get_attr(self, name: str) -> dict[str, int] | None:
        assert name == "INET_DIAG_INFO"
        return self.info


def test_the_match_needs_local_port_remote_address_and_remote_port() -> None:
    msgs = [
        Msg(5001, "10.0.0.1", 40000, {"tcpi_notsent_bytes": 11}),
        Msg(5001, "10.0.0.3", 40001, {"tcpi_notsent_bytes": 22}),
        Msg(5002, "10.0.0.1", 40001, {"tcpi_notsent_bytes": 33}),
        Msg(5001, "::ffff:10.0.0.1", 40001, {"tcpi_notsent_bytes": 44}),
        Msg(5003, "10.0.0.1", 40000, None),
    ]
    assert match_unsent_bytes(msgs, 5001, "10.0.0.1", 40000) == 11
    assert match_unsent_bytes(msgs, 5001, "10.0.0.1", 40001) == 44
    assert match_unsent_bytes(msgs, 5002, "10.0.0.1", 40001) == 33
    assert match_unsent_bytes(msgs, 5001, "10.0.0.2", 40000) is None
    assert match_unsent_bytes(msgs, 5003, "10.0.0.1", 40000) is None  # no tcp_info
    assert same_address("::ffff:10.0.0.1", "10.0.0.1") and not same_address("::1", "127.0.0.1")
    # TCP states 1, 4, 8, 9, 11 (established, fin-wait-1, close-wait, last-ack, closing)
    assert SENDING_STATES == 0b1011_0001_0010
