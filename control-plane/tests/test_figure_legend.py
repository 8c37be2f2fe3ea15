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


def x_tick_texts(points: list[dict[str, object]]) -> tuple[list[str], str]:
    """The x axis's tick labels and its offset text, as the reader sees them, with two arms
    spread about each point as the figures draw them."""
    data = figures.FigureData(
        scenario="s", points=points, arms=[], groups={}, axis_name="bytes written back per read"
    )
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for x in data.x_positions():
        ax.errorbar([x - 0.04, x + 0.04], [1.0, 1.1], yerr=[0.1, 0.1], fmt="o")
    figures._set_x_axis(ax, data, {})
    fig.savefig(io.BytesIO(), format="png")  # draws the ticks
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    return shown, ax.xaxis.get_offset_text().get_text()


def test_a_single_point_is_labelled_by_its_name_not_an_offset_scale() -> None:
    """One numeric point (piggyback-guarded/n300: N = 300) gave ticks -0.04 to 0.06 and "+3e2"."""
    shown, offset = x_tick_texts([{"x": 300, "label": "N=300"}])
    assert shown == ["N=300"] and offset == ""


def test_several_numeric_points_keep_their_numeric_axis() -> None:
    shown, _ = x_tick_texts([{"x": 100, "label": "N=100"}, {"x": 300, "label": "N=300"}])
    assert "N=100" not in shown and any(t.replace("−", "-").lstrip("-").isdigit() for t in shown)
