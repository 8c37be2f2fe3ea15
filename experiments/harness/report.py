"""The report of an experiment's results directory: ``report.html``, ``report.md`` and ``figures/``.

``report.html`` is one self-contained file (CSS inline, figures embedded as base64 SVG, no
external reference): it opens from disk in any browser. ``report.md`` has the same tables and links
the figures in ``figures/`` (PNG and SVG of each). Both are rebuilt from ``runs.jsonl`` and
``manifest.json`` alone, so re-running the report on the same directory gives the same files.

What a reader gets: what the scenario reproduces, its set-up and the scale applied to fit bmv2 (in
the header, in every figure and caption), the code and tool versions, the exact command; a results
table per scenario (mean ± half-width of the Student-t confidence interval, n) with failed runs
counted and their reasons; a verdict table that names, for the main metric at each point, the best
arm of each place (host, switch, AP, combined) against the baseline; and the scenario's figures.

Figure files in ``figures/`` that the current report does not draw are removed: the directory
belongs to the report.
"""

from __future__ import annotations

import base64
import csv
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import numpy as np

from ackwise.experiments.harness.comparison import (
    CATEGORIES,
    COMBINED,
    INERT_THINNED_FRACTION,
    SHARED_VERSIONS,
    ArmResult,
    RunKey,
    arm_results,
    best_per_category,
    category,
    describe_effect,
    effect_text,
    emulator_limited,
    excluded_runs,
    provenance_differences,
    provenance_rows,
    strength,
    verdict_text,
)
from ackwise.experiments.harness.figures import FigureData, RenderedFigure, render_figures
from ackwise.experiments.harness.scenario import UDP_ANSWERS
from ackwise.experiments.harness.schema import BASELINE, METRICS, PER_POINT, RunRecord
from ackwise.experiments.harness.stats import (
    DEFAULT_CONFIDENCE,
    Group,
    Summary,
    group_records,
    present,
    split_groups,
)
from ackwise.experiments.harness.store import ResultStore
from ackwise.topologies.timescale import point_scale, unscaled_agent_timers_text

HTML_FILE = "report.html"
MARKDOWN_FILE = "report.md"
FIGURES_DIR = "figures"
CSV_DIR = "tables"
CONFIRM_DIR = "confirm"  # the confirmation pass's results, inside the screening's directory
CATEGORY_TITLES = {"host": "host", "switch": "switch", "ap": "AP", COMBINED: "combined"}
_WHERE_ORDER = {BASELINE: 0, **{p: i + 1 for i, p in enumerate(CATEGORIES)}}


class ReportError(Exception):
    """The records cannot be reported as asked; the message says what to do."""


_TEMPLATES = Path(__file__).parent / "templates"
_SCREEN_PX_PER_IN = 120  # figures drawn in inches shown a little larger than 96 px/in, for legibility


# -- formatting ---------------------------------------------------------------------------------


def _decimals(summary: Summary) -> int:
    # Two significant digits of the half-width, the mean to the same decimal; four significant
    # digits of the mean when there is no interval to go by.
    hw, mean = summary.half_width, summary.mean
    if hw is not None and hw > 0:
        return min(6, max(0, 1 - math.floor(math.log10(hw))))
    if mean is None or mean == 0:
        return 0
    return min(6, max(0, 3 - math.floor(math.log10(abs(mean)))))


def format_summary(summary: Summary) -> str:
    """'2.5 ± 2.1 (4)': mean ± half-width (n); '7.000 (1)' for one value; '– (0)' for none."""
    if summary.mean is None:
        return "– (0)"
    d = _decimals(summary)
    if summary.half_width is None:
        return f"{summary.mean:.{d}f} ({summary.n})"
    if summary.half_width == 0:
        # Identical values: "0.5 ± 0 (3)", not "0.5000 ± 0.0000 (3)".
        mean = f"{summary.mean:.{d}f}"
        return f"{mean.rstrip('0').rstrip('.') if '.' in mean else mean} ± 0 ({summary.n})"
    return f"{summary.mean:.{d}f} ± {summary.half_width:.{d}f} ({summary.n})"


def format_change(change: float | None) -> str:
    return "–" if change is None else f"{change:+.1f} %"


def scale_note(scale: dict[str, Any] | None) -> str:
    """The one sentence every header, caption and figure carries about scaling."""
    if not scale:
        return "Scale: the scenario states no scale factor."
    factor, what = scale.get("factor"), str(scale.get("what") or "").strip().rstrip(".")
    if factor == 1:
        return "Not scaled (scale factor 1)" + (f": {what}." if what else ".")
    factor_text = f"{factor:g}" if isinstance(factor, int | float) else str(factor)
    return f"Scaled to fit bmv2, scale factor {factor_text}" + (f": {what}." if what else ".")


