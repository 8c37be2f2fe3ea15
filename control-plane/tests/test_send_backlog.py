"""Reading a connection's send state from the kernel (hosts/send_backlog.py), on real sockets
over the loopback of the namespace the test runs in: a sender whose peer does not read has bytes
it cannot send; once the peer has read everything, none."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from ackwise.hosts.send_backlog import (
    SENDING_STATES,
    SendState,
    SendStateReader,
    match_send_state,
    same_address,
)


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
    reader = SendStateReader()
    try:
        with connection(family, host) as (sender, receiver):
            local_port = sender.getsockname()[1]
            peer_addr, peer_port = sender.getpeername()[:2]

            def unsent() -> int | None:
                state = reader.read(local_port, peer_addr, peer_port)
                return None if state is None else state.unsent_bytes

            assert unsent() == 0  # nothing written yet
            written = fill(sender)
            blocked = reader.read(local_port, peer_addr, peer_port)
            assert blocked is not None and 0 < blocked.unsent_bytes < written
            # the peer's receive window, not the congestion window, holds these bytes back (the
            # peer reads nothing): not window-limited as the rule reads it, which counts only the
            # congestion window (the one the DSL client's uplink fills)
            assert blocked.in_flight_segments < blocked.cwnd_segments and not blocked.window_limited
            # but it is backlogged: a 1 MB send buffer holds far more than a segment unsent, and
            # the sending MSS is read (loopback's MTU gives more than Ethernet's 1448)
            assert blocked.snd_mss_bytes >= 1448 and blocked.backlogged
            drain(receiver, written)
            deadline = time.monotonic() + 5
            while unsent() != 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert unsent() == 0
            # the receiver's side of the same connection has written nothing
            mirror = reader.read(peer_port, sender.getsockname()[0], local_port)
            assert mirror is not None and mirror.unsent_bytes == 0 and not mirror.window_limited
            assert not mirror.backlogged
            # a connection that is not there: unknown, not zero
            assert reader.read(local_port, peer_addr, peer_port + 1 if peer_port < 65535 else 1) is None
    finally:
        reader.close()


def test_an_ipv4_peer_of_a_dual_stack_socket_is_found_in_the_ipv6_dump() -> None:
    reader = SendStateReader()
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
                state = reader.read(accepted.getsockname()[1], "127.0.0.1", sender.getsockname()[1])
                assert state is not None and state.unsent_bytes == 0
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


def info(unsent: int) -> dict[str, int]:
    return {"tcpi_notsent_bytes": unsent, "tcpi_unacked": 3, "tcpi_snd_cwnd": 10, "tcpi_snd_mss": 1448}


def test_the_match_needs_local_port_remote_address_and_remote_port() -> None:
    msgs = [
        Msg(5001, "10.0.0.1", 40000, info(11)),
        Msg(5001, "10.0.0.3", 40001, info(22)),
        Msg(5002, "10.0.0.1", 40001, info(33)),
        Msg(5001, "::ffff:10.0.0.1", 40001, info(44)),
        Msg(5003, "10.0.0.1", 40000, None),
    ]

    def unsent(*args: object) -> int | None:
        state = match_send_state(msgs, *args)  # type: ignore[arg-type]
        return None if state is None else state.unsent_bytes

    assert match_send_state(msgs, 5001, "10.0.0.1", 40000) == SendState(11, 3, 10, 1448)
    assert unsent(5001, "10.0.0.1", 40001) == 44
    assert unsent(5002, "10.0.0.1", 40001) == 33
    assert unsent(5001, "10.0.0.2", 40000) is None
    assert unsent(5003, "10.0.0.1", 40000) is None  # no tcp_info
    assert same_address("::ffff:10.0.0.1", "10.0.0.1") and not same_address("::1", "127.0.0.1")
    # TCP states 1, 4, 8, 9, 11 (established, fin-wait-1, close-wait, last-ack, closing)
    assert SENDING_STATES == 0b1011_0001_0010
