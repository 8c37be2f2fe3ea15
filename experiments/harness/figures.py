"""The report's figures, drawn with matplotlib's Agg (PNG) and SVG backends, without pyplot.

A scenario lists its figures as dicts ``{"kind": ..., "metric": ..., "title": ...}``; the kinds:

- ``metric_vs_x``: a metric's mean (95 % CI error bars) against the swept axis, one line per arm.
- ``relative_vs_x``: the metric divided by the baseline arm's mean at the same point, against the
  axis, with a line at 1.0.
- ``acks_vs_goodput``: one marker per ok run, pure ACKs per data segment (x, or ``x_metric``)
  against goodput (y, or ``metric``), one marker style per arm.
- ``bars``: grouped bars, a group per point and a bar per arm, with CI error bars.
- ``timeline``: cwnd and ACK rate against time in the first ok repeat of each arm at one point
  (the first, or ``"point": label``), one panel per arm.
- ``estimate_vs_cwnd``: the sender's cwnd (ss) and the receiver's window estimate (the host
  agent's, series ``cwnd_estimate``) against time, in the first ok repeat of each arm that
  records an estimate, at one point (as timeline); each panel says the estimate's median
  relative error over the sender's congestion avoidance.

Optional keys: ``name`` (file name stem), ``point`` (timeline; acks_vs_goodput: only that point),
``xscale``/``yscale`` (``"log"``), ``cwnd_unit`` (timeline's cwnd axis, default "segments").

Every figure carries its title, axis labels with units, a legend and the scale note. Files are
byte-for-byte the same when drawn again from the same records: matplotlib's defaults are restored
for the drawing (a user's matplotlibrc does not leak in), SVG ids are salted with a constant, and
no date or creator goes into the files' metadata.
"""

from __future__ import annotations

import itertools
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ackwise.experiments.harness.comparison import RunKey, pair_excluded
from ackwise.experiments.harness.schema import BASELINE, METRICS
from ackwise.experiments.harness.stats import (
    DEFAULT_CONFIDENCE,
    Group,
    PairedEffect,
    Summary,
    mean_ci,
    paired_effect,
)

KINDS = ("metric_vs_x", "relative_vs_x", "acks_vs_goodput", "bars", "timeline", "estimate_vs_cwnd")
_NEEDS_METRIC = ("metric_vs_x", "relative_vs_x", "bars")
_OPTIONAL_KEYS = {
    "name",
    "point",
    "xscale",
    "yscale",
    "x_metric",
    "cwnd_unit",
    "title",
    "metric",
    "kind",
    "reference",  # relative_vs_x: the label of the arm to be relative to (default: the baseline)
    "quote",  # metric_vs_x, relative_vs_x, bars: the paper's numbers, drawn in the plot and captioned
}

PNG_DPI = 120
# Fixed drawing settings on top of matplotlib's defaults: the same figure whatever the local rc.
_STYLE = {
    "svg.hashsalt": "ackwise",  # otherwise SVG clip-path ids are random and files differ run to run
    "svg.fonttype": "path",  # text as paths: the SVG needs no fonts where it is opened
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
}
_PNG_METADATA: dict[str, Any] = {"Software": None}
_SVG_METADATA: dict[str, Any] = {"Date": None, "Creator": None}

_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
_BASELINE_STYLE = ("#444444", "o", "--")


@dataclass(frozen=True)
class ArmStyle:
    color: str
    marker: str
    linestyle: str


