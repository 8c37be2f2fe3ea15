"""The report's "Paired effects on every metric": every arm at every point over the baseline of its
blocks on each metric, as the verdict pairs them, so that what a claim checks beside the main
metric (fairness, ACKs per segment, retransmissions) is read from the report and recomputed by
`make check-results`, not computed again by hand for docs/results.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from results_fixtures import ACKS_PER_SEGMENT, COMPLETION_S, SIZE_MBIT, build_store

from ackwise.experiments.harness.comparison import describe_effect, effect_text, verdict_text
from ackwise.experiments.harness.report import write_report
from ackwise.experiments.harness.stats import paired_effect


def effects_table(markdown: str) -> list[list[str]]:
    lines = markdown.splitlines()
    start = lines.index("### Paired effects on every metric")
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("### "):
            break
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def test_every_arm_on_every_metric_is_the_paired_effect_of_its_blocks(tmp_path: Path) -> None:
    store = build_store(tmp_path / "asym")
    rows = effects_table(write_report(store.directory).markdown.read_text(encoding="utf-8"))
    header, body = rows[0], {(r[0], r[1]): r[2:] for r in rows[1:]}
    assert header == ["point", "arm", "completion_s", "goodput_mbps", "acks_per_data_segment"]
    # The switch at 256 kbit/s, block by block against the baseline of the same repeat
    arm, base = COMPLETION_S[("256 kbit/s", "switch")], COMPLETION_S[("256 kbit/s", "none")]
    completion = paired_effect(arm, base)  # type: ignore[arg-type]
    goodput = paired_effect([SIZE_MBIT / a for a in arm], [SIZE_MBIT / b for b in base])  # type: ignore[operator]
    acks = paired_effect([ACKS_PER_SEGMENT["switch"]] * 3, [ACKS_PER_SEGMENT["none"]] * 3)
    cells = body[("256 kbit/s", "switch coalesce @s1")]
    assert cells == [
        describe_effect(completion, "lower"),
        describe_effect(goodput, "higher"),
        describe_effect(acks, "lower"),
    ]
    assert effect_text(acks).startswith("0.25× [0.25, 0.25] (3 blocks)")
    # The host's failed repeat 2 at 64 kbit/s leaves that block out of the host's comparison only,
    # as the verdict does: the host has 2 blocks there, the switch all 3
    host = paired_effect([8.0, 8.5], [10.0, 11.0])
    switch = paired_effect([6.0, 6.2, 6.4], [10.0, 11.0, 12.0])
    assert body[("64 kbit/s", "host every_d d=4")][0] == describe_effect(host, "lower")
    assert body[("64 kbit/s", "switch coalesce @s1")][0] == describe_effect(switch, "lower")
    assert ("64 kbit/s", "baseline (nothing on)") not in body
    # the results table's order: points as swept, arms as the scenario lists them
    assert [key for key in body] == [
        (point, arm)
        for point in ("64 kbit/s", "256 kbit/s")
        for arm in ("host every_d d=4", "switch coalesce @s1", "ap proxy")
    ]


@pytest.mark.parametrize(
    ("arm", "baseline"),
    [([0, 0, 0], [0, 0, 0]), ([3.0, 5.0, 4.0], [3.0, 5.0, 4.0])],
)
def test_an_arm_equal_to_the_baseline_in_every_block_says_so(arm: list[float], baseline: list[float]) -> None:
    """Regression: an arm with the baseline's value in every block (both 0 retransmissions, say)
    printed 'no difference detected (could detect ±0)'."""
    effect = paired_effect(arm, baseline)
    assert verdict_text(effect, "lower") == "no difference: equal in every block"


def test_a_varying_arm_still_states_what_could_have_been_detected() -> None:
    effect = paired_effect([3.1, 4.9, 4.0], [3.0, 5.0, 4.0])
    assert verdict_text(effect, "lower").startswith("no difference detected (could detect ±")
