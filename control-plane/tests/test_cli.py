"""CLI behaviour that needs no switch: argument handling and the unreachable-switch error."""

import socket
from pathlib import Path

import pytest

from ackwise.cli import app as cli


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_parse_assignments() -> None:
    assert cli.parse_assignments(["1", "2"]) == ["1", "2"]
    assert cli.parse_assignments(["port=1", "dst_mac=00:00:00:00:00:01"]) == {
        "port": "1",
        "dst_mac": "00:00:00:00:00:01",
    }
    with pytest.raises(cli.UsageError, match="not a mix"):
        cli.parse_assignments(["port=1", "2"])


def test_split_arrow() -> None:
    assert cli.split_arrow(["10.0.1.0/24", "=>", "1", "2"]) == (["10.0.1.0/24"], ["1", "2"])
    assert cli.split_arrow(["k"]) == (["k"], [])


def commands(tmp_path: Path) -> list[list[str]]:
    program = tmp_path / "p.json"
    program.write_text("{}")
    config = tmp_path / "c.yaml"
    config.write_text("ports:\n  - {port: 1, rate_pps: 10}\n")
    return [
        ["switch", "stop"],
        ["switch", "status"],
        ["load", str(program)],
        ["table", "add", "ipv4_lpm", "route", "10.0.1.0/24", "-p", "1", "0", "0"],
        ["table", "modify", "ipv4_lpm", "0", "route", "1", "0", "0"],
        ["table", "del", "ipv4_lpm", "--handle", "0"],
        ["table", "default", "t", "a"],
        ["table", "clear", "ipv4_lpm"],
        ["table", "dump", "ipv4_lpm"],
        ["table", "list"],
        ["register", "read", "r"],
        ["register", "write", "r", "0", "1"],
        ["register", "reset", "r"],
        ["counter", "read", "c"],
        ["counter", "reset", "c"],
        ["port", "rate", "1", "100"],
        ["port", "depth", "all", "64"],
        ["mirror", "add", "1", "2"],
        ["mirror", "del", "1"],
        ["mirror", "show", "1"],
        ["apply", str(config)],
    ]


def test_every_command_names_the_port_when_no_switch_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACKWISE_STATE_DIR", str(tmp_path / "state"))
    port = free_port()
    for argv in commands(tmp_path):
        assert cli.main(["--thrift-port", str(port), *argv]) == cli.EXIT_UNREACHABLE, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, (argv, err)
        assert f"localhost:{port}" in err, (argv, err)


def test_port_option_after_the_subcommand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACKWISE_STATE_DIR", str(tmp_path / "state"))
    port = free_port()
    assert cli.main(["table", "list", "--thrift-port", str(port)]) == cli.EXIT_UNREACHABLE
    assert f"localhost:{port}" in capsys.readouterr().err


def test_bad_interface_spec_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "p.json"
    program.write_text("{}")
    assert cli.main(["switch", "start", str(program), "-i", "veth0"]) == cli.EXIT_USAGE
    assert "PORT@IFACE" in capsys.readouterr().err
