"""Every ackwise command given bad values: exit 2 and one line on stderr that names the value as
the user typed it and what would be accepted; never a traceback or a Python repr.

These rows need no switch: the value is refused while parsing, before any switch is contacted
(the Thrift port given is one nothing listens on, so a command that tried to connect would exit 3
instead). Rows that need a running program's names are in integration-tests/test_cli_bad_names.py.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest

from ackwise.cli import app as cli
from ackwise.cli import table
from ackwise.cli.args import EXIT_FAILED, EXIT_USAGE
from ackwise.controller.config import EXAMPLE

NOT_UTF8 = os.fsdecode(b"\xff\xfe")  # what Python makes of argv bytes that are not UTF-8


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def files(tmp: Path) -> dict[str, str]:
    bad_yaml = tmp / "bad.yaml"
    bad_yaml.write_text("tables: [\n")
    unknown = tmp / "unknown.yaml"
    unknown.write_text("tabels: []\n")
    not_text = tmp / "binary.yaml"
    not_text.write_bytes(b"\xff\xfe\x00tables")
    missing_field = tmp / "missing.yaml"
    missing_field.write_text("tables:\n  - {table: forwarding.ipv4_lpm}\n")
    bad_ap = tmp / "ap.yaml"
    bad_ap.write_text("ap: {uplink: 1}\n")
    controller = tmp / "controller.yaml"
    controller.write_text("rules: []\n")
    return {
        "bad_yaml": str(bad_yaml),
        "unknown": str(unknown),
        "binary": str(not_text),
        "missing": str(missing_field),
        "bad_ap": str(bad_ap),
        "controller": str(controller),
        "missing_file": str(tmp / "nope.yaml"),
        "example": str(EXAMPLE),
    }


# (argv, expected exit code, regex the single stderr line must match)
ROWS: list[tuple[list[str], int, str]] = [
    # global options
    (["--thrift-port", "0", "table", "list"], 2, r"--thrift-port 0: must be 1\.\.65535"),
    (["--thrift-port", "70000", "table", "list"], 2, r"--thrift-port 70000: must be 1\.\.65535"),
    (["--thrift-port", "abc", "table", "list"], 2, r"--thrift-port 'abc' is not a whole number"),
    (["nosuchcommand"], 2, r"COMMAND 'nosuchcommand' \(choose from"),
    ([], 2, r"the following arguments are required: COMMAND"),
    (["table"], 2, r"required: SUBCOMMAND"),
    # switch start
    (["switch", "start", "ack_switch", "-i", "x@veth"], 2, r"interface 'x@veth': write PORT@IFACE"),
    (["switch", "start", "ack_switch", "-i", "600@veth1"], 2, r"port 600: give 0\.\.511"),
    (["switch", "start", "ack_switch", "-i", "1@a", "-i", "1@b"], 2, r"port 1 is given twice"),
    (["switch", "start", "ack_switch", "-i", f"1@{NOT_UTF8}"], 2, r"'\\xff\\xfe' is not an interface name"),
    (
        ["switch", "start", "ack_switch", "-i", "1@a", "--cpu-port", "-1"],
        2,
        r"--cpu-port -1: must be 0\.\.511",
    ),
    (
        ["switch", "start", "ack_switch", "-i", "1@a", "--cpu-port", "1"],
        2,
        r"--cpu-port 1 is also a data port",
    ),
    (
        ["switch", "start", "ack_switch", "-i", "1@a", "--device-id", "-5"],
        2,
        r"--device-id -5: must be 0\.\.",
    ),
    (
        ["switch", "start", "no_such_program", "-i", "1@a"],
        2,
        r"no compiled program 'no_such_program'.*make build",
    ),
    (["load", "no_such_program"], 2, r"no compiled program 'no_such_program'"),
    # tables
    (["table", "add", "t", "a", "--priority", "-1"], 2, r"--priority -1: must be 0\.\.2147483647"),
    (["table", "add", "t", "a", "--priority", "9" * 30], 2, r"--priority 9{30}: must be 0\.\."),
    (["table", "add", "t", "a", "k", "=>", "1", "-p", "2"], 2, r"either after -p or after '=>'"),
    (
        ["table", "add", "t", "a", "k", "-p", "port=1", "2"],
        2,
        r"all values positionally or all as name=value",
    ),
    (["table", "modify", "t", "-1", "a"], 2, r"handle -1: must be 0\.\.2147483647"),
    (["table", "modify", "t", "9" * 25, "a"], 2, r"handle 9{25}: must be 0\.\."),
    (["table", "modify", "t", "abc", "a"], 2, r"handle 'abc' is not a whole number"),
    (["table", "del", "t"], 2, r"give the entry's --handle or its key"),
    (["table", "del", "t", "10.0.0.0/8", "--handle", "3"], 2, r"either --handle or a key, not both"),
    (["table", "del", "t", "--handle", "-3"], 2, r"--handle -3: must be 0\.\."),
    # registers and counters
    (["register", "read", "r", "-1"], 2, r"index -1: must be 0\.\."),
    (["register", "read", "r", "x"], 2, r"index 'x' is not a whole number"),
    (["register", "write", "r", "0", "abc"], 2, r"value 'abc' is not a whole number"),
    (["register", "write", "r", "0", "-5"], 2, r"value -5: registers hold non-negative numbers"),
    (["counter", "read", "c", "-1"], 2, r"index -1: must be 0\.\."),
    # ports
    (["port", "rate", "1", "-5"], 2, r"rate_pps -5: must be 0\.\..* packets/s"),
    (["port", "rate", "600", "100"], 2, r"port 600: give a port number 0\.\.511 or 'all'"),
    (["port", "rate", NOT_UTF8, "100"], 2, r"port '\\xff\\xfe': give a port number"),
    (["port", "depth", "1", "0"], 2, r"depth_pkts 0: must be 1\.\."),
    (["port", "ecn", "all", "5"], 2, r"one port at a time"),
    (["port", "ecn", "1", "1", "2"], 2, r"give K, or K_MIN K_MAX P_MAX_PERCENT, or 'off'"),
    (["port", "ecn", "1", "abc"], 2, r"K 'abc' is not a whole number"),
    (["port", "ecn", "1", "99999999"], 2, r"K=99999999: a queue depth in packets, 0\.\.524287"),
    (["port", "ecn", "1", "10", "5", "50"], 2, r"k_min=10 k_max=5: give 0 <= k_min < k_max"),
    (["port", "ecn", "1", "5", "10", "101"], 2, r"p_max=101: a percentage, 0\.\.100"),
    # mirroring
    (["mirror", "add", "-1", "2"], 2, r"session -1: must be 0\.\.32767"),
    (["mirror", "add", "40000", "2"], 2, r"session 40000: must be 0\.\.32767"),
    (["mirror", "add", "1", "600"], 2, r"port 600: must be 0\.\.511"),
    (["mirror", "del", "x"], 2, r"session 'x' is not a whole number"),
    (["mirror", "show", "99999"], 2, r"session 99999: must be 0\.\.32767"),
    # apply: the file is checked before any switch is contacted
    (["apply", "{missing_file}"], 2, r"nope\.yaml: cannot read it \(No such file or directory\)"),
    (["apply", "{bad_yaml}"], 2, r"bad\.yaml: not valid YAML"),
    (["apply", "{unknown}"], 2, r"unknown section\(s\) tabels; known:"),
    (["apply", "{binary}"], 2, r"binary\.yaml: not UTF-8 text"),
    (["apply", "{missing}"], 2, r"tables item 1: missing action"),
    (["apply", "{bad_ap}"], 2, r"'ap' must be a mapping of uplink"),
    # policies
    (["policy", "set", "default", "every_d", "d=0"], 2, r"d=0: must be an integer in 1\.\.255"),
    (["policy", "set", "default", "every_d", "d=" + "9" * 25], 2, r"d=9{25}: must be an integer in 1\.\.255"),
    (["policy", "set", "default", "every_d", "mss=-1"], 2, r"mss=-1: must be an integer in 1\.\.65535"),
    (["policy", "set", "default", "every_d", "d=abc"], 2, r"d='abc': not an integer"),
    (["policy", "set", "default", "every_d", "x=1"], 2, r"every_d has no parameter 'x' \(it takes: mss, d"),
    (["policy", "set", "default", "every_d", "d"], 2, r"'d': write NAME=VALUE"),
    (["policy", "set", "src=10.0.0.0/33", "every_d"], 2, r"src=10\.0\.0\.0/33.*not a valid netmask"),
    (["policy", "set", "src=10.0.0.1/24", "every_d"], 2, r"has host bits set"),
    (["policy", "set", "sport=70000", "tack"], 2, r"port outside 0\.\.65535"),
    (["policy", "set", "src=10.0.0.0/8", "default", "tack"], 2, r"'default' stands alone"),
    (["policy", "set", "src=10.0.0.0/8"], 2, r"no policy named; give one of"),
    (["policy", "set", "dynamic_d", "l1=5", "l2=3"], 2, r"thresholds must grow: l1=5 < l2=3"),
    (
        ["policy", "set", "acc", "signals=foo"],
        2,
        r"signals='foo': use a comma-separated subset of ce, ece, queue",
    ),
    (["policy", "set", "every_d", "--priority", "-1"], 2, r"--priority -1: must be 0\.\."),
    (["policy", "set", f"src={NOT_UTF8}", "every_d"], 2, r"src=\\xff\\xfe"),
    (["policy", "del", "-1"], 2, r"handle -1: must be 0\.\."),
    (["policy", "reclaim", "-5"], 2, r"idle_ms -5: must be 0\.\.4000000 ms"),
    (["flows", "--sort", "bogus"], 2, r"--sort bogus: give one of slot, sender"),
    # AP proxy
    (["ap", "serve", "10.0.0.300"], 2, r"station 10\.0\.0\.300: not an IPv4 or IPv6 address or prefix"),
    (["ap", "serve", "10.0.0.1/24"], 2, r"station 10\.0\.0\.1/24: .*host bits set"),
    (["ap", "serve", "fd00::2:1/64"], 2, r"station fd00::2:1/64: .*host bits set.*fd00:0:0:2::/64"),
    (["ap", "serve", "fd00::g"], 2, r"station fd00::g: not an IPv4 or IPv6 address or prefix"),
    (
        ["ap", "serve", "10.0.0.3", "--budget-bytes", "0"],
        2,
        r"--budget-bytes 0: must be 1\.\.4294967295 bytes",
    ),
    (["ap", "serve", "10.0.0.3", "--holdoff-ms", "-1"], 2, r"--holdoff-ms -1: must be 0\.\."),
    (["ap", "unserve", "nonsense"], 2, r"station nonsense: not an IPv4 or IPv6 address or prefix"),
    (["ap", "setup", "--uplink", "0", "--wireless", "2", "--cpu", "100"], 2, r"cannot use port 0"),
    (
        ["ap", "setup", "--uplink", "1", "--wireless", "1", "--cpu", "100"],
        2,
        r"must all differ \(given 1, 1, 100\)",
    ),
    (["ap", "setup", "--uplink", "300", "--wireless", "2", "--cpu", "100"], 2, r"must be below 256"),
    (["ap", "setup", "--uplink", "1", "--wireless", "2"], 2, r"required: --cpu"),
    # hold-back
    (["holdback", "setup", "-1"], 2, r"cpu_port -1: must be 0\.\.511"),
    (["holdback", "setup", "600"], 2, r"cpu_port 600: must be 0\.\.511"),
    # the test bed: parameters are named as typed, never as the objects they become
    (
        ["topo", "up", "dumbbell", "fwd_rate_mbps=-3"],
        2,
        r"fwd_rate_mbps=-3: must be 0\.\.10000 \(Mbit/s; 0: no limit\)",
    ),
    (["topo", "up", "dumbbell", "fwd_rate_mbps=abc"], 2, r"fwd_rate_mbps=abc: give a number"),
    (["topo", "up", "dumbbell", "fwd_rate_mbps=inf"], 2, r"fwd_rate_mbps=inf: give a finite number"),
    (["topo", "up", "dumbbell", "fwd_delay_ms=nan"], 2, r"fwd_delay_ms=nan: give a finite number"),
    (["topo", "up", "dumbbell", "loss=2"], 2, r"loss=2: must be 0\.\.1 \(a probability\)"),
    (["topo", "up", "dumbbell", "n_pairs=0"], 2, r"n_pairs=0: must be 1\.\.32"),
    (["topo", "up", "dumbbell", "n_pairs=1.5"], 2, r"n_pairs=1\.5: give a whole number"),
    (["topo", "up", "dumbbell", "rev_buffer_pkts=0"], 2, r"rev_buffer_pkts=0: must be 1\.\."),
    (["topo", "up", "dumbbell", "bottleneck=foo"], 2, r"bottleneck=foo: give one of link, switch"),
    (["topo", "up", "dumbbell", "bottleneck=switch"], 2, r"fwd_queue_pps=0: a switch bottleneck"),
    (["topo", "up", "dumbbell", "cc=vegas"], 2, r"cc=vegas: give one of reno, cubic, bbr"),
    (["topo", "up", "dumbbell", "program=nope"], 2, r"program=nope: give one of ack_switch"),
    (["topo", "up", "dumbbell", "holdback=s3"], 2, r"holdback=s3: name switches of the dumbbell"),
    (["topo", "up", "dumbbell", "access_delay_ms=1,x"], 2, r"access_delay_ms=1,x: give comma-separated"),
    (["topo", "up", "dumbbell", "nokey"], 2, r"parameter 'nokey': write KEY=VALUE"),
    (["topo", "up", "dumbbell", "n_pairs=1", "n_pairs=2"], 2, r"n_pairs is given twice"),
    (["topo", "up", "wlan", "n_stations=0"], 2, r"n_stations=0: must be 1\.\.32"),
    (["topo", "up", "wlan", "proxy=maybe"], 2, r"proxy=maybe: give true or false"),
    (["topo", "up", "wlan", "preset=802.11z"], 2, r"preset=802\.11z: give one of 802\.11b"),
    (["topo", "up", "wlan", "proxy_budget_bytes=0"], 2, r"proxy_budget_bytes=0: must be 1\.\."),
    (["topo", "up", "chain", "hops=1"], 2, r"hops=1: must be 2\.\.16"),
    (["topo", "up", "ring"], 2, r"unknown topology 'ring'; known: dumbbell"),
    # experiments
    (["experiment", "run", "no-such-scenario"], 2, r"no scenario 'no-such-scenario'; known:"),
    (["experiment", "run", "one-flow", "--where", "moon"], 2, r"--where moon: give a comma-separated subset"),
    (["experiment", "run", "one-flow", "--repeats", "0"], 2, r"--repeats 0: must be 1\.\.1000"),
    (["experiment", "report", "/nonexistent-dir"], 2, r"holds no runs\.jsonl"),
    # live view
    (["watch", "--interval", "-1"], 2, r"--interval -1: must be above 0"),
    (["watch", "--interval", "nan"], 2, r"--interval nan: must be above 0"),
    (["watch", "--count", "0"], 2, r"--count 0: must be 1\.\."),
    (["watch", "--sort", "bogus"], 2, r"--sort bogus: use one of"),
    # controller
    (["controller", "run", "--config", "{missing_file}"], 2, r"nope\.yaml: cannot read it"),
    (["controller", "run", "--config", "{controller}"], 2, r"controller\.yaml: rules: empty"),
    (
        ["controller", "run", "--config", "{controller}", "--interval-ms", "0"],
        2,
        r"--interval-ms 0: must be 1\.\.",
    ),
    (
        ["controller", "run", "--config", "{example}", "--switch", "h:99999"],
        2,
        r"--switch h:99999: write HOST:PORT",
    ),
    (["controller", "check", "{controller}"], 2, r"controller\.yaml: 1 problem \(listed above\)"),
]


@pytest.mark.parametrize(("argv", "code", "pattern"), ROWS, ids=[" ".join(r[0])[:60] for r in ROWS])
def test_bad_input_exits_2_with_one_line(
    argv: list[str],
    code: int,
    pattern: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ACKWISE_STATE_DIR", str(tmp_path / "state"))
    paths = files(tmp_path)
    argv = [a.format(**paths) if "{" in a else a for a in argv]
    # Nothing listens there: a command that got as far as connecting would exit 3. (The variable,
    # not --thrift-port: the option is refused by the commands that talk to no switch.)
    monkeypatch.setenv("ACKWISE_THRIFT_PORT", str(free_port()))
    assert cli.main(argv) == code
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    assert re.search(pattern, lines[0]), f"{lines[0]!r} does not match {pattern!r}"
    assert_plain(lines[0])


def assert_plain(line: str) -> None:
    """In the user's terms: no traceback, no object repr, no escape Python made up."""
    assert "Traceback" not in line
    assert not re.search(r"\b[A-Z]\w+\(\w+=", line), f"a Python repr in {line!r}"
    assert "\\udc" not in line and "\udcff" not in line, f"undecoded argv bytes in {line!r}"
    assert line.isprintable(), f"unprintable characters in {line!r}"


def test_thrift_port_from_the_environment_is_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACKWISE_THRIFT_PORT", "nine")
    assert cli.main(["table", "list"]) == EXIT_USAGE
    assert capsys.readouterr().err.splitlines() == [
        "ackwise: ACKWISE_THRIFT_PORT='nine': give a TCP port number 1..65535"
    ]


def test_help_still_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["table", "add", "--help"]) == 0
    assert "usage: ackwise table add" in capsys.readouterr().out


def test_an_unexpected_error_is_one_line_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object) -> int:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(table, "cmd_table_list", broken)
    monkeypatch.delenv("ACKWISE_DEBUG", raising=False)
    assert cli.main(["table", "list"]) == EXIT_FAILED
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("ackwise: internal error (ZeroDivisionError: boom); please report it")
