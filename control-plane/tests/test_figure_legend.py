"""Where a figure's arm legend goes (experiments/harness/figures.py)."""

from __future__ import annotations

import io

from matplotlib.figure import Figure

from ackwise.experiments.harness import figures

LONG = (
    "host piggyback hold_ms=10 release_if_ack_path_queued=True release_if_backlogged=True "
    "release_in_slow_start=True"
)


def axes_width_with(labels: list[str]) -> float:
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for k, label in enumerate(labels):
        ax.plot([0, 1], [k, k], label=label)
    figures._legend(fig, ax)
    fig.savefig(io.BytesIO(), format="png")  # lays the figure out
    return float(ax.get_position().width)


def test_long_arm_labels_go_below_the_axes_and_leave_them_the_figures_width() -> None:
    """Beside the axes, labels of 60-110 characters took nearly all the width (piggyback-guarded's
    figures: the axes 0.02 of the figure wide, the x ticks on top of each other)."""
    assert axes_width_with(["baseline (nothing on) (= 1)", LONG[:60], LONG]) > 0.8


def test_short_arm_labels_stay_beside_the_axes() -> None:
    width = axes_width_with(["baseline (nothing on)", "host tack", "switch tack @s1"])
    assert 0.5 < width < 0.9
