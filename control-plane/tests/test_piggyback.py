"""Shang and Wills' piggyback experiment: the two programs on the loopback, and the result."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from ackwise.experiments.measure.piggyback import summarize

MODULE = [sys.executable, "-m", "ackwise.experiments.measure.piggyback"]
SIZE = 300_000


def free_port_pair() -> int:
    """A port whose successor is free too (2con's upload goes to port + 1)."""
    for _ in range(50):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            try:
                b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no two free ports in a row")


def run(mode: str, write_bytes: int = 0) -> tuple[dict, dict]:
    port = free_port_pair()
    common = ["--mode", mode, "--size", str(SIZE), "--seed", "3", "--timeout", "30"]
    client = subprocess.Popen(
        [*MODULE, "client", "--port", str(port), "--write-bytes", str(write_bytes), *common],
        stdout=subprocess.PIPE,
        text=True,
    )
    server = subprocess.run(
        [*MODULE, "server", "--host", "127.0.0.1", "--port", str(port), *common],
        capture_output=True,
        text=True,
        timeout=40,
    )
    client_report = json.loads(client.communicate(timeout=40)[0])
    return json.loads(server.stdout), client_report


@pytest.mark.parametrize("mode", ["1con", "2con"])
def test_both_directions_carry_every_byte(mode: str) -> None:
    server, client = run(mode)
    result = summarize(server, client, SIZE)
    assert result.byte_exact, result.problems
    assert result.down_bytes == SIZE and result.up_bytes == SIZE and result.up_total_bytes == SIZE
    assert result.down_s > 0 and result.up_s > 0


@pytest.mark.parametrize("write_bytes", [0, 100, 1500])
def test_piggyback_writes_back_per_read_and_counts_every_byte(write_bytes: int) -> None:
    server, client = run("piggyback", write_bytes)
    result = summarize(server, client, SIZE)
    assert result.byte_exact, result.problems
    assert result.down_bytes == SIZE
    # at most write_bytes per read, and only what the send buffer took
    assert result.up_total_bytes <= client["reads"] * write_bytes
    assert result.up_bytes <= result.up_total_bytes
    if write_bytes == 0:
        assert result.up_total_bytes == 0 and client["writes"] == 0
    else:
        assert client["writes"] > 0


BASE_SERVER = {
    "mode": "piggyback",
    "started_at": 100.0,
    "down_sent_sha256": "d",
    "up_received_bytes": 3000,
    "up_received_sha256": "u",
    "up_timeline": [[100.5, 1000], [101.0, 2000], [102.5, 3000]],
}
BASE_CLIENT = {
    "mode": "piggyback",
    "write_bytes": 100,
    "down_received_bytes": SIZE,
    "down_received_sha256": "d",
    "down_received_last_at": 102.0,
    "up_sent_bytes": 3000,
    "up_sent_sha256": "u",
}


def test_piggyback_upload_counts_what_arrived_during_the_download() -> None:
    result = summarize(BASE_SERVER, BASE_CLIENT, SIZE)
    assert result.byte_exact and result.down_s == 2.0
    assert result.up_bytes == 2000  # the last 1000 bytes came after the download's last byte
    assert result.up_bytes_per_s == 1000.0 and result.down_bytes_per_s == SIZE / 2


@pytest.mark.parametrize(
    ("server_change", "client_change", "problem"),
    [
        ({}, {"down_received_bytes": SIZE - 1}, "download: 299999 of 300000 bytes"),
        ({"down_sent_sha256": "x"}, {}, "download: SHA-256 differs"),
        ({"up_received_bytes": 2999}, {}, "upload: 2999 bytes received of 3000 sent"),
        ({"up_received_sha256": "x"}, {}, "upload: SHA-256 differs"),
        ({"error": "ConnectionResetError: reset"}, {}, "server: ConnectionResetError"),
    ],
)
def test_a_byte_out_of_place_fails_the_run(server_change: dict, client_change: dict, problem: str) -> None:
    result = summarize(BASE_SERVER | server_change, BASE_CLIENT | client_change, SIZE)
    assert not result.byte_exact
    assert any(problem in p for p in result.problems), result.problems