@dataclass
class FigureData:
    """What a figure of one scenario draws from: its points and arms in table order, the groups
    by (point label, arm label), the swept axis and the scale note."""

    scenario: str
    points: list[dict[str, Any]]
    arms: list[dict[str, Any]]
    groups: dict[tuple[str, str], Group]
    axis_name: str = "point"
    axis_unit: str = ""
    scale_note: str = ""
    confidence: float = DEFAULT_CONFIDENCE
    styles: dict[str, ArmStyle] = field(default_factory=dict)
    excluded: set[RunKey] = field(default_factory=set)  # runs (point, repeat, arm) left out
    baseline_label: str = ""  # the scenario's baseline_arm ("": the arm with nothing on)

    def paired(
        self, point: dict[str, Any], arm: dict[str, Any], metric: str, reference: dict[str, Any] | None = None
    ) -> tuple[list[float], PairedEffect | None]:
        """The arm's value over the baseline's (or ``reference``'s) in each block at this point (not
        excluded), and their paired effect (stats.paired_effect); ([], None) without a baseline or
        a common block."""
        base = reference if reference is not None else self.baseline
        group, base_group = self.group(point, arm), self.group(point, base) if base else None
        if group is None or base_group is None:
            return [], None
        label = str(point.get("label"))
        base_values = {r.repeat: r.metrics.get(metric) for r in base_group.ok}
        pairs = [
            (value, base_value)
            for r in group.ok
            if not pair_excluded(self.excluded, label, r.repeat, *(str(a.get("label")) for a in (arm, base)))
            and (value := r.metrics.get(metric)) is not None
            and (base_value := base_values.get(r.repeat)) is not None
        ]
        if not pairs:
            return [], None
        effect = paired_effect([a for a, _ in pairs], [b for _, b in pairs], self.confidence)
        ratios = [a / b for a, b in pairs if b] if effect.scale == "ratio" else [a - b for a, b in pairs]
        return ratios, effect

    def __post_init__(self) -> None:
        others = 0
        for arm in self.arms:
            if arm.get("where") == BASELINE:
                self.styles[arm["label"]] = ArmStyle(*_BASELINE_STYLE)
            else:
                self.styles[arm["label"]] = ArmStyle(
                    _COLORS[others % len(_COLORS)], _MARKERS[others % len(_MARKERS)], "-"
                )
                others += 1

    def group(self, point: dict[str, Any], arm: dict[str, Any]) -> Group | None:
        return self.groups.get((str(point.get("label")), str(arm.get("label"))))

    @property
    def numeric_x(self) -> bool:
        # A single point is a category: a numeric axis around one value has no scale to read, and
        # the arms spread about it came out as ticks "-0.04 ... 0.06" with "+3e2" beside them
        # (piggyback-guarded/n300, N = 300 alone).
        return len(self.points) > 1 and all(_is_number(p.get("x")) for p in self.points)

    def x_positions(self) -> list[float]:
        """Where each point sits on the x axis: its value, or its index for categorical points."""
        if self.numeric_x:
            return [float(p["x"]) for p in self.points]
        return [float(i) for i in range(len(self.points))]

    @property
    def axis_label(self) -> str:
        return f"{self.axis_name} ({self.axis_unit})" if self.axis_unit else self.axis_name

    @property
    def baseline(self) -> dict[str, Any] | None:
        """What the figures are relative to by default: the scenario's baseline_arm, else nothing on."""
        if self.baseline_label:
            return next((a for a in self.arms if a.get("label") == self.baseline_label), None)
        return next((a for a in self.arms if a.get("where") == BASELINE), None)


@dataclass(frozen=True)
class RenderedFigure:
    name: str
    kind: str
    title: str
    caption: str
    png: Path
    svg: Path
    width_in: float


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def metric_label(metric: str) -> str:
    """'goodput (sum over flows) (Mbit/s)': a metric's label with its unit, for axes."""
    info = METRICS[metric]
    return f"{info.label} ({info.unit})" if info.unit else info.label


AXIS_LABEL_CHARS = 48  # a longer label runs off a 4.6-inch axis (seen: aggregate goodput's)


def axis_label(metric: str) -> str:
    """metric_label wrapped to lines an axis of the default figure holds."""
    return "\n".join(textwrap.wrap(metric_label(metric), AXIS_LABEL_CHARS))


