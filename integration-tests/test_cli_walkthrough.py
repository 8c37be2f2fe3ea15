"""The README's CLI walk-through works as written against a running simple_switch."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, Netns


def walkthrough() -> str:
    readme = (REPO / "README.md").read_text()
    block = re.search(
        r"<!-- walkthrough:start -->\s*```sh\n(.*?)```\s*<!-- walkthrough:end -->", readme, re.S
    )
    assert block, "README has no walk-through block between the walkthrough markers"
    return block.group(1)


def test_readme_walkthrough_runs_as_written(netns: Netns, cli_env: dict[str, str]) -> None:
    script = walkthrough()
    result = netns.run("bash", "-e", "-o", "pipefail", "-c", script, env=cli_env, check=False)
    assert result.returncode == 0, f"walk-through failed:\n{result.stdout}\n{result.stderr}"
    out = result.stdout
    assert re.search(
        r"simple_switch pid \d+ on Thrift port 9090 running ack_switch.json on 1@sw-p1, 2@sw-p2", out
    )
    assert "ports: 1@sw-p1, 2@sw-p2" in out
    assert "added entry 0 to forwarding.ipv4_lpm" in out
    assert re.search(
        r"0\s+10\.0\.2\.0/24\s+forwarding\.route\s+port=2 src_mac=00:00:00:00:02:fe "
        r"dst_mac=00:00:00:00:02:01",
        out,
    )
    # After the program swap the table is empty again.
    assert out.count("forwarding.ipv4_lpm: 0 of 1024 entries") == 1
    assert "stopped simple_switch pid" in out
    assert netns.pids() == [], "the walk-through left processes behind"
    # Nor files: the state file, the switch's output, its notification socket and the emptied
    # state directory went with it.
    assert not Path(cli_env["ACKWISE_STATE_DIR"]).exists()
    assert not Path("/tmp/ackwise-bmv2-9090-notifications.ipc").exists()