def point_scale_notes(scenario: dict[str, Any]) -> list[str]:
    """Per 802.11 point (issue 37's header): its time scale, RTTmin and BDP in segments beside the
    TACK paper's, and the kernel timers that do not scale, in RTTs, in reality and on the test bed.
    Only where the scenario's scale.factor is PER_POINT: scenarios that state one number, and the
    records published under them, keep their header."""
    if (scenario.get("scale") or {}).get("factor") != PER_POINT:
        return []
    common = scenario.get("params") or {}
    tcp = (scenario.get("traffic") or {}).get("kind") != UDP_ANSWERS
    places = _agent_places(scenario.get("arms") or [])
    notes = []
    for p in scenario.get("points") or []:
        s = point_scale(dict(common) | dict(p.get("params") or {})) if isinstance(p, dict) else None
        if s is None:
            continue
        paper = f"the paper's {s.paper_bdp_segments:.0f} at its PHY rate"
        if s.paper_udp_bdp_segments is not None:
            paper += f", {s.paper_udp_bdp_segments:.0f} at its UDP baseline"
        kernel = (
            f"Linux's timers that do not scale, in RTTs, reality -> test bed: {s.timers_text()}"
            if tcp
            else "no TCP, so no kernel timer applies"
        )
        agents = unscaled_agent_timers_text(s.k, places)
        notes.append(
            f"{p.get('label')}: k = {s.k:g}; RTTmin {s.rtt_ms:.1f} ms; BDP {s.bdp_segments:.0f} "
            f"segments ({paper}); {kernel}"
            + (
                f"; our agents' timers that run in real time, real -> emulated network's: {agents}"
                if agents
                else ""
            )
        )
    return notes


def _agent_places(arms: Iterable[Any]) -> set[str]:
    """Where the scenario's arms run an agent with timers of its own: ``ap`` (the AP proxy's repair
    agent), ``auto`` (the per-flow controller)."""
    places = set()
    for arm in arms:
        if not isinstance(arm, dict):
            continue
        if arm.get("ap"):
            places.add("ap")
        switch = arm.get("switch")  # a name (the YAML) or a policy's {name, params} (a record's)
        if (switch.get("name") if isinstance(switch, dict) else switch) == "auto":
            places.add("auto")
    return places


