"""With the switch killed, every CLI command fails with one line naming the Thrift port."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from conftest import Netns

from ackwise.netdev import add_veth

PORT = "9091"


def test_every_command_fails_naming_the_port(netns: Netns, cli_env: dict[str, str], tmp_path: Path) -> None:
    add_veth("sw-p1", "host1", netns=netns.name, mtu=None, ipv6=True, offloads=True)
    started = netns.run(
        "ackwise",
        "--json",
        "--thrift-port",
        PORT,
        "switch",
        "start",
        "ack_switch",
        "-i",
        "1@sw-p1",
        env=cli_env,
    )
    pid = json.loads(started.stdout)["pid"]
    netns.run(
        "ackwise",
        "--thrift-port",
        PORT,
        "table",
        "add",
        "ipv4_lpm",
        "route",
        "10.0.1.0/24",
        "=>",
        "1",
        "0",
        "0",
        env=cli_env,
    )
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.05)

    config = tmp_path / "switch.yaml"
    config.write_text("ports:\n  - {port: 1, rate_pps: 100}\n")
    commands = [
        ["switch", "status"],
        ["switch", "stop"],
        ["load", "ack_switch"],
        ["table", "add", "ipv4_lpm", "route", "10.0.2.0/24", "-p", "2", "0", "0"],
        ["table", "modify", "ipv4_lpm", "0", "route", "1", "0", "0"],
        ["table", "del", "ipv4_lpm", "--handle", "0"],
        ["table", "del", "ipv4_lpm", "10.0.1.0/24"],
        ["table", "default", "l2_exact", "NoAction"],
        ["table", "clear", "ipv4_lpm"],
        ["table", "dump", "ipv4_lpm"],
        ["table", "list"],
        ["register", "read", "r"],
        ["register", "write", "r", "0", "1"],
        ["register", "reset", "r"],
        ["counter", "read", "parser.malformed"],
        ["counter", "reset", "parser.malformed"],
        ["port", "rate", "1", "100"],
        ["port", "depth", "1", "64"],
        ["mirror", "add", "1", "2"],
        ["mirror", "del", "1"],
        ["mirror", "show", "1"],
        ["apply", str(config)],
    ]
    for argv in commands:
        result = netns.run("ackwise", "--thrift-port", PORT, *argv, env=cli_env, check=False)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 3, (argv, result.returncode, result.stderr)
        assert len(lines) == 1 and PORT in lines[0], (argv, result.stderr)
        assert result.stdout == "", (argv, result.stdout)
    # `switch stop` found the switch dead and removed what it left (regression: its notification
    # socket stayed in /tmp).
    assert not Path(f"/tmp/ackwise-bmv2-{PORT}-notifications.ipc").exists()
    assert not Path(cli_env["ACKWISE_STATE_DIR"]).exists(), "the state directory stays behind"
