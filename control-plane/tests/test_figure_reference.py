"""Figures against a reference arm with the paper's numbers quoted (issue 38): Altman and Jiménez
compare every arm with standard TCP (an ACK per segment), not with Linux's delayed ACK."""

from __future__ import annotations

from pathlib import Path

import pytest
from results_fixtures import ARMS, COMPLETION_S, POINTS, SCENARIO, make_record, manifest

from ackwise.experiments.harness.figures import validate_figure_spec
from ackwise.experiments.harness.report import build_report
from ackwise.experiments.harness.store import ResultStore

HOST = "host every_d d=4"
QUOTE = "d = 3 gives 30-40 % more than standard TCP"


def store_with(tmp_path: Path, figures: list[dict[str, object]]) -> ResultStore:
    given = manifest()
    given["scenario"] = {**SCENARIO, "figures": figures}
    store = ResultStore.open(tmp_path, given)
    for point in POINTS:
        for arm in ARMS:
            for repeat, value in enumerate(COMPLETION_S[(point.label, arm.where)]):
                if value is not None:
                    store.append(make_record(point, arm, repeat, completion_s=value))
    return store


def test_relative_to_a_named_arm_pairs_with_it_and_quotes_the_paper(tmp_path: Path) -> None:
    spec = {
        "kind": "relative_vs_x",
        "metric": "completion_s",
        "title": "relative to the host arm",
        "reference": HOST,
        "quote": QUOTE,
    }
    section = build_report(store_with(tmp_path, [spec])).sections[0]
    assert section.skipped_figures == []
    caption = section.figures[0].caption
    assert f"over {HOST}'s in the same block" in caption
    assert f"The paper's numbers, quoted: {QUOTE}" in caption
    assert (tmp_path / section.figures[0].svg).exists()


def test_the_default_reference_is_still_the_baseline(tmp_path: Path) -> None:
    spec = {"kind": "relative_vs_x", "metric": "completion_s", "title": "relative"}
    caption = build_report(store_with(tmp_path, [spec])).sections[0].figures[0].caption
    assert "over the baseline's in the same block" in caption and "quoted" not in caption


def test_a_reference_no_run_has_is_drawn_as_no_data_not_a_crash(tmp_path: Path) -> None:
    spec = {"kind": "relative_vs_x", "metric": "completion_s", "title": "t", "reference": "host quickack"}
    section = build_report(store_with(tmp_path, [spec])).sections[0]
    assert len(section.figures) == 1 and "over host quickack's" in section.figures[0].caption


def test_metric_vs_x_and_bars_quote_the_paper(tmp_path: Path) -> None:
    specs = [
        {"kind": "metric_vs_x", "metric": "completion_s", "title": "a", "xscale": "log", "quote": QUOTE},
        {"kind": "bars", "metric": "completion_s", "title": "b", "quote": QUOTE},
    ]
    figures = build_report(store_with(tmp_path, specs)).sections[0].figures
    assert [QUOTE in f.caption for f in figures] == [True, True]


def test_reference_and_quote_are_checked() -> None:
    base = {"kind": "relative_vs_x", "metric": "completion_s", "title": "t"}
    assert validate_figure_spec({**base, "reference": HOST, "quote": QUOTE}) == []
    assert validate_figure_spec({**base, "reference": ""}) == [
        "reference must be a non-empty string (an arm's label; the paper's words)"
    ]
    assert validate_figure_spec({**base, "kind": "bars", "reference": HOST}) == [
        "reference is for kind relative_vs_x only"
    ]
    assert validate_figure_spec({"kind": "timeline", "title": "t", "quote": QUOTE}) == [
        "quote is for kinds metric_vs_x, relative_vs_x and bars only"
    ]


def test_a_long_metric_label_is_wrapped_to_fit_the_axis() -> None:
    from ackwise.experiments.harness.figures import AXIS_LABEL_CHARS, axis_label, metric_label

    long = "aggregate_goodput_mbps"
    assert len(metric_label(long)) > AXIS_LABEL_CHARS  # the label that ran off its axis
    lines = axis_label(long).split("\n")
    assert len(lines) > 1 and all(len(line) <= AXIS_LABEL_CHARS for line in lines)
    assert " ".join(lines) == metric_label(long)


def test_many_points_label_their_ticks_a_part_per_line() -> None:
    """Regression: wlan-ack-frequency's 8 points ('802.11b, 10 ms', ...) printed their labels on one
    line each, running into each other under the bars."""
    from ackwise.experiments.harness.figures import tick_labels

    few = [{"label": f"802.11{x}, 10 ms"} for x in "bgn"]
    assert tick_labels(few) == ["802.11b, 10 ms", "802.11g, 10 ms", "802.11n, 10 ms"]
    many = [{"label": f"802.11{x}, {r} ms"} for x in "bg" for r in (10, 80)] + [{"label": "x"}]
    assert tick_labels(many)[:2] == ["802.11b,\n10 ms", "802.11b,\n80 ms"] and tick_labels(many)[-1] == "x"


def test_the_quote_is_printed_under_the_plot_not_over_its_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside the axes the quote's box covered data points (the chain's W = 3 curve, the
    wlan-ideal-goodput 802.11g baseline bar); it goes under the plot, above the scale note."""
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    in_axes: list[str] = []
    under: list[str] = []
    text, supxlabel = Axes.text, Figure.supxlabel
    monkeypatch.setattr(Axes, "text", lambda self, *a, **k: in_axes.append(str(a[2])) or text(self, *a, **k))
    monkeypatch.setattr(Figure, "supxlabel", lambda self, t, **k: under.append(t) or supxlabel(self, t, **k))
    specs = [
        {"kind": "metric_vs_x", "metric": "completion_s", "title": "a", "xscale": "log", "quote": QUOTE},
        {"kind": "bars", "metric": "completion_s", "title": "b", "quote": QUOTE},
    ]
    build_report(store_with(tmp_path, specs))
    assert not [t for t in in_axes if "The paper" in t]
    assert len([t for t in under if t.startswith("The paper: " + QUOTE)]) == 2
