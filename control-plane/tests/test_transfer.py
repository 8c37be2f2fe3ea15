"""The fixed-size transfer tool, on the loopback: byte-exact when it is, a failure when it is not."""

import json
import socket
import subprocess
import sys
import threading

MODULE = [sys.executable, "-m", "ackwise.experiments.measure.transfer"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_transfer_is_byte_exact_on_loopback() -> None:
    port = free_port()
    recv = subprocess.Popen(
        [*MODULE, "recv", "--port", str(port), "--timeout", "20"], stdout=subprocess.PIPE, text=True
    )
    send = subprocess.run(
        [*MODULE, "send", "--host", "127.0.0.1", "--port", str(port), "--size", "300000", "--seed", "7"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    received = json.loads(recv.communicate(timeout=30)[0])
    sent = json.loads(send.stdout)
    assert send.returncode == 0
    assert sent["byte_exact"] is True
    assert received["bytes"] == 300000 and received["sha256"] == sent["sha256"]


def test_a_corrupted_transfer_fails() -> None:
    port = free_port()
    server = socket.create_server(("127.0.0.1", port))

    def corrupt_receiver() -> None:
        conn, _ = server.accept()
        with conn:
            total = 0
            while chunk := conn.recv(65536):
                total += len(chunk)
            conn.sendall((json.dumps({"bytes": total, "sha256": "0" * 64}) + "\n").encode())

    thread = threading.Thread(target=corrupt_receiver)
    thread.start()
    send = subprocess.run(
        [*MODULE, "send", "--host", "127.0.0.1", "--port", str(port), "--size", "1000"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    thread.join()
    server.close()
    assert send.returncode == 1
    assert json.loads(send.stdout)["byte_exact"] is False