def validate_figure_spec(spec: Any) -> list[str]:
    """Problems with one figure entry of a scenario (empty when it can be drawn)."""
    if not isinstance(spec, dict):
        return [f"a figure must be a mapping with 'kind', 'metric' and 'title', not {spec!r}"]
    problems = []
    kind = spec.get("kind")
    if kind not in KINDS:
        problems.append(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    metric = spec.get("metric")
    if kind in _NEEDS_METRIC and metric is None:
        problems.append(f"kind {kind!r} needs a 'metric' (one of schema.METRICS)")
    for key in ("metric", "x_metric"):
        if spec.get(key) is not None and spec[key] not in METRICS:
            problems.append(f"{key} {spec[key]!r} is not in schema.METRICS")
    for key in ("xscale", "yscale"):
        if spec.get(key, "linear") not in ("linear", "log"):
            problems.append(f"{key} must be 'linear' or 'log', not {spec[key]!r}")
    for key in ("reference", "quote"):
        if key in spec and not (isinstance(spec[key], str) and spec[key].strip()):
            problems.append(f"{key} must be a non-empty string (an arm's label; the paper's words)")
    if "reference" in spec and kind != "relative_vs_x":
        problems.append("reference is for kind relative_vs_x only")
    if "quote" in spec and kind not in ("metric_vs_x", "relative_vs_x", "bars"):
        problems.append("quote is for kinds metric_vs_x, relative_vs_x and bars only")
    unknown = sorted(set(spec) - _OPTIONAL_KEYS)
    if unknown:
        problems.append(f"unknown keys {', '.join(unknown)} (known: {', '.join(sorted(_OPTIONAL_KEYS))})")
    return problems


def figure_name(index: int, spec: dict[str, Any]) -> str:
    """The file stem of the index-th figure: its ``name``, or number, kind and metric."""
    raw = spec.get("name") or f"{index + 1:02d}-{spec.get('kind')}" + (
        f"-{spec['metric']}" if spec.get("metric") else ""
    )
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(raw)).strip("-") or f"figure-{index + 1}"


# -- drawing ----------------------------------------------------------------------------------


def _new_figure(width_in: float = 8.0, height_in: float = 4.6) -> Figure:
    return Figure(figsize=(width_in, height_in), layout="constrained")


def _finish(fig: Figure, title: str, data: FigureData, quote: str = "") -> None:
    """Title; under the plot the paper's numbers (a figure's ``quote``) and the scale note, in one
    block that constrained layout makes room for (inside the axes a quote covered data points:
    the chain's W = 3 curve, a baseline bar)."""
    fig.suptitle(title, fontsize=11, fontweight="bold")
    lines = textwrap.wrap("The paper: " + quote, 130) if quote else []
    if data.scale_note:
        lines += ([""] if lines else []) + textwrap.wrap(data.scale_note, 130)
    if lines:
        fig.supxlabel("\n".join(lines), fontsize=7.5, color="#555555")


def _errorbar(
    ax: Axes, xs: list[float], summaries: list[Summary], style: ArmStyle, label: str, offset: float = 0.0
) -> bool:
    pts = [(x + offset, s) for x, s in zip(xs, summaries, strict=True) if s.mean is not None]
    if not pts:
        return False
    x = [p[0] for p in pts]
    y = [p[1].mean for p in pts]
    # From the interval's ends (a paired ratio's interval is not symmetric). A point without an
    # interval (n = 1) is drawn without a bar rather than with a zero-length one.
    below = [s.mean - s.ci_low if s.ci_low is not None and s.mean is not None else math.nan for _, s in pts]
    above = [s.ci_high - s.mean if s.ci_high is not None and s.mean is not None else math.nan for _, s in pts]
    yerr = [below, above]
    ax.errorbar(
        x,
        y,
        yerr=yerr,
        color=style.color,
        marker=style.marker,
        linestyle=style.linestyle,
        capsize=3,
        markersize=5,
        label=label,
    )
    return True


def _runs(ax: Axes, xs: list[float], columns: list[list[float]], style: ArmStyle) -> None:
    """Every run as a small hollow dot at its point's x (beside the mean and its interval)."""
    x = [xi for xi, column in zip(xs, columns, strict=True) for _ in column]
    y = [v for column in columns for v in column]
    if x:
        ax.scatter(x, y, s=12, facecolors="none", edgecolors=style.color, linewidths=0.8, alpha=0.7, zorder=3)


