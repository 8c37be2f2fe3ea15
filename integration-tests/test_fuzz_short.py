"""The data-plane fuzzer's short run, part of make test: 700 packets over IPv4 and 700 over IPv6
through each of the nine configurations (ack_switch under every policy, ap_proxy with a station
served, forward_only), 12 600 in all, with no violation. ``make fuzz`` runs the long one (100 000
per configuration and IP version)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO

from ackwise.experiments.stress.fuzz import CONFIGS, IP_VERSIONS, MUTATIONS_BY_VERSION, label

PACKETS = 700


def test_fuzz_short_run_finds_nothing(tmp_path: Path) -> None:
    out = tmp_path / "fuzz.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ackwise.experiments.stress.fuzz",
            "--packets",
            str(PACKETS),
            "--seed",
            "7",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    report = json.loads(out.read_text())
    violations = {label(r): r["violations"] for r in report["reports"] if r["violations"]}
    assert result.returncode == 0 and not violations, (
        f"{result.stderr}\n{json.dumps(violations, indent=1)[:4000]}"
    )

    by_pass = {(r["config"], r["ip_version"]): r for r in report["reports"]}
    assert sorted(by_pass) == sorted((c, v) for c in CONFIGS for v in IP_VERSIONS)
    assert all(r["packets"] == PACKETS for r in by_pass.values())
    # It did exercise what it claims: every mutation kind of each IP version was sent, the thinning
    # policies thinned over both, the AP spoofed and consumed, and malformed packets of every
    # reason reached the parser.
    for version in IP_VERSIONS:
        passes = [r for (_, v), r in by_pass.items() if v == version]
        assert set(MUTATIONS_BY_VERSION[version]) <= set().union(*(r["outcomes"] for r in passes)), version
        for policy in ("every_d", "dynamic_d", "tack", "acc"):
            thinned = sum(v.get("thinned", 0) for v in by_pass[policy, version]["outcomes"].values())
            assert thinned > 0, (policy, version)
    ap = by_pass["ap_proxy", 4]
    assert sum(v.get("forwarded+agent+spoof", 0) for v in ap["outcomes"].values()) > 0
    assert sum(n for v in ap["outcomes"].values() for k, n in v.items() if k.startswith("to agent")) > 0
    assert set(by_pass["off", 6]["counters"]["parser.malformed"]) >= {"ipv6_header", "ipv6_ext_skipped"}
    assert set(by_pass["off", 4]["counters"]["parser.malformed"]) >= {
        "tcp_option_length",
        "tcp_option_overrun",
        "tcp_data_offset",
        "truncated",
        "ipv4_ihl",
        "ipv4_header",
    }
