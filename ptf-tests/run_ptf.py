#!/usr/bin/env python3
"""Run ackwise's PTF tests against simple_switch on veth pairs this script creates and removes.

    run_ptf.py [--xunit-dir DIR] [--log-dir DIR] [TEST ...]

For each switch port N it creates a veth pair (switch side, test side), named after this process
so that parallel runs do not collide, and one more pair for an agent on a CPU port (not given to
PTF: tests that run an agent, such as the hold-back agent, start it on the far end), and deletes
exactly those pairs when it exits, also on failure or Ctrl-C. Each test starts and stops its own
switch (see base_test.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "control-plane"))

from ackwise.bmv2.launcher import STATE_DIR_ENV, RunningSwitch  # noqa: E402
from ackwise.bmv2.toolchain import (  # noqa: E402
    SIMPLE_SWITCH,
    SIMPLE_SWITCH_ENV,
    ToolchainError,
    build_config,
    ensure_bmv2_bindings,
    find_tool,
    missing_tools,
)
from ackwise.netdev import add_veth, delete_link  # noqa: E402

N_PORTS = 4


def create_veths(tag: str) -> list[tuple[str, str]]:
    """The data ports' pairs, then the agent's pair (last): jumbo MTU, no IPv6 neighbour discovery,
    offloads off as on the test bed's interfaces (with them on, the data-plane fuzzer saw a port of
    simple_switch stop taking packets mid-burst now and then), and every frame received in the
    order sent, whatever its flow, as a wire delivers them (ackwise.netdev: with per-flow steering
    two flows' ACKs sent back to back reached the switch swapped, and test_ack_coalesce's two-flow
    test failed on CI)."""
    pairs: list[tuple[str, str]] = []
    try:
        for switch_side, test_side in [(f"{tag}s{p}", f"{tag}t{p}") for p in range(N_PORTS)] + [
            (f"{tag}cs", f"{tag}ca")
        ]:
            add_veth(switch_side, test_side, in_order=True)
            pairs.append((switch_side, test_side))
    except BaseException:
        delete_veths(pairs)
        raise
    return pairs


def delete_veths(pairs: list[tuple[str, str]]) -> None:
    for switch_side, _ in pairs:
        delete_link(switch_side)


def stop_leftover_switches(state: Path) -> None:
    for path in state.glob("switch-*.json"):
        running = RunningSwitch.load(int(path.stem.split("-", 1)[1]))
        if running is not None:
            running.stop()
            running.forget()
    shutil.rmtree(state, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--build-dir", default=str(REPO / "build"))
    parser.add_argument("--xunit-dir", help="write JUnit XML results here")
    parser.add_argument(
        "--log-dir", default=str(REPO / "build" / "ptf-logs"), help="bmv2 log per test (empty to disable)"
    )
    parser.add_argument("--thrift-port", type=int, default=9190)
    parser.add_argument(
        "--veth-prefix",
        default="ap",
        help="first letters of the veth pairs' names (default 'ap'): runs sharing a machine pick their own",
    )
    parser.add_argument(
        "--test-dir",
        default=str(HERE),
        help="where the tests are (default: ptf-tests/; base_test is importable)",
    )
    parser.add_argument("tests", nargs="*", help="test names or groups (default: all)")
    args = parser.parse_args()
    # ptf runs from build/: make every path absolute first.
    args.build_dir = str(Path(args.build_dir).resolve())
    args.log_dir = str(Path(args.log_dir).resolve()) if args.log_dir else ""

    missing = missing_tools()
    if missing:
        print(
            f"PTF tests need {' and '.join(missing)}: run 'make deps' (README, 'The P4 toolchain')",
            file=sys.stderr,
        )
        return 2
    if os.geteuid() != 0:
        print("PTF tests create veth interfaces: run them as root (sudo make ptf)", file=sys.stderr)
        return 2
    ensure_bmv2_bindings()
    # bmv2's log of each test needs a build with logging macros (the pinned logging build where
    # the default is the fast one); without one, the tests run with their logs off.
    if args.log_dir:
        try:
            switch = find_tool(SIMPLE_SWITCH, logging=True)
        except ToolchainError as exc:
            print(f"PTF: bmv2 logs off: {exc}", file=sys.stderr)
            args.log_dir = ""
            switch = find_tool(SIMPLE_SWITCH)
    else:
        switch = find_tool(SIMPLE_SWITCH)
    os.environ[SIMPLE_SWITCH_ENV] = switch
    print(f"PTF: simple_switch {switch}, {build_config(switch).describe()}", flush=True)
    ptf = shutil.which("ptf", path=str(Path(sys.executable).parent)) or shutil.which("ptf")
    if ptf is None:
        print("ptf not found: run 'make deps'", file=sys.stderr)
        return 2

    tag = f"{args.veth_prefix}{os.getpid() % 100000}"
    # Switches the tests start record themselves here; whatever is left at the end gets stopped.
    state = Path(args.build_dir) / f"ptf-state-{os.getpid()}"
    state.mkdir(parents=True, exist_ok=True)
    os.environ[STATE_DIR_ENV] = str(state)
    pairs = create_veths(tag)
    agent_switch_side, agent_side = pairs[-1]
    data_pairs = pairs[:-1]
    # Restore the default SIGTERM behaviour through an exception so that the veths go away.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        switch_ifaces = ",".join(f"{port}@{sw}" for port, (sw, _) in enumerate(data_pairs))
        params = (
            f"build_dir='{args.build_dir}';switch_ifaces='{switch_ifaces}';"
            f"thrift_port='{args.thrift_port}';log_dir='{args.log_dir}';"
            f"agent_switch_iface='{agent_switch_side}';agent_iface='{agent_side}'"
        )
        cmd = [
            sys.executable,
            ptf,
            "--test-dir",
            str(Path(args.test_dir).resolve()),
            "--pypath",
            str(REPO / "control-plane"),
            "--pypath",
            str(HERE),
            "--test-params",
            params,
            "--log-file",
            str(REPO / "build" / "ptf.log"),
            "--default-negative-timeout",
            "0.3",
            "--disable-ipv6",
        ]
        for port, (_, test_side) in enumerate(data_pairs):
            cmd += ["-i", f"{port}@{test_side}"]
        if args.xunit_dir:
            xunit_dir = Path(args.xunit_dir).resolve()  # ptf runs from build/
            shutil.rmtree(xunit_dir, ignore_errors=True)
            cmd += ["--xunit", "--xunit-dir", str(xunit_dir)]
        cmd += args.tests
        return subprocess.run(cmd, cwd=REPO / "build").returncode
    except KeyboardInterrupt:
        return 130
    finally:
        stop_leftover_switches(state)
        delete_veths(pairs)


if __name__ == "__main__":
    sys.exit(main())