def _set_x_axis(ax: Axes, data: FigureData, spec: dict[str, Any]) -> None:
    ax.set_xlabel(data.axis_label)
    if data.numeric_x:
        if spec.get("xscale") == "log":
            ax.set_xscale("log")
    else:
        ax.set_xticks(data.x_positions(), tick_labels(data.points))


def tick_labels(points: Sequence[dict[str, Any]]) -> list[str]:
    """The points' labels under the x axis; past 4 points, a line per comma-separated part, so that
    neighbours do not overlap (wlan-ack-frequency's 8: '802.11b, 10 ms' ran into '802.11b, 80 ms')."""
    labels = [str(p.get("label")) for p in points]
    return [label.replace(", ", ",\n") for label in labels] if len(labels) > 4 else labels


def _no_data(ax: Axes, why: str) -> None:
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, color="#a00000", wrap=True)


# Beyond this many characters an arm's label would make the right column wider than the axes
# (piggyback-guarded's arms, 60-110 characters, left the axes a sliver 0.02 of the figure wide).
LEGEND_BESIDE_MAX_CHARS = 40


def _legend(fig: Figure, ax: Axes) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        # Centred in the right column: at its top it rose into a title longer than the axes
        # (constrained layout does not keep a figure legend and the suptitle apart).
        if max(len(label) for label in labels) <= LEGEND_BESIDE_MAX_CHARS:
            fig.legend(handles, labels, loc="outside right center", fontsize=8, title="arm", title_fontsize=8)
            return
        # Long labels below the axes, across their width: as the axes' own legend, which
        # constrained layout counts with them, so the scale note (supxlabel) stays below it.
        ax.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.2),
            fontsize=8,
            title="arm",
            title_fontsize=8,
        )


def _step(data: FigureData) -> float:
    """A small sideways distance on the x axis: 4 % of the closest two points' spacing."""
    xs = sorted(set(data.x_positions()))
    if data.numeric_x and data.points and len(xs) > 1:
        return min(b - a for a, b in itertools.pairwise(xs)) * 0.04
    return 0.04


def _beside(data: FigureData, log_x: bool, x: float) -> float:
    """How far right of its mean marker a cell's run dots go, so that the marker does not hide them."""
    return x * 0.015 if log_x else _step(data) * 0.45


def _jitter(index: int, count: int, data: FigureData) -> float:
    # Arms at the same x are spread sideways a little so their error bars do not hide each other.
    if count <= 1:
        return 0.0
    return (index - (count - 1) / 2) * _step(data)


def _quote(ax: Axes, spec: dict[str, Any]) -> str:
    """The paper's numbers (``quote``) for the caption; ``_finish`` prints them under the plot."""
    quote = str(spec.get("quote") or "").strip()
    return f" The paper's numbers, quoted: {quote}" if quote else ""


def draw_metric_vs_x(spec: dict[str, Any], data: FigureData) -> tuple[Figure, str]:
    metric = spec["metric"]
    fig = _new_figure()
    ax = fig.add_subplot()
    xs = data.x_positions()
    log_x = spec.get("xscale") == "log"
    drawn = False
    for i, arm in enumerate(data.arms):
        summaries = [_summary(data.group(p, arm), metric, data) for p in data.points]
        offset = 0.0 if log_x else _jitter(i, len(data.arms), data)
        drawn |= _errorbar(ax, xs, summaries, data.styles[arm["label"]], arm["label"], offset)
        _runs(
            ax,
            [x + offset + _beside(data, log_x, x) for x in xs],
            [_values(data.group(p, arm), metric) for p in data.points],
            data.styles[arm["label"]],
        )
    if not drawn:
        _no_data(ax, f"no ok run measured {metric}")
    _set_x_axis(ax, data, spec)
    ax.set_ylabel(axis_label(metric))
    if spec.get("yscale") == "log":
        ax.set_yscale("log")
    _legend(fig, ax)
    caption = (
        f"{METRICS[metric].label} against {data.axis_name}, one line per arm. Filled markers are means "
        f"over the ok repeats, with {_pct(data.confidence)} Student-t confidence intervals of the mean "
        "(none where an arm has a single ok run); hollow dots are the runs themselves."
    ) + _quote(ax, spec)
    return fig, caption


