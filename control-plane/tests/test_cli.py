"""CLI behaviour that needs no switch: argument handling and the unreachable-switch error."""

import socket
from pathlib import Path

import pytest

from ackwise.cli import app as cli
from ackwise.cli.args import EXIT_UNREACHABLE, EXIT_USAGE
from ackwise.cli.common import UsageError, parse_assignments, split_arrow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_parse_assignments() -> None:
    assert parse_assignments(["1", "2"]) == ["1", "2"]
    assert parse_assignments(["port=1", "dst_mac=00:00:00:00:00:01"]) == {
        "port": "1",
        "dst_mac": "00:00:00:00:00:01",
    }
    with pytest.raises(UsageError, match="not a mix"):
        parse_assignments(["port=1", "2"])


def test_split_arrow() -> None:
    assert split_arrow(["10.0.1.0/24", "=>", "1", "2"]) == (["10.0.1.0/24"], ["1", "2"])
    assert split_arrow(["k"]) == (["k"], [])


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
        assert cli.main(["--thrift-port", str(port), *argv]) == EXIT_UNREACHABLE, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, (argv, err)
        assert f"localhost:{port}" in err, (argv, err)


def test_port_option_after_the_subcommand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACKWISE_STATE_DIR", str(tmp_path / "state"))
    port = free_port()
    assert cli.main(["table", "list", "--thrift-port", str(port)]) == EXIT_UNREACHABLE
    assert f"localhost:{port}" in capsys.readouterr().err


def test_bad_interface_spec_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "p.json"
    program.write_text("{}")
    assert cli.main(["switch", "start", str(program), "-i", "veth0"]) == EXIT_USAGE
    assert "PORT@IFACE" in capsys.readouterr().err


def test_switch_options_only_where_a_switch_is_talked_to(capsys: pytest.CaptureFixture[str]) -> None:
    """`ackwise experiment report --help` once offered --thrift-port and --thrift-host, which it
    never used; now only commands that talk to a switch take them, and giving them elsewhere (also
    before the command) is a usage error naming the command."""
    for argv, has_switch in (
        (["experiment", "report", "--help"], False),
        (["topo", "up", "--help"], False),
        (["controller", "check", "--help"], False),
        (["switch", "status", "--help"], True),
        (["table", "dump", "--help"], True),
        (["watch", "--help"], True),
    ):
        assert cli.main(argv) == 0
        text = capsys.readouterr().out
        assert ("--thrift-port" in text) == has_switch, argv
        assert "--json" in text, argv
    assert cli.main(["--thrift-port", "9191", "experiment", "list"]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err == "ackwise: --thrift-port means nothing to 'experiment list': it talks to no switch"