def describe(value: Any) -> str:
    """A scenario value as one line: 'name=dumbbell, params=(bw_mbit=10, delay_ms=20)'."""
    if isinstance(value, dict):
        return ", ".join(
            f"{k}=({describe(v)})" if isinstance(v, dict) else f"{k}={describe(v)}" for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    return str(value)


def _counted(counter: Counter[str], noun: str) -> str:
    if len(counter) == 1:
        return next(iter(counter))
    return ", ".join(f"{value} ({n} {noun}{'s' if n != 1 else ''})" for value, n in counter.most_common())


# -- the report's content -------------------------------------------------------------------------


@dataclass
class MetricColumn:
    key: str
    label: str
    unit: str
    better: str

    @property
    def heading(self) -> str:
        return f"{self.key} ({self.unit})" if self.unit else self.key

    @property
    def direction(self) -> str:
        return {"lower": "lower is better", "higher": "higher is better"}.get(self.better, "not judged")


@dataclass
class ResultRow:
    point: str
    where: str
    arm: str
    cells: list[str]
    summaries: list[Summary]
    failed: int
    runs: list[str] = field(default_factory=list)  # per metric: every ok run's value, by repeat
    split: list[bool] = field(default_factory=list)  # per metric: the runs form two groups
    dots: list[markupsafe.Markup] = field(default_factory=list)  # per metric: the runs as an inline SVG


@dataclass
class VerdictCell:
    arm: str | None  # None: no arm of this place at this point
    value: str = ""
    change: str = ""
    status: str = ""


@dataclass
class VerdictRow:
    point: str
    baseline: str
    cells: list[VerdictCell]
    best: str


@dataclass
class Verdict:
    metric: MetricColumn
    categories: list[str]
    rows: list[VerdictRow]
    note: str = ""
    baseline_arm: str = ""  # the scenario's baseline_arm ("": nothing on)

    @property
    def category_titles(self) -> list[str]:
        return [CATEGORY_TITLES.get(c, c) for c in self.categories]


@dataclass
class FigureView:
    number: int
    name: str
    title: str
    caption: str
    png: str  # relative to the results directory
    svg: str
    svg_data_uri: str
    width_px: int  # the figure's natural width on screen: wide figures may use the page's width


@dataclass
class EffectRow:
    """One arm at one point, over the baseline of its blocks, on each metric of the section."""

    point: str
    arm: str
    cells: list[str]  # per metric: the paired effect, then the verdict where the metric has a direction


@dataclass
class ScenarioSection:
    name: str
    anchor: str
    metrics: list[MetricColumn]
    rows: list[ResultRow]
    failures: list[str]
    verdict: Verdict
    figures: list[FigureView] = field(default_factory=list)
    skipped_figures: list[str] = field(default_factory=list)
    effects: list[ArmResult] = field(default_factory=list)  # every arm's paired effect (the verdict's runs)
    effect_rows: list[EffectRow] = field(default_factory=list)  # every arm, every metric (verdict runs)


@dataclass
class Report:
    title: str
    description: str
    reproduces: list[dict[str, str]]
    scale_note: str
    point_notes: list[str]  # point_scale_notes: empty but for 802.11 points
    setup: list[tuple[str, str]]
    points: list[tuple[str, str, str]]
    arms: list[tuple[str, str, str]]
    provenance: list[tuple[str, str]]
    tools: list[tuple[str, str]]
    command: str
    other_commands: list[str]
    runs_ok: int
    runs_failed: int
    runs_superseded: int
    confidence_pct: str
    sections: list[ScenarioSection]
    warnings: list[str]
    scenario_json: str
    run_provenance: list[tuple[str, str]] = field(default_factory=list)  # comparison.provenance_rows
    excluded: list[str] = field(default_factory=list)  # runs left out of the verdicts, and why
    flagged: list[str] = field(
        default_factory=list
    )  # runs the emulator limited (comparison.emulator_limited)
    verdict_source: str = ""  # which runs the verdict rests on (screening, or the confirmation pass)
    csv: list[str] = field(default_factory=list)  # CSV files beside the tables, relative paths


@dataclass(frozen=True)
class ReportPaths:
    directory: Path
    html: Path
    markdown: Path
    figures: list[Path]  # a PNG and an SVG per figure


def _labels(*sources: Any) -> list[str]:
    """Labels in the order the sources list them: each a list of labels or of dicts with 'label'."""
    order: dict[str, None] = {}
    for source in sources:
        for item in source if isinstance(source, list) else []:
            label = item.get("label") if isinstance(item, dict) else item
            if label is not None:
                order.setdefault(str(label), None)
    return list(order)


def _ordered_points(listed: list[str], groups: Sequence[Group]) -> list[dict[str, Any]]:
    """The points that have runs: in the scenario's (or matrix's) order, then any other by x."""
    from_runs = {g.point_label: g.point for g in groups}  # the records' points carry the x values

    def sort_key(p: dict[str, Any]) -> tuple[int, float, str]:
        x = p.get("x")
        numeric = isinstance(x, int | float) and not isinstance(x, bool)
        return (0 if numeric else 1, float(x) if numeric else 0.0, str(p.get("label")))

    known = [from_runs[label] for label in listed if label in from_runs]
    others = sorted((p for label, p in from_runs.items() if label not in listed), key=sort_key)
    return known + others


def _ordered_arms(listed: list[str], groups: Sequence[Group]) -> list[dict[str, Any]]:
    """The arms that have runs: baseline, host, switch, AP, combined; within each, as listed."""
    from_runs = {g.arm_label: g.arm for g in groups}
    order = listed + [label for label in from_runs if label not in listed]
    index = {label: i for i, label in enumerate(order)}
    return sorted(
        from_runs.values(),
        key=lambda a: (_WHERE_ORDER.get(category(str(a.get("where"))), 99), index[str(a.get("label"))]),
    )


def _metric_columns(
    scenario: dict[str, Any], records: list[RunRecord], warnings: list[str]
) -> list[MetricColumn]:
    wanted = scenario.get("metrics")
    if isinstance(wanted, list) and wanted:
        unknown = [m for m in wanted if m not in METRICS]
        if unknown:
            warnings.append(
                f"scenario metrics {', '.join(map(str, unknown))} are not in schema.METRICS and are not shown"
            )
        keys = [m for m in wanted if m in METRICS]
    else:
        seen = {m for r in records for m in r.metrics}
        keys = [m for m in METRICS if m in seen]
        if keys:
            warnings.append(
                "the scenario names no 'metrics'; showing every metric recorded, "
                f"{keys[0]} taken as the main one"
            )
    return [MetricColumn(k, METRICS[k].label, METRICS[k].unit, METRICS[k].better) for k in keys]


def _verdict(
    metric: MetricColumn,
    points: list[dict[str, Any]],
    arms: list[dict[str, Any]],
    groups: dict[tuple[str, str], Group],
    results: list[ArmResult],
    baseline_arm: str = "",
) -> Verdict:
    """Per point and place, the arm with the best paired effect against the baseline (the
    scenario's baseline_arm, else nothing on)."""
    categories = [c for c in CATEGORIES if any(category(str(a.get("where"))) == c for a in arms)]
    if metric.better not in ("lower", "higher"):
        note = f"{metric.key} has no better direction in schema.METRICS, so no arm is ranked on it."
        return Verdict(metric, categories, [], note, baseline_arm)
    best = best_per_category(results, metric.better)
    inert = [f"{r.label} at {r.point} ({r.inert})" for r in results if r.inert]
    note = (
        f"Not ranked, inert (its switches thinned at most {100 * INERT_THINNED_FRACTION:g} % of the "
        f"pure ACKs they saw, so its runs are the baseline's): {'; '.join(inert)}."
        if inert
        else ""
    )
    rows = []
    for p in points:
        label = str(p.get("label"))
        base_group = next(
            (
                groups.get((label, str(a.get("label"))))
                for a in arms
                if (a.get("label") == baseline_arm if baseline_arm else a.get("where") == BASELINE)
            ),
            None,
        )
        base = base_group.metrics.get(metric.key) if base_group is not None else None
        cells = []
        winners: list[tuple[str, ArmResult]] = []
        for c in categories:
            r = best.get((label, c))
            if r is None:
                cells.append(VerdictCell(None))
                continue
            winners.append((c, r))
            group = groups.get((label, r.label))
            failed = group.n_failed if group is not None else 0
            runs = (
                f"; {failed} of {failed + len(group.ok)} runs failed" if group is not None and failed else ""
            )
            assert r.effect is not None
            cells.append(
                VerdictCell(
                    r.label,
                    format_summary(group.metrics[metric.key]) if group is not None else "",
                    effect_text(r.effect),
                    verdict_text(r.effect, metric.better)
                    + runs
                    + ("; its runs split in two groups" if r.split else ""),
                )
            )
        base_text = format_summary(base) if base is not None else "no baseline run"
        rows.append(
            VerdictRow(
                label,
                f"{baseline_arm}: {base_text}" if baseline_arm else base_text,
                cells,
                _best(metric, winners),
            )
        )
    return Verdict(metric, categories, rows, note, baseline_arm)


def _best(metric: MetricColumn, winners: list[tuple[str, ArmResult]]) -> str:
    """The best place at a point: the largest effect among the places' best arms that are better."""
    better = [
        (c, r) for c, r in winners if r.effect is not None and r.effect.verdict(metric.better) == "better"
    ]
    if not winners:
        return "no arm with ACK reduction has a result"
    if not better:
        return "none better than the baseline (paired, at the blocks run)"
    place, r = max(better, key=lambda cr: strength(cr[1].effect, metric.better))  # type: ignore[arg-type]
    assert r.effect is not None
    return f"{CATEGORY_TITLES.get(place, place)}: {r.label}, {describe_effect(r.effect, metric.better)}"


def _short(value: float) -> str:
    return f"{value:.4g}"


_DOT_WIDTH, _DOT_HEIGHT = 90, 12
_DOT_SPAN = 0.25  # the strip spans the cell's median ± 25 % (at least ± 1 where the median is near 0)


def _dots(values: list[float]) -> markupsafe.Markup:
    """Every run of a cell as a dot on a strip spanning its median ± 25 %, as inline SVG: the
    same relative scale in every cell, so a wide spread looks wide anywhere. A run beyond the
    strip sits at its end as an open dot."""
    if not values:
        return markupsafe.Markup("")
    median = float(np.median(values))
    half = max(abs(median) * _DOT_SPAN, 1.0 if abs(median) < 4 else 0.0)
    circles = []
    for v in values:
        position = min(1.0, max(0.0, (v - (median - half)) / (2 * half)))
        outside = abs(v - median) > half
        circles.append(
            f'<circle cx="{4 + position * (_DOT_WIDTH - 8):.1f}" cy="{_DOT_HEIGHT / 2}" r="2.6"'
            + (' class="beyond"/>' if outside else "/>")
        )
    return markupsafe.Markup(
        f'<svg class="dots" width="{_DOT_WIDTH}" height="{_DOT_HEIGHT}" role="img" '
        f'aria-label="{len(values)} runs"><line x1="2" x2="{_DOT_WIDTH - 2}" y1="{_DOT_HEIGHT / 2}" '
        f'y2="{_DOT_HEIGHT / 2}"/><line class="mid" x1="{_DOT_WIDTH / 2}" x2="{_DOT_WIDTH / 2}" y1="2" '
        f'y2="{_DOT_HEIGHT - 2}"/>{"".join(circles)}</svg>'
    )


def _failures(groups: Iterable[Group]) -> list[str]:
    out = []
    for g in groups:
        for r in g.failed:
            out.append(
                f"point {g.point_label}, arm {g.arm_label}, repeat {r.repeat} (run {r.run_id}): {r.reason}"
            )
    return out


def _anchor(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-") or "scenario"


def check_provenance(records: list[RunRecord], where: Path, allow_mixed: bool, warnings: list[str]) -> None:
    """Refuse to pool runs whose provenance differs (comparison.provenance_differences), unless
    allowed: then say, in the report, what differs."""
    differences = provenance_differences(records)
    if not differences:
        return
    shown = "; ".join(differences[:_MAX_DIFFERENCES]) + (
        f"; and {len(differences) - _MAX_DIFFERENCES} more" if len(differences) > _MAX_DIFFERENCES else ""
    )
    if not allow_mixed:
        raise ReportError(
            f"{where}: its runs were made under different conditions, which a report does not pool "
            f"unasked: {shown}. Report them apart, or pass --allow-mixed-provenance to pool them."
        )
    warnings.append(f"runs pooled although their provenance differs (--allow-mixed-provenance): {shown}")


_MAX_DIFFERENCES = 6


def _verdict_runs(
    store: ResultStore,
    records: list[RunRecord],
    excluded: dict[RunKey, str],
    allow_mixed_provenance: bool,
    warnings: list[str],
) -> tuple[list[RunRecord], dict[RunKey, str], str]:
    """The runs the verdict rests on, those of them excluded (comparison.excluded_runs), and a
    sentence saying which: the confirmation pass where the directory holds one, else these
    (screening) runs."""
    confirm_dir = store.directory / CONFIRM_DIR
    if (confirm_dir / "manifest.json").is_file():
        confirmed = ResultStore.load(confirm_dir).records()
        check_provenance(confirmed, confirm_dir, allow_mixed_provenance, warnings)
        if confirmed:
            blocks = len({(str(r.point.get("label")), r.repeat) for r in confirmed})
            return (
                confirmed,
                excluded_runs(confirmed, emulator_limited),
                f"the confirmation pass only ({len(confirmed)} runs in {blocks} blocks, {CONFIRM_DIR}/): "
                "the baseline and the best arm of each place per point, chosen on these screening runs",
            )
    return records, excluded, "screening runs (no confirmation pass in this directory)"


def _scale(scenario: dict[str, Any], records: list[RunRecord], warnings: list[str]) -> dict[str, Any] | None:
    """The scale the scenario states (or the runs', if it states none); runs made at another
    scale are named in a warning."""
    scale = scenario.get("scale")
    record_scales = Counter(json.dumps(r.scale, sort_keys=True) for r in records)
    if not scale and record_scales:
        scale = json.loads(record_scales.most_common(1)[0][0])
    for text, n in record_scales.items():
        if scale and json.loads(text) != scale:
            warnings.append(f"{n} run(s) were made with scale {text}, not the scenario's {json.dumps(scale)}")
    return scale


def _result_rows(
    points: list[dict[str, Any]],
    arms: list[dict[str, Any]],
    by_key: dict[tuple[str, str], Group],
    metrics: list[MetricColumn],
) -> list[ResultRow]:
    """The results table: a row per point and arm that has runs, every metric's summary and runs."""
    rows = []
    for p in points:
        for a in arms:
            g = by_key.get((str(p.get("label")), str(a.get("label"))))
            if g is None:
                continue
            summaries = [g.metrics[m.key] for m in metrics]
            values = [present(g.values(m.key)) for m in metrics]
            rows.append(
                ResultRow(
                    g.point_label,
                    g.where,
                    g.arm_label,
                    [format_summary(s) for s in summaries],
                    summaries,
                    g.n_failed,
                    [", ".join(_short(v) for v in vs) for vs in values],
                    [split_groups(vs) is not None for vs in values],
                    [_dots(vs) for vs in values],
                )
            )
    return rows


def _figure_view(number: int, fig: RenderedFigure) -> FigureView:
    return FigureView(
        number,
        fig.name,
        fig.title,
        fig.caption,
        f"{FIGURES_DIR}/{fig.png.name}",
        f"{FIGURES_DIR}/{fig.svg.name}",
        "data:image/svg+xml;base64," + base64.b64encode(fig.svg.read_bytes()).decode("ascii"),
        round(fig.width_in * _SCREEN_PX_PER_IN),
    )


def _section_verdict(
    records: list[RunRecord],
    metrics: list[MetricColumn],
    points: list[dict[str, Any]],
    arms: list[dict[str, Any]],
    excluded: dict[RunKey, str],
    confidence: float,
    baseline_arm: str = "",
) -> tuple[Verdict, list[ArmResult], list[EffectRow]]:
    """The verdict on the main metric from these runs, every arm's paired effect on it against the
    baseline (``baseline_arm``, the scenario's; else nothing on), and every arm's on every metric."""
    if not metrics:
        return Verdict(MetricColumn("-", "-", "", ""), [], [], "no metrics to judge"), [], []
    groups = {
        (g.point_label, g.arm_label): g for g in group_records(records, [m.key for m in metrics], confidence)
    }
    per_metric = [arm_results(records, m.key, excluded, confidence, baseline_arm) for m in metrics]
    verdict = _verdict(metrics[0], points, arms, groups, per_metric[0], baseline_arm)
    return verdict, per_metric[0], _effect_rows(metrics, per_metric, points, arms)


def _effect_rows(
    metrics: list[MetricColumn],
    per_metric: list[list[ArmResult]],
    points: list[dict[str, Any]],
    arms: list[dict[str, Any]],
) -> list[EffectRow]:
    """Every arm at every point over the baseline of its blocks (the verdict's runs, paired as the
    verdict pairs them), on every metric, in the results table's order: what a claim checks beside
    the main metric (fairness, ACKs per segment, retransmissions) read from the report, not
    computed again elsewhere."""
    cells: dict[tuple[str, str], list[str]] = {}
    for i, (metric, results) in enumerate(zip(metrics, per_metric, strict=True)):
        for r in results:
            if r.effect is None:
                continue
            row = cells.setdefault((r.point, r.label), ["–"] * len(metrics))
            if r.effect.estimate is None:
                row[i] = "no block with both runs"
            elif metric.better in ("lower", "higher"):
                row[i] = f"{effect_text(r.effect)}, {verdict_text(r.effect, metric.better)}"
            else:
                row[i] = effect_text(r.effect)
    point_order = {str(p.get("label")): i for i, p in enumerate(points)}
    arm_order = {str(a.get("label")): i for i, a in enumerate(arms)}
    ordered = sorted(
        cells.items(),
        key=lambda kv: (point_order.get(kv[0][0], len(point_order)), arm_order.get(kv[0][1], len(arm_order))),
    )
    return [EffectRow(point, arm, row) for (point, arm), row in ordered]


def build_report(
    store: ResultStore,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    draw_figures: bool = True,
    allow_mixed_provenance: bool = False,
) -> Report:
    """Everything the report shows, and (``draw_figures``) its figure files written. The verdict
    rests on the confirmation pass where the directory holds one (CONFIRM_DIR), else on these runs."""
    manifest = store.manifest
    scenario: dict[str, Any] = manifest.get("scenario") or {}
    matrix: dict[str, Any] = manifest.get("matrix") or {}
    records = store.records()
    superseded = len(store.all_records()) - len(records)
    warnings: list[str] = []
    if not records:
        warnings.append(f"{store.runs_path} holds no runs yet: the tables and figures are empty")
    check_provenance(records, store.directory, allow_mixed_provenance, warnings)
    excluded = excluded_runs(records, emulator_limited)
    verdict_records, verdict_excluded, verdict_source = _verdict_runs(
        store, records, excluded, allow_mixed_provenance, warnings
    )
    note = scale_note(_scale(scenario, records, warnings))

    metrics = _metric_columns(scenario, records, warnings)
    baseline_arm = str(scenario.get("baseline_arm") or "")  # runs of before the field: nothing on
    names = list(dict.fromkeys(r.scenario for r in records)) or [str(scenario.get("name", "scenario"))]
    figures_dir = store.directory / FIGURES_DIR
    sections = []
    drawn: list[RenderedFigure] = []
    axis = scenario.get("axis") or {}
    for name in names:
        groups = group_records(
            [r for r in records if r.scenario == name], [m.key for m in metrics], confidence
        )
        points = _ordered_points(_labels(scenario.get("points"), matrix.get("points")), groups)
        arms = _ordered_arms(_labels(scenario.get("arms"), matrix.get("arms")), groups)
        by_key = {(g.point_label, g.arm_label): g for g in groups}
        rows = _result_rows(points, arms, by_key, metrics)
        verdict, main, effect_rows = _section_verdict(
            [r for r in verdict_records if r.scenario == name],
            metrics,
            points,
            arms,
            verdict_excluded,
            confidence,
            baseline_arm,
        )
        section = ScenarioSection(
            name,
            _anchor(name),
            metrics,
            rows,
            _failures(groups),
            verdict,
            effects=main,
            effect_rows=effect_rows,
        )
        if draw_figures:
            data = FigureData(
                name,
                points,
                arms,
                by_key,
                axis_name=str(axis.get("name") or "point"),
                axis_unit=str(axis.get("unit") or ""),
                scale_note=note,
                confidence=confidence,
                excluded=set(excluded),
                baseline_label=baseline_arm,
            )
            specs = scenario.get("figures") or []
            if len(names) > 1:
                specs = [
                    {**s, "name": f"{_anchor(name)}-{s.get('name') or i + 1}"} for i, s in enumerate(specs)
                ]
            rendered, section.skipped_figures = render_figures(specs, data, figures_dir)
            for fig in rendered:
                drawn.append(fig)
                section.figures.append(_figure_view(len(drawn), fig))
        sections.append(section)
    if draw_figures:
        _remove_stale_figures(figures_dir, drawn)
    excluded_text = [
        f"point {point}, repeat {repeat}, {arm}: {why}"
        for (point, repeat, arm), why in sorted(verdict_excluded.items())
    ]

    ok = sum(r.status == "ok" for r in records)
    for mix in manifest.get("mixed", []):
        warnings.append(
            f"runs were added with --allow-mixing by {mix.get('command')!r} "
            f"(code {mix.get('code_version')}): " + "; ".join(mix.get("differences", []))
        )
    return Report(
        title=str(scenario.get("title") or scenario.get("name") or names[0]),
        description=str(scenario.get("description") or ""),
        reproduces=[
            {
                "source": str(x.get("source", "")),
                "claim": str(x.get("claim", "")),
                "check": str(x.get("check", "")),
                "differs": str(x.get("differs", "")),
            }
            for x in scenario.get("reproduces") or []
            if isinstance(x, dict)
        ],
        scale_note=note,
        point_notes=point_scale_notes(scenario),
        setup=_setup(scenario, matrix, records),
        points=_points_table(scenario, matrix),
        arms=_arms_table(scenario, matrix),
        provenance=_provenance(manifest, records),
        tools=_tools(records),
        command=str(manifest.get("command") or "(not recorded)"),
        other_commands=[c for c in manifest.get("commands", []) if c != manifest.get("command")],
        runs_ok=ok,
        runs_failed=len(records) - ok,
        runs_superseded=superseded,
        confidence_pct=f"{confidence * 100:g} %",
        sections=sections,
        warnings=warnings,
        scenario_json=json.dumps(scenario, indent=2, sort_keys=True, default=str),
        run_provenance=provenance_rows(records),
        excluded=excluded_text,
        flagged=[
            f"point {r.point.get('label')}, {r.arm.get('label')}, repeat {r.repeat}: {why}"
            for r in [*records, *(verdict_records if verdict_records is not records else [])]
            if (why := emulator_limited(r))
        ],
        verdict_source=verdict_source,
    )


# Scenario keys shown in the set-up table, with the name a reader sees; the whole definition is
# also printed verbatim at the end of the report.
_SETUP_KEYS = (
    ("topology", "topology"),
    ("params", "topology parameters"),
    ("traffic", "traffic"),
    ("capture", "ACKs counted at"),
    ("switch_ecn", "ECN marking"),
)


def _setup(
    scenario: dict[str, Any], matrix: dict[str, Any], records: list[RunRecord]
) -> list[tuple[str, str]]:
    rows = [("scenario", str(scenario.get("name", "")))]
    for key, title in _SETUP_KEYS:
        if scenario.get(key) not in (None, "", {}, []):
            rows.append((title, describe(scenario[key])))
    axis = scenario.get("axis") or {}
    if axis.get("name"):
        rows.append(("swept axis", str(axis["name"]) + (f" ({axis['unit']})" if axis.get("unit") else "")))
    for key in ("repeats", "seed", "quick"):
        if key in matrix:
            rows.append((key, json.dumps(matrix[key])))
    backends = Counter(r.link_backend or "(not recorded)" for r in records)
    if backends:
        rows.append(("link backend", _counted(backends, "run")))
    return rows


def _points_table(scenario: dict[str, Any], matrix: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, x, parameters) of each requested point, in the scenario's order."""
    defined = {str(p.get("label")): p for p in scenario.get("points") or [] if isinstance(p, dict)}
    defined.update({str(p.get("label")): p for p in matrix.get("points") or [] if isinstance(p, dict)})
    requested = set(_labels(matrix.get("points"))) or set(defined)
    rows = []
    for label in _labels(scenario.get("points"), matrix.get("points")):
        if label in requested:
            p = defined.get(label, {})
            rows.append((label, str(p.get("x", "")), describe(p.get("params") or {})))
    return rows


def _arms_table(scenario: dict[str, Any], matrix: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, where, topology parameters it sets) of each requested arm."""
    topology = {
        str(a.get("label")): a.get("topology_params") or {}
        for a in scenario.get("arms") or []
        if isinstance(a, dict)
    }
    arms = [a for a in matrix.get("arms") or [] if isinstance(a, dict)]
    return [
        (str(a.get("label")), str(a.get("where")), describe(topology.get(str(a.get("label")), {})))
        for a in arms
    ]


def _provenance(manifest: dict[str, Any], records: list[RunRecord]) -> list[tuple[str, str]]:
    codes = Counter(r.code_version for r in records)
    manifest_codes = manifest.get("code_versions") or [manifest.get("code_version")]
    rows = [("code version (manifest)", ", ".join(str(c) for c in manifest_codes))]
    if codes:
        rows.append(("code version (runs)", _counted(codes, "run")))
    rows.append(("created", str(manifest.get("created_at", ""))))
    # No results directory: the report sits in it, and a published copy (docs/results/) must not
    # name a path of the machine that made it (all.py --check rebuilds it elsewhere).
    return rows


def _tools(records: list[RunRecord]) -> list[tuple[str, str]]:
    """The versions the provenance block does not show (ackwise's own, Python), and the congestion
    control ss saw the senders run."""
    by_tool: dict[str, Counter[str]] = {}
    for r in records:
        for tool, version in r.versions.items():
            if tool not in SHARED_VERSIONS:
                by_tool.setdefault(tool, Counter())[version] += 1
    rows = [(tool, _counted(by_tool[tool], "run")) for tool in sorted(by_tool)]
    ran = Counter(r.congestion_control() for r in records)
    return [*rows, ("TCP congestion control (senders, as ss showed it)", _counted(ran, "run"))]


def _remove_stale_figures(directory: Path, drawn: Sequence[RenderedFigure]) -> None:
    if not directory.is_dir():
        return
    keep = {p.name for f in drawn for p in (f.png, f.svg)}
    for path in directory.iterdir():
        if path.suffix in (".png", ".svg") and path.name not in keep:
            path.unlink()


# -- output -------------------------------------------------------------------------------------


def _break_at_underscores(value: Any) -> markupsafe.Markup:
    # Metric keys are long single words; let a narrow table header break them after each underscore.
    return markupsafe.Markup("_<wbr>").join(markupsafe.escape(str(value)).split("_"))


def _md_cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,  # a template naming a missing field fails loudly, not blank
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = _md_cell
    env.filters["wbr"] = _break_at_underscores
    return env


def render_html(report: Report) -> str:
    return _environment(autoescape=True).get_template("report.html.j2").render(r=report)


def render_markdown(report: Report) -> str:
    return _environment(autoescape=False).get_template("report.md.j2").render(r=report)


def write_csv(directory: Path, report: Report) -> list[str]:
    """The report's tables as CSV in ``directory/tables/``: results (every metric of every arm at
    every point, with each run's value), effects (every arm against the baseline, paired by
    block: what the verdict rests on) and provenance. Returns the paths relative to
    ``directory``."""
    out = directory / CSV_DIR
    out.mkdir(parents=True, exist_ok=True)
    tables: dict[str, tuple[list[str], list[list[Any]]]] = {
        "results.csv": (
            [
                "scenario",
                "point",
                "place",
                "arm",
                "metric",
                "unit",
                "n",
                "mean",
                "ci_low",
                "ci_high",
                "failed",
                "runs",
                "split",
            ],
            [
                [
                    s.name,
                    row.point,
                    row.where,
                    row.arm,
                    m.key,
                    m.unit,
                    summary.n,
                    summary.mean,
                    summary.ci_low,
                    summary.ci_high,
                    row.failed,
                    runs.replace(", ", ";"),
                    split,
                ]
                for s in report.sections
                for row in s.rows
                for m, summary, runs, split in zip(s.metrics, row.summaries, row.runs, row.split, strict=True)
            ],
        ),
        "effects.csv": (
            [
                "scenario",
                "point",
                "place",
                "arm",
                "metric",
                "blocks",
                "scale",
                "estimate",
                "ci_low",
                "ci_high",
                "verdict",
                "detectable",
                "confidence",
                "power",
                "split",
            ],
            [
                [
                    s.name,
                    e.point,
                    e.where,
                    e.label,
                    s.verdict.metric.key,
                    e.effect.n,
                    e.effect.scale,
                    e.effect.estimate,
                    e.effect.ci_low,
                    e.effect.ci_high,
                    e.effect.verdict(s.verdict.metric.better) if s.verdict.metric.better else "",
                    e.effect.detectable,
                    e.effect.confidence,
                    e.effect.power,
                    e.split is not None,
                ]
                for s in report.sections
                for e in s.effects
                if e.effect is not None
            ],
        ),
        "provenance.csv": (["what", "value"], [list(row) for row in report.run_provenance]),
    }
    written = []
    for name, (header, rows) in tables.items():
        with (out / name).open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(["" if v is None else v for v in row] for row in rows)
        written.append(f"{CSV_DIR}/{name}")
    return written


def _write(
    directory: Path, confidence: float, allow_mixed_provenance: bool = False
) -> tuple[ReportPaths, Report]:
    store = ResultStore.load(Path(directory))
    report = build_report(store, confidence=confidence, allow_mixed_provenance=allow_mixed_provenance)
    report.csv = write_csv(store.directory, report)
    html_path = store.directory / HTML_FILE
    md_path = store.directory / MARKDOWN_FILE
    html_path.write_text(render_html(report), encoding="utf-8")
    md_path.write_text(render_markdown(report), encoding="utf-8")
    figures = [store.directory / f for s in report.sections for fig in s.figures for f in (fig.png, fig.svg)]
    return ReportPaths(store.directory, html_path, md_path, figures), report


def write_report(
    directory: Path, *, confidence: float = DEFAULT_CONFIDENCE, allow_mixed_provenance: bool = False
) -> ReportPaths:
    """Write report.html, report.md, figures/ and tables/ into an experiment's results directory."""
    return _write(directory, confidence, allow_mixed_provenance)[0]


def _text(report: Report) -> str:
    lines = [f"{report.title}", report.scale_note, *report.point_notes]
    lines.append(f"runs: {report.runs_ok} ok, {report.runs_failed} failed")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if report.excluded:
        left_out = "; ".join(report.excluded)
        lines.append(f"runs left out of the verdict (each with its block's baseline): {left_out}")
    for section in report.sections:
        v = section.verdict
        if len(report.sections) > 1:
            lines.append(f"== {section.name}")
        lines.append(
            f"verdict on {v.metric.key} ({v.metric.direction}): mean ± {report.confidence_pct} CI half-width "
            f"(n), then the arm over the baseline paired by block [{report.confidence_pct} interval]; "
            f"from {report.verdict_source}"
        )
        if v.note:
            lines.append(v.note)
        for row in v.rows:
            lines.append(f"  point {row.point}: baseline {row.baseline}")
            shown = [(t, c) for t, c in zip(v.category_titles, row.cells, strict=True) if c.arm is not None]
            columns = list(zip(*((t, c.value, c.change) for t, c in shown), strict=True)) or [(), (), ()]
            widths = [max([len(x) for x in column] + [0]) for column in columns]
            for title, cell in shown:
                lines.append(
                    f"    {title:<{widths[0]}}  {cell.value:>{widths[1]}}  {cell.change:<{widths[2]}}  "
                    f"{cell.status}  [{cell.arm}]"
                )
            lines.append(f"    best: {row.best}")
    return "\n".join(lines)


def report_text(
    directory: Path, *, confidence: float = DEFAULT_CONFIDENCE, allow_mixed_provenance: bool = False
) -> str:
    """The verdict table as plain text for a terminal (draws no figures, writes nothing)."""
    report = build_report(
        ResultStore.load(Path(directory)),
        confidence=confidence,
        draw_figures=False,
        allow_mixed_provenance=allow_mixed_provenance,
    )
    return _text(report)


def report_command(
    directory: Path, *, confidence: float = DEFAULT_CONFIDENCE, allow_mixed_provenance: bool = False
) -> tuple[ReportPaths, str]:
    """For the CLI: write the report, and return its paths with a short summary to print."""
    paths, report = _write(directory, confidence, allow_mixed_provenance)
    summary = "\n".join(
        [
            f"wrote {paths.html}",
            f"      {paths.markdown}",
            f"      {len(paths.figures) // 2} figures in {paths.directory / FIGURES_DIR} (PNG and SVG)",
            "",
            _text(report),
        ]
    )
    return paths, summary
