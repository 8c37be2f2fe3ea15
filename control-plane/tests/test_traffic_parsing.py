"""What the traffic helpers read from the kernel's tools: the congestion control ss names."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ackwise.experiments.measure import traffic

SS_CUBIC = (
    "State Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess\n"
    "ESTAB 0      91224       10.0.0.2:34238     10.0.0.3:5001\n"
    "\t ts sack cubic wscale:9,9 rto:264 rtt:61.115/47.452 mss:1448 cwnd:17 bytes_sent:34752\n"
)
SS_BBR = (
    "ESTAB 0 0 10.0.0.2:34238 10.0.0.3:5001\n"
    "\t bbr wscale:9,9 rto:264 rtt:61.115/47.452 mss:1448 pmtu:1500 cwnd:17 "
    "bbr:(bw:649720bps,mrtt:24.905,pacing_gain:2.88672,cwnd_gain:2.88672) send 3222253bps\n"
)


@pytest.fixture
def available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tcp_available_congestion_control"
    path.write_text("reno bbr cubic\n")
    monkeypatch.setattr(traffic, "_AVAILABLE_CC", path)


def test_the_congestion_control_is_the_bare_word_the_kernel_has(available: None) -> None:
    assert traffic.congestion_controls_in(SS_CUBIC) == {"cubic"}  # not "ts", "sack" or a key:value
    assert traffic.congestion_controls_in(SS_BBR) == {"bbr"}  # bbr:(...) is BBR's state, not a name
    assert traffic.congestion_controls_in(SS_CUBIC + SS_BBR) == {"cubic", "bbr"}
    assert traffic.congestion_controls_in("") == set()


class _QuitsAfterListening:
    """A node whose tcpdump binds, then quits on its own as tcpdump on an nflog group does when
    its netlink socket overflows ("No buffer space available")."""

    @staticmethod
    def popen(cmd: list[str], **kwargs: object) -> subprocess.Popen[str]:
        script = (
            "echo 'listening on nflog:7, link-type NFLOG' >&2; "
            "echo 'tcpdump: pcap_loop: No buffer space available' >&2; exit 1"
        )
        return subprocess.Popen(["sh", "-c", script], **kwargs)  # type: ignore[call-overload]


def test_a_capture_whose_tcpdump_quit_early_is_an_error(tmp_path: Path) -> None:
    capture = traffic.Capture("nflog:7", node=_QuitsAfterListening(), directory=tmp_path)
    capture.proc.wait()
    with pytest.raises(traffic.TrafficError, match="No buffer space available"):
        capture.stop(settle_s=0.0, timeout_s=0.1)


def test_an_nflog_capture_reads_whole_records_and_an_interface_capture_headers(tmp_path: Path) -> None:
    """tcpdump's snap length cuts an NFLOG netlink datagram, not the packet in it, and sizes
    libpcap's read buffer: at 128 bytes a datagram of batched records kept its first only (15 of
    143 packets on the test bed, test_piggyback_hold's 8 of 117 pure ACKs)."""
    nflog = traffic.tcpdump_command("nflog:7", tmp_path / "n.pcap", "")
    assert nflog[nflog.index("-s") + 1] == "0"
    assert nflog[-1] == "--immediate-mode"  # no filter: an NFLOG record is no link-layer frame
    eth = traffic.tcpdump_command("r1-eth0", tmp_path / "e.pcap", "tcp")
    assert eth[eth.index("-s") + 1] == "128" and eth[-1] == "tcp"