def draw_relative_vs_x(spec: dict[str, Any], data: FigureData) -> tuple[Figure, str]:
    metric = spec["metric"]
    fig = _new_figure()
    ax = fig.add_subplot()
    named = spec.get("reference")
    baseline = next((a for a in data.arms if a["label"] == named), None) if named else data.baseline
    name = f"{named}" if named else "the baseline"
    xs = data.x_positions()
    log_x = spec.get("xscale") == "log"
    drawn = False
    if baseline is None:
        _no_data(
            ax,
            f"no arm {named!r} in these runs: nothing to be relative to"
            if named
            else "no baseline arm (where = none) in this scenario: nothing to be relative to",
        )
    else:
        ax.axhline(1.0, color="#444444", linestyle="--", linewidth=1, label=f"{baseline['label']} (= 1)")
        others = [a for a in data.arms if a is not baseline]
        for i, arm in enumerate(others):
            summaries, columns = [], []
            for p in data.points:
                ratios, effect = data.paired(p, arm, metric, baseline)
                columns.append(ratios if effect is not None and effect.scale == "ratio" else [])
                summaries.append(_as_summary(effect))
            offset = 0.0 if log_x else _jitter(i, len(others), data)
            drawn |= _errorbar(ax, xs, summaries, data.styles[arm["label"]], arm["label"], offset)
            _runs(ax, [x + offset + _beside(data, log_x, x) for x in xs], columns, data.styles[arm["label"]])
        if not drawn:
            _no_data(ax, f"no arm has {metric} where {name} has it too")
    _set_x_axis(ax, data, spec)
    label = "\n".join(textwrap.wrap(METRICS[metric].label, AXIS_LABEL_CHARS))
    ax.set_ylabel(f"{label}\nrelative to {'the reference' if named else 'baseline'} (×)")
    _legend(fig, ax)
    direction = METRICS[metric].better
    reading = {
        "lower": f"Below 1 is better than {name}. ",
        "higher": f"Above 1 is better than {name}. ",
    }
    caption = (
        f"{METRICS[metric].label} of each arm over {name}'s in the same block (same {data.axis_name}, "
        f"repeat and traffic). {reading.get(direction, '')}Filled markers: the geometric mean of the "
        f"per-block ratios, with its {_pct(data.confidence)} interval (paired t on the logs; the verdict's "
        "test); hollow dots: each block's ratio. Blocks with a failed run are left out."
    ) + _quote(ax, spec)
    return fig, caption


def draw_acks_vs_goodput(spec: dict[str, Any], data: FigureData) -> tuple[Figure, str]:
    x_metric = spec.get("x_metric") or "acks_per_data_segment"
    y_metric = spec.get("metric") or "goodput_mbps"
    fig = _new_figure()
    ax = fig.add_subplot()
    points = [p for p in data.points if spec.get("point") in (None, p.get("label"))]
    drawn = False
    for arm in data.arms:
        xy = [
            (r.metrics.get(x_metric), r.metrics.get(y_metric))
            for p in points
            if (g := data.group(p, arm)) is not None
            for r in g.ok
        ]
        xy = [(x, y) for x, y in xy if x is not None and y is not None]
        if xy:
            style = data.styles[arm["label"]]
            ax.scatter(
                [x for x, _ in xy],
                [y for _, y in xy],
                marker=style.marker,
                color=style.color,
                s=30,
                alpha=0.8,
                label=arm["label"],
            )
            drawn = True
    if not drawn:
        _no_data(ax, f"no ok run has both {x_metric} and {y_metric}")
    ax.set_xlabel(axis_label(x_metric))
    ax.set_ylabel(axis_label(y_metric))
    for key, setter in (("xscale", ax.set_xscale), ("yscale", ax.set_yscale)):
        if spec.get(key) == "log":
            setter("log")
    _legend(fig, ax)
    where = f"at {spec['point']}" if spec.get("point") else _pooled(points, data)
    caption = f"One marker per ok run, {where}: {METRICS[x_metric].label} against {METRICS[y_metric].label}."
    return fig, caption


