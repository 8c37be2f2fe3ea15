"""``ackwise ap`` against the AP proxy on the Mininet WLAN, and the fail-safe when the repair
agent dies: the AP goes back to plain forwarding and new transfers still complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from ackwise.experiments.measure.traffic import Transfer, iperf3_bulk
from ackwise.features.ap import read_flows, read_stats
from ackwise.topologies.testbed import Testbed


def test_ap_cli_and_agent_death(cli_env: dict[str, str]) -> None:
    with Testbed.create("wlan", n_stations=1, preset="802.11g", scale=4.0, proxy=True) as testbed:
        port = str(testbed.switch("ap").thrift_port)

        def ackwise(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["ackwise", "--thrift-port", port, *args],
                capture_output=True,
                text=True,
                env=cli_env,
                check=check,
                timeout=60,
            )

        srv, sta = testbed.host("srv"), testbed.host("sta1")
        first = Transfer(srv, sta, 1_000_000, port=5001).start().wait()
        assert first.byte_exact
        time.sleep(1.5)  # the agent writes its report every second

        status = ackwise("ap", "status").stdout
        assert "agent: alive" in status and "stations served: 1; flows: 1 fast" in status
        # Every station ACK reached the agent, the last ones above the spoofed point too: it
        # holds nothing for a finished transfer.
        assert "0 bytes buffered in 1 flows" in status
        (flow,) = json.loads(ackwise("--json", "ap", "flows").stdout)
        assert f"{sta.IP()}:5001" in flow["key"]
        assert flow["mode"] == "fast" and flow["spoofed_acks"] > 400
        assert (flow["outstanding_bytes"], flow["buffered_bytes"]) == (0, 0)
        assert "spoofed_acks" in ackwise("ap", "flows").stdout

        # The station opens the connection and downloads (iperf3 -R): proxied as well.
        report = iperf3_bulk(sta, srv, seconds=2, reverse=True)
        assert "error" not in report, report.get("error")
        with testbed.switch("ap").client() as client:
            download = max(
                (f for f in read_flows(client) if f"{srv.IP()}:5201" in str(f.key)),
                key=lambda f: f.spoofed_acks,
            )
        assert download.mode == "fast" and download.spoofed_acks > 200, download

        (station,) = json.loads(ackwise("--json", "ap", "stations").stdout)
        assert station["station"] == f"{sta.IP()}/32"
        ackwise("ap", "serve", "10.0.9.0/24", "--budget-bytes", "32768", "--holdoff-ms", "0")
        assert "10.0.9.0/24" in ackwise("ap", "stations").stdout
        served = {s["station"]: s for s in json.loads(ackwise("--json", "ap", "stations").stdout)}
        assert set(served) == {f"{sta.IP()}/32", "10.0.9.0/24"}
        assert (served["10.0.9.0/24"]["budget_bytes"], served["10.0.9.0/24"]["holdoff_ms"]) == (32768, 0)
        ackwise("ap", "unserve", "10.0.9.0/24")
        again = ackwise("ap", "unserve", "10.0.9.0/24", check=False)
        assert again.returncode == 2 and "is not served" in again.stderr
        # An IPv6 prefix: in ap.stations6, listed with its version, removed the same way.
        ackwise("ap", "serve", "fd00:0:0:9::/64", "--budget-bytes", "32768")
        served = {s["station"]: s for s in json.loads(ackwise("--json", "ap", "stations").stdout)}
        assert (served["fd00:0:0:9::/64"]["ip_version"], served["fd00:0:0:9::/64"]["budget_bytes"]) == (
            6,
            32768,
        )
        ackwise("ap", "unserve", "fd00:0:0:9::/64")
        assert [s["station"] for s in json.loads(ackwise("--json", "ap", "stations").stdout)] == [
            f"{sta.IP()}/32"
        ]

        # The agent dies. Half a second later the AP stops spoofing; a new transfer completes.
        assert testbed.ap_agent is not None
        os.kill(testbed.ap_agent.pid, signal.SIGKILL)
        time.sleep(0.7)
        assert "agent: GONE" in ackwise("ap", "status").stdout
        with testbed.switch("ap").client() as client:
            spoofed_before = read_stats(client)["spoofed"]
        second = Transfer(srv, sta, 1_000_000, port=5002, seed=2).start().wait()
        assert second.byte_exact
        with testbed.switch("ap").client() as client:
            assert read_stats(client)["spoofed"] == spoofed_before
            (new_flow,) = [f for f in read_flows(client) if f"{sta.IP()}:5002" in str(f.key)]
        assert new_flow.mode == "pass" and new_flow.spoofed_acks == 0
