"""The data-plane fuzzer's short run, part of make test: 1 300 packets through each of the eight
configurations (ack_switch under every policy, ap_proxy with a station served), 10 400 in all,
with no violation. ``make fuzz`` runs the long one (100 000 per configuration)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO

from ackwise.experiments.stress.fuzz import CONFIGS, MUTATIONS

PACKETS = 1300


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
    violations = {r["config"]: r["violations"] for r in report["reports"] if r["violations"]}
    assert result.returncode == 0 and not violations, (
        f"{result.stderr}\n{json.dumps(violations, indent=1)[:4000]}"
    )

    by_config = {r["config"]: r for r in report["reports"]}
    assert sorted(by_config) == sorted(CONFIGS)
    assert all(r["packets"] == PACKETS for r in by_config.values())
    # It did exercise what it claims: every mutation kind was sent, the thinning policies thinned,
    # the AP spoofed and consumed, and malformed packets of every reason reached the parser.
    sent_kinds = set().union(*(r["outcomes"] for r in by_config.values()))
    assert set(MUTATIONS) <= sent_kinds
    for policy in ("every_d", "dynamic_d", "tack", "acc"):
        assert sum(v.get("thinned", 0) for v in by_config[policy]["outcomes"].values()) > 0, policy
    ap = by_config["ap_proxy"]
    assert sum(v.get("forwarded+agent+spoof", 0) for v in ap["outcomes"].values()) > 0
    assert sum(n for v in ap["outcomes"].values() for k, n in v.items() if k.startswith("to agent")) > 0
    assert set(by_config["off"]["counters"]["parser.malformed"]) >= {
        "tcp_option_length",
        "tcp_option_overrun",
        "tcp_data_offset",
        "truncated",
        "ipv4_ihl",
        "ipv4_header",
    }