def _pooled(points: list[dict[str, Any]], data: FigureData) -> str:
    if len(points) == 1:
        return f"at {data.axis_name} {points[0].get('label')}"
    return f"all {len(points)} points of {data.axis_name} pooled"


def draw_bars(spec: dict[str, Any], data: FigureData) -> tuple[Figure, str]:
    metric = spec["metric"]
    n_arms = max(1, len(data.arms))
    fig = _new_figure(width_in=max(8.0, min(14.0, 1.2 + 0.35 * n_arms * len(data.points))))
    ax = fig.add_subplot()
    width = 0.8 / n_arms
    drawn = False
    for i, arm in enumerate(data.arms):
        style = data.styles[arm["label"]]
        summaries = [_summary(data.group(p, arm), metric, data) for p in data.points]
        centers = [j + (i - (n_arms - 1) / 2) * width for j in range(len(data.points))]
        bars = [(c, s) for c, s in zip(centers, summaries, strict=True) if s.mean is not None]
        if not bars:
            continue
        ax.bar(
            [c for c, _ in bars],
            [s.mean for _, s in bars],
            width=width * 0.95,
            color=style.color,
            alpha=0.85 if arm.get("where") != BASELINE else 0.55,
            label=arm["label"],
        )
        _runs(
            ax,
            centers,
            [_values(data.group(p, arm), metric) for p in data.points],
            ArmStyle("#222222", "o", "-"),
        )
        with_ci = [(c, s) for c, s in bars if s.half_width is not None]
        if with_ci:
            ax.errorbar(
                [c for c, _ in with_ci],
                [s.mean for _, s in with_ci],
                yerr=[s.half_width for _, s in with_ci],
                fmt="none",
                ecolor="black",
                capsize=3,
                linewidth=1,
            )
        drawn = True
    if not drawn:
        _no_data(ax, f"no ok run measured {metric}")
    ax.set_xticks(range(len(data.points)), tick_labels(data.points))
    ax.set_xlabel(data.axis_label)
    ax.set_ylabel(axis_label(metric))
    ax.grid(axis="x", visible=False)
    _legend(fig, ax)
    caption = (
        f"{METRICS[metric].label} per {data.axis_name} (group) and arm (bar): means over the ok repeats "
        f"with {_pct(data.confidence)} Student-t confidence intervals (no bar where an arm has a single "
        "ok run); hollow dots are the runs themselves."
    ) + _quote(ax, spec)
    return fig, caption


_TIMELINE_COLUMNS = 4  # arms side by side before the panels wrap to a new band


def draw_timeline(spec: dict[str, Any], data: FigureData) -> tuple[Figure, str]:
    wanted = spec.get("point")
    point = next((p for p in data.points if p.get("label") == wanted), None) if wanted else None
    if point is None and data.points:
        point = data.points[0]
    arms = data.arms or [{"label": "none", "where": BASELINE}]
    columns = min(len(arms), _TIMELINE_COLUMNS)
    bands = math.ceil(len(arms) / columns)
    fig = _new_figure(width_in=max(8.0, 1.5 + 2.9 * columns), height_in=0.9 + 3.9 * bands)
    # Each arm is a band of two panels, cwnd above ACK rate; all panels share the time axis, and
    # panels of one kind share their y axis so that arms compare at a glance.
    axes = fig.subplots(2 * bands, columns, sharex=True, squeeze=False)
    cwnd_axes = [axes[2 * b][c] for b in range(bands) for c in range(columns)]
    rate_axes = [axes[2 * b + 1][c] for b in range(bands) for c in range(columns)]
    for kind in (cwnd_axes, rate_axes):
        for ax in kind[1:]:
            ax.sharey(kind[0])
    flow_colors: dict[str, str] = {}
    cwnd_unit = spec.get("cwnd_unit", "segments")
    for i, (top, bottom) in enumerate(zip(cwnd_axes, rate_axes, strict=True)):
        if i >= len(arms):
            top.set_visible(False)
            bottom.set_visible(False)
            continue
        arm = arms[i]
        group = data.group(point, arm) if point is not None else None
        record = group.ok[0] if group is not None and group.ok else None
        top.set_title(arm["label"] + (f" (repeat {record.repeat})" if record else ""), fontsize=8)
        bottom.set_xlabel("time (s)")
        bottom.xaxis.set_tick_params(labelbottom=True)
        if i % columns == 0:
            top.set_ylabel(f"cwnd ({cwnd_unit})")
            bottom.set_ylabel("ACK rate (ACKs/s)")
        if record is None:
            _no_data(top, "no ok run")
            continue
        for ax, series_key, value_key in ((top, "cwnd", "cwnd"), (bottom, "ack_rate", "acks_per_s")):
            entries = record.series.get(series_key, [])
            if not entries:
                _no_data(ax, f"no {series_key} series recorded")
            for entry in entries:
                flow = str(entry.get("flow"))
                color = flow_colors.setdefault(flow, _COLORS[len(flow_colors) % len(_COLORS)])
                t, v = entry.get("t_s", []), entry.get(value_key, [])
                ax.plot(t[: len(v)], v[: len(t)], color=color, linewidth=1, label=flow)
    handles: dict[str, Any] = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside right upper", fontsize=8, title="flow")
    where = f"{data.axis_name} {point.get('label')}" if point is not None else "no point"
    caption = (
        f"Congestion window (upper panel) and pure-ACK rate (lower panel) against time in the first ok "
        f"repeat of each arm at {where}; one line per flow, a pair of panels per arm. A single run each: "
        "these show dynamics, not averages."
    )
    return fig, caption


def draw_estimate_vs_cwnd(spec: dict[str, Any], data: FigureData) -> tuple[Figure, str]:
    wanted = spec.get("point")
    point = next((p for p in data.points if p.get("label") == wanted), None) if wanted else None
    if point is None and data.points:
        point = data.points[0]
    runs = []
    for arm in data.arms:
        group = data.group(point, arm) if point is not None else None
        record = next((r for r in group.ok if r.series.get("cwnd_estimate")), None) if group else None
        if record is not None:
            runs.append((arm, record))
    columns = max(1, min(len(runs), 3))
    bands = max(1, math.ceil(len(runs) / columns))
    fig = _new_figure(width_in=max(8.0, 1.5 + 3.6 * columns), height_in=0.9 + 3.2 * bands)
    axes = fig.subplots(bands, columns, squeeze=False, sharex=True)
    if not runs:
        _no_data(axes[0][0], "no run recorded a window estimate (policies with one: 4w, smartacking, acc)")
    for i, ax in enumerate(axes.flat):
        if i >= len(runs):
            ax.set_visible(i == 0 and not runs)
            continue
        arm, record = runs[i]
        cwnd = {str(e.get("flow")): e for e in record.series.get("cwnd", [])}
        for j, entry in enumerate(record.series["cwnd_estimate"]):
            flow = str(entry.get("flow"))
            color = _COLORS[j % len(_COLORS)]
            truth = cwnd.get(flow)
            if truth is not None:
                label = f"{flow}: sender's cwnd"
                ax.plot(truth["t_s"], truth["cwnd"], color=color, linewidth=1.2, label=label)
            ax.step(
                entry["t_s"],
                entry["estimate"],
                where="post",
                color=color,
                linestyle="--",
                linewidth=1,
                label=f"{flow}: receiver's estimate ({entry.get('estimator')})",
            )
        error = record.metrics.get("cwnd_estimate_error")
        said = f"median |error| in CA {error:.0%}" if isinstance(error, int | float) else "no CA samples"
        ax.set_title(f"{arm['label']} (repeat {record.repeat}): {said}", fontsize=8)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("window (segments)")
        ax.legend(fontsize=7)
    where = f"{data.axis_name} {point.get('label')}" if point is not None else "no point"
    caption = (
        f"The sender's congestion window (solid, ss every 0.1 s) and the receiver's estimate of it "
        f"(dashed, at each change) against time, in the first ok repeat of each arm that keeps an "
        f"estimate, at {where}. The error is the median of |estimate - cwnd| / cwnd over the ss "
        "samples taken in congestion avoidance (ssthresh set, cwnd at or above it, no more segments "
        "unacknowledged than cwnd: not a recovery without SACK). A single run "
        "each: dynamics, not averages."
    )
    return fig, caption


def _values(group: Group | None, metric: str) -> list[float]:
    return [float(v) for v in group.values(metric) if v is not None] if group is not None else []


def _as_summary(effect: PairedEffect | None) -> Summary:
    """A paired effect drawn like a mean with its interval (a ratio; nothing for a difference)."""
    if effect is None or effect.estimate is None or effect.scale != "ratio":
        return Summary(0, None, None, None, None, None)
    if effect.ci_low is None or effect.ci_high is None:
        return Summary(effect.n, effect.estimate, None, None, None, None)
    half = max(effect.estimate - effect.ci_low, effect.ci_high - effect.estimate)  # not drawn: the ends are
    return Summary(effect.n, effect.estimate, effect.ci_low, effect.ci_high, half, None)


def _summary(group: Group | None, metric: str, data: FigureData) -> Summary:
    if group is None:
        return Summary(0, None, None, None, None, None)
    return group.metrics.get(metric) or mean_ci(group.values(metric), data.confidence)


def _pct(confidence: float) -> str:
    return f"{confidence * 100:g} %"


_DRAW = {
    "metric_vs_x": draw_metric_vs_x,
    "relative_vs_x": draw_relative_vs_x,
    "acks_vs_goodput": draw_acks_vs_goodput,
    "bars": draw_bars,
    "timeline": draw_timeline,
    "estimate_vs_cwnd": draw_estimate_vs_cwnd,
}


def default_title(spec: dict[str, Any], data: FigureData) -> str:
    kind, metric = spec.get("kind"), spec.get("metric")
    label = METRICS[metric].label if metric in METRICS else ""
    return {
        "metric_vs_x": f"{label} vs {data.axis_name}",
        "relative_vs_x": f"{label} relative to baseline vs {data.axis_name}",
        "acks_vs_goodput": "ACKs per data segment vs goodput",
        "bars": f"{label} per {data.axis_name} and arm",
        "timeline": "cwnd and ACK rate over time",
        "estimate_vs_cwnd": "the receiver's window estimate beside the sender's cwnd",
    }.get(str(kind), str(kind))


def save_figure(fig: Figure, directory: Path, name: str) -> tuple[Path, Path]:
    """Write ``name.png`` and ``name.svg`` into ``directory``; the same figure gives the same bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    png, svg = directory / f"{name}.png", directory / f"{name}.svg"
    with matplotlib.rc_context(_STYLE):
        fig.savefig(png, format="png", dpi=PNG_DPI, metadata=_PNG_METADATA)
        fig.savefig(svg, format="svg", metadata=_SVG_METADATA)
    return png, svg


def render_figure(spec: dict[str, Any], data: FigureData, directory: Path, name: str) -> RenderedFigure:
    """Draw one figure (its spec already valid) and write its PNG and SVG."""
    title = str(spec.get("title") or default_title(spec, data))
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(_STYLE)
        fig, caption = _DRAW[spec["kind"]](spec, data)
        _finish(fig, title, data, str(spec.get("quote") or "").strip())
        png, svg = save_figure(fig, directory, name)
    caption = caption[:1].upper() + caption[1:]
    if data.scale_note:
        caption = f"{caption} {data.scale_note}"
    return RenderedFigure(name, spec["kind"], title, caption, png, svg, float(fig.get_figwidth()))


def render_figures(
    specs: Sequence[Any], data: FigureData, directory: Path
) -> tuple[list[RenderedFigure], list[str]]:
    """Every drawable figure of ``specs`` into ``directory``, and a note for each one skipped."""
    rendered, skipped = [], []
    for i, spec in enumerate(specs):
        problems = validate_figure_spec(spec)
        if problems:
            skipped.append(f"figure {i + 1} ({spec!r}) not drawn: " + "; ".join(problems))
            continue
        rendered.append(render_figure(spec, data, directory, figure_name(i, spec)))
    return rendered, skipped
