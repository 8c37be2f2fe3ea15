"""The report of a synthetic results directory, read back the way a person would: the numbers in its
tables against statistics worked out here, the verdict, the scale note, the files it promises."""

from __future__ import annotations

import math
import re
from dataclasses import asdict
from html.parser import HTMLParser
from pathlib import Path

import pytest
from results_fixtures import (
    ACKS_PER_SEGMENT,
    ARMS,
    BASELINE_ARM,
    COMMAND,
    COMPLETION_S,
    FAILURE_REASON,
    POINTS,
    SCALE,
    SCENARIO,
    SIZE_MBIT,
    build_store,
    make_record,
    manifest,
)

from ackwise.experiments.harness.report import (
    ReportPaths,
    build_report,
    format_summary,
    report_command,
    report_text,
    write_report,
)
from ackwise.experiments.harness.schema import Arm, PolicySpec
from ackwise.experiments.harness.stats import Summary
from ackwise.experiments.harness.store import ResultStore

T_975 = {1: 12.7062047, 2: 4.3026527}  # two-sided 95 % Student-t quantiles, df = n - 1
FIGURE_NAMES = [
    "01-metric_vs_x-completion_s",
    "02-relative_vs_x-completion_s",
    "03-acks_vs_goodput",
    "04-bars-goodput_mbps",
    "05-timeline",
]
CELL = re.compile(r"^(-?\d+(?:\.(\d+))?)(?: ± (\d+(?:\.\d+)?))? \((\d+)\)$")


def expected(values: list[float]) -> tuple[float, float | None, int]:
    """Mean, 95 % half-width and n, computed from the definition."""
    n = len(values)
    mean = sum(values) / n
    if n == 1:
        return mean, None, 1
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, T_975[n - 1] * sd / math.sqrt(n), n


def run_values(point: str, where: str, metric: str) -> list[float]:
    completion = [v for v in COMPLETION_S[(point, where)] if v is not None]
    return {
        "completion_s": completion,
        "goodput_mbps": [SIZE_MBIT / v for v in completion],
        "acks_per_data_segment": [ACKS_PER_SEGMENT[where]] * len(completion),
    }[metric]


def expected_metrics(point: str, where: str) -> dict[str, tuple[float, float | None, int]]:
    completion = [v for v in COMPLETION_S[(point, where)] if v is not None]
    return {
        "completion_s": expected(completion),
        "goodput_mbps": expected([SIZE_MBIT / v for v in completion]),
        "acks_per_data_segment": expected([ACKS_PER_SEGMENT[where]] * len(completion)),
    }


def assert_cell(text: str, want: tuple[float, float | None, int]) -> None:
    """A 'mean ± half-width (n)' cell equals the expected numbers to the digits it prints."""
    match = CELL.match(text.strip())
    assert match, f"not a 'mean ± half-width (n)' cell: {text!r}"
    mean_text, decimals, hw_text, n_text = match.groups()
    tolerance = 0.5 * 10 ** -len(decimals or "") + 1e-9
    mean, hw, n = want
    assert int(n_text) == n
    assert abs(float(mean_text) - mean) <= tolerance, (text, want)
    if hw is None:
        assert hw_text is None
    else:
        assert hw_text is not None and abs(float(hw_text) - hw) <= tolerance, (text, want)


class Tables(HTMLParser):
    """Every table with an id: its rows, each a list of cells, each a list of text pieces."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[list[str]]]] = {}
        self.figcaptions: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and dict(attrs).get("id"):
            self._table = dict(attrs)["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
            self.tables[self._table][-1].append(self._cell)
        elif tag == "figcaption":
            self._caption = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th"):
            self._cell = None
        elif tag == "figcaption" and self._caption is not None:
            self.figcaptions.append(" ".join(self._caption))
            self._caption = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None and data.strip():
            self._cell.append(data.strip())
        if self._caption is not None and data.strip():
            self._caption.append(data.strip())


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> ReportPaths:
    directory = tmp_path_factory.mktemp("asym")
    build_store(directory)
    return write_report(directory)


@pytest.fixture(scope="module")
def html(report: ReportPaths) -> str:
    return report.html.read_text()


@pytest.fixture(scope="module")
def tables(html: str) -> Tables:
    parser = Tables()
    parser.feed(html)
    return parser


def text(cell: list[str]) -> str:
    return " ".join(cell)


def test_html_results_table_has_the_statistics_of_each_group(tables: Tables) -> None:
    rows = tables.tables["asym-dumbbell-results-table"]
    header, body = rows[0], rows[1:]
    assert [text(c) for c in header[:3]] == ["point", "place", "arm"]
    assert "".join(header[3]).startswith("completion_s (s)")  # the header may break after "_"
    assert len(body) == 8
    seen = set()
    for row in body:
        point, where, arm = (text(c) for c in row[:3])
        want = expected_metrics(point, where)
        for cell, metric in zip(
            row[3:6], ("completion_s", "goodput_mbps", "acks_per_data_segment"), strict=True
        ):
            # the summary, then every ok run's value, by repeat
            assert cell[-1] == ", ".join(f"{v:.4g}" for v in run_values(point, where, metric))
            cell = cell[:-1]
            assert_cell(text(cell), want[metric])
        assert text(row[6]) == ("1" if (point, where) == ("64 kbit/s", "host") else "0")
        seen.add((point, where, arm))
    assert seen == {(p.label, a.where, a.label()) for p in POINTS for a in ARMS}
    # Points in the scenario's order, the baseline first within each.
    assert [text(r[0]) for r in body[::4]] == ["64 kbit/s", "256 kbit/s"]
    assert [text(r[1]) for r in body[:4]] == ["none", "host", "switch", "ap"]


def expected_effect(arm: list[float], base: list[float]) -> tuple[float, float, float]:
    """Paired t on the logs of the per-block ratios, from the definition: (estimate, low, high)."""
    logs = [math.log(a / b) for a, b in zip(arm, base, strict=True)]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = T_975[n - 1] * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def effect_cell(arm: list[float], base: list[float]) -> str:
    estimate, low, high = expected_effect(arm, base)
    return f"{estimate:.3g}× [{low:.3g}, {high:.3g}] ({len(arm)} blocks)"


def test_html_verdict_names_the_best_place_per_point(tables: Tables) -> None:
    """Each place's best arm against the baseline of its own blocks. The host's run of repeat 2
    at 64 kbit/s failed (results_fixtures), so block (64 kbit/s, 2) is left out of the host's
    comparison, and only of its: the switch and the AP keep all 3 blocks."""
    rows = tables.tables["asym-dumbbell-verdict-table"]
    header = [text(c) for c in rows[0]]
    assert header == ["completion_s at", "baseline", "best host", "best switch", "best AP", "best overall"]
    by_point = {text(r[0]): r for r in rows[1:]}
    assert set(by_point) == {"64 kbit/s", "256 kbit/s"}

    low = by_point["64 kbit/s"]
    assert_cell(text(low[1]), expected_metrics("64 kbit/s", "none")["completion_s"])
    host, switch, ap = low[2], low[3], low[4]
    base = COMPLETION_S[("64 kbit/s", "none")][:2]
    assert host[0] == ARMS[1].label()
    assert_cell(host[1], expected_metrics("64 kbit/s", "host")["completion_s"])
    assert host[2] == effect_cell([8.0, 8.5], base)  # type: ignore[list-item]
    _, _, high = expected_effect([8.0, 8.5], base)  # type: ignore[list-item]
    assert high < 1 and host[-1] == "better; 1 of 3 runs failed"
    assert switch[0] == ARMS[2].label() and switch[-1] == "better"
    all_blocks = COMPLETION_S[("64 kbit/s", "none")]
    assert switch[2] == effect_cell([6.0, 6.2, 6.4], all_blocks)  # type: ignore[list-item]
    # The AP's runs overlap the baseline's (9.5-11.45 vs 10-12), but within each block it is faster
    # every time: paired, that is a difference (unpaired intervals would hide it).
    _, _, high_ap = expected_effect(COMPLETION_S[("64 kbit/s", "ap")], all_blocks)  # type: ignore[arg-type]
    assert high_ap < 1 and ap[-1] == "better"
    assert text(low[5]).startswith("switch:") and "better" in text(low[5])

    high_row = by_point["256 kbit/s"]
    base = COMPLETION_S[("256 kbit/s", "none")]
    _, low_host, high_host = expected_effect(COMPLETION_S[("256 kbit/s", "host")], base)  # type: ignore[arg-type]
    assert low_host < 1 < high_host and high_row[2][-1].startswith("no difference detected")
    assert high_row[4][-1] == "better"
    assert text(high_row[5]).startswith("AP:")
    assert effect_cell(COMPLETION_S[("256 kbit/s", "ap")], base) in text(high_row[5])  # type: ignore[arg-type]


def test_html_header_has_scale_command_sources_and_failures(html: str, tables: Tables) -> None:
    assert "scale factor 0.1" in html and SCALE["what"] in html
    assert f'<code id="command">{COMMAND}</code>' in html
    assert "Balakrishnan et al., 1997, Fig. 5" in html
    assert "23 ok" in html and "1 failed" in html
    assert FAILURE_REASON in html
    assert "netem" in html and "1.15.5" in html and "abc1234" in html
    assert len(tables.figcaptions) == len(FIGURE_NAMES)
    for caption in tables.figcaptions:
        assert "scale factor 0.1" in caption and SCALE["what"] in caption


def test_html_is_self_contained(html: str) -> None:
    assert not re.search(r"https?://", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    sources = re.findall(r'src="([^"]*)"', html)
    assert len(sources) == len(FIGURE_NAMES)
    assert all(s.startswith("data:image/svg+xml;base64,") for s in sources)


def test_markdown_has_the_same_numbers(report: ReportPaths) -> None:
    md = report.markdown.read_text()
    assert "scale factor 0.1" in md and SCALE["what"] in md
    assert COMMAND in md
    rows = [
        [c.strip() for c in line.strip("|").split(" | ")]
        for line in md.splitlines()
        if line.startswith(("| 64 kbit/s | ", "| 256 kbit/s | "))
    ]
    results = [r for r in rows if r[1] in ("none", "host", "switch", "ap")]
    assert len(results) == 8
    for point, where, _arm, completion, goodput, acks, failed in results:
        want = expected_metrics(point, where)
        for cell, metric in (
            (completion, "completion_s"),
            (goodput, "goodput_mbps"),
            (acks, "acks_per_data_segment"),
        ):
            summary, runs = cell.split(" <br>runs: ")
            assert_cell(summary, want[metric])
            assert runs == ", ".join(f"{v:.4g}" for v in run_values(point, where, metric))
        assert failed == ("1" if (point, where) == ("64 kbit/s", "host") else "0")
    verdicts = {r[0]: r for r in rows if len(r) == 6 and r[-1].startswith(("switch:", "AP:"))}
    assert set(verdicts) == {"64 kbit/s", "256 kbit/s"}
    assert verdicts["64 kbit/s"][-1].startswith("switch:")
    assert verdicts["256 kbit/s"][-1].startswith("AP:")
    for name in FIGURE_NAMES:
        assert f"](figures/{name}.png)" in md


def test_every_figure_is_written_as_png_and_svg(report: ReportPaths) -> None:
    assert sorted(p.name for p in report.figures) == sorted(
        f"{n}.{ext}" for n in FIGURE_NAMES for ext in ("png", "svg")
    )
    for name in FIGURE_NAMES:
        png = report.directory / "figures" / f"{name}.png"
        svg = report.directory / "figures" / f"{name}.svg"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        assert "<svg" in svg.read_text()[:1000] and svg.stat().st_size > 10_000
        # matplotlib keeps each text of a figure as a comment beside its glyph paths
        assert "scale factor 0.1" in svg.read_text()


def test_writing_again_gives_the_same_files(report: ReportPaths, html: str) -> None:
    before = {p.name: p.read_bytes() for p in report.figures}
    again, summary = report_command(report.directory)  # the CLI's entry: the same files, and a summary
    assert again.html.read_text() == html
    assert {p.name: p.read_bytes() for p in again.figures} == before
    assert str(report.html) in summary and "5 figures" in summary
    assert "best: switch:" in summary


def test_report_text_is_the_verdict_for_a_terminal(report: ReportPaths) -> None:
    lines = report_text(report.directory).splitlines()
    assert "scale factor 0.1" in lines[1]
    assert "runs: 23 ok, 1 failed" in lines
    bests = [line.strip() for line in lines if line.strip().startswith("best:")]
    assert bests[0].startswith("best: switch:") and bests[1].startswith("best: AP:")


def test_format_summary() -> None:
    assert format_summary(Summary(4, 2.5, 0.4457, 4.5543, 2.0543, 1.291)) == "2.5 ± 2.1 (4)"
    assert format_summary(Summary(1, 7.0, None, None, None, None)) == "7.000 (1)"
    assert format_summary(Summary(3, 0.05, 0.05, 0.05, 0.0, 0.0)) == "0.05 ± 0 (3)"
    assert format_summary(Summary(0, None, None, None, None, None)) == "– (0)"


def test_points_follow_the_scenario_when_the_matrix_lists_labels(tmp_path: Path) -> None:
    # The runner's manifest lists point labels only, sorted as text ("256 ..." before "64 ...").
    given = manifest()
    given["scenario"] = {**SCENARIO, "points": [asdict(p) for p in POINTS], "figures": []}
    given["matrix"]["points"] = sorted(p.label for p in POINTS)
    store = ResultStore.open(tmp_path, given)
    for point in reversed(POINTS):
        store.append(make_record(point, ARMS[0], 0, completion_s=2.0))
    rows = build_report(store, draw_figures=False).sections[0].rows
    assert [r.point for r in rows] == ["64 kbit/s", "256 kbit/s"]


def test_a_bad_figure_entry_is_reported_not_fatal(tmp_path: Path) -> None:
    given = manifest()
    given["scenario"] = {**SCENARIO, "figures": [{"kind": "pie", "metric": "completion_s"}]}
    store = ResultStore.open(tmp_path, given)
    store.append(make_record(POINTS[0], ARMS[0], 0, completion_s=2.0))
    paths = write_report(tmp_path)
    assert paths.figures == []
    assert "kind &#39;pie&#39; is not one of" in paths.html.read_text()


def test_verdict_without_a_baseline_or_a_direction_says_so(tmp_path: Path) -> None:
    given = manifest()
    given["scenario"] = {**SCENARIO, "metrics": ["completion_s"], "figures": []}
    store = ResultStore.open(tmp_path / "no-baseline", given)
    for repeat, value in enumerate([4.0, 5.0]):
        store.append(make_record(POINTS[0], ARMS[1], repeat, completion_s=value))
    row = build_report(store, draw_figures=False).sections[0].verdict.rows[0]
    assert row.baseline == "no baseline run"
    assert row.cells[0].arm is None  # nothing to pair the arm with: no effect, no best
    assert row.best == "no arm with ACK reduction has a result"

    given["scenario"] = {**SCENARIO, "metrics": ["pure_acks"], "figures": []}
    store = ResultStore.open(tmp_path / "neutral", given)
    store.append(make_record(POINTS[0], ARMS[0], 0))
    verdict = build_report(store, draw_figures=False).sections[0].verdict
    assert verdict.rows == [] and "no better direction" in verdict.note


def test_a_verdict_cell_says_when_runs_of_its_arm_failed(tmp_path: Path) -> None:
    """The best arm's mean is over the runs that finished; a failed run (a timeout, a stall) must
    not vanish from the verdict, or an arm that once stalled would read as simply the best."""
    store = ResultStore.open(tmp_path / "failed", manifest())
    for repeat in range(3):
        store.append(make_record(POINTS[0], ARMS[0], repeat, completion_s=10.0 + repeat))
    store.append(make_record(POINTS[0], ARMS[2], 0, completion_s=2.0))
    store.append(make_record(POINTS[0], ARMS[2], 1, completion_s=2.5))
    store.append(make_record(POINTS[0], ARMS[2], 2, status="failed", reason="transfer timed out"))
    verdict = build_report(store, draw_figures=False).sections[0].verdict
    cell = verdict.rows[0].cells[verdict.categories.index("switch")]
    assert cell.status.endswith("; 1 of 3 runs failed"), cell


def test_the_report_says_which_congestion_control_the_senders_ran(html: str) -> None:
    """As ss showed it during each run; the failed run recorded no series, so it says so."""
    assert "TCP congestion control (senders, as ss showed it)" in html
    assert re.search(r"cubic \(2\d runs\), not recorded \(1 run\)", html), html


def test_a_record_names_its_senders_congestion_control() -> None:
    record = make_record(POINTS[0], ARMS[0], 0, with_series=True)
    assert record.congestion_control() == "cubic"
    record.series["cwnd"].append({"flow": "h2->r2", "congestion_controls": ["bbr"]})
    assert record.congestion_control() == "bbr, cubic"
    assert make_record(POINTS[0], ARMS[0], 0).congestion_control() == "not recorded"


def test_the_headline_table_says_per_scenario_which_congestion_control_ran(tmp_path: Path) -> None:
    from ackwise.experiments.harness.all import headline

    directory = tmp_path / "asym"
    build_store(directory)
    table = headline([directory], "ackwise experiment run asym")
    rows = [line for line in table.splitlines() if line.startswith("| [")]
    assert rows and all("(senders: cubic, not recorded)" in row for row in rows), table
    assert "senders' congestion control cubic, not recorded" in table


def test_arms_follow_the_scenario_not_the_runners_shuffled_matrix(tmp_path: Path) -> None:
    """Regression (issue 37): the manifest's matrix lists the arms in the shuffled order the runner
    planned them, and the report took that order first: wlan-ideal-goodput's figure showed L = 2,
    8, 1, TACK, 16, 4. Arms of one place now follow the scenario's order."""
    d2, d8 = Arm(host=PolicySpec("every_d", {"d": "2"})), Arm(host=PolicySpec("every_d", {"d": "8"}))
    given = manifest(arms=[d8, BASELINE_ARM, d2])
    given["scenario"] = {**SCENARIO, "arms": [a.to_dict() for a in (BASELINE_ARM, d2, d8)], "figures": []}
    store = ResultStore.open(tmp_path, given)
    for arm in (d8, d2, BASELINE_ARM):
        store.append(make_record(POINTS[0], arm, 0, completion_s=2.0))
    rows = build_report(store, draw_figures=False).sections[0].rows
    assert [r.arm for r in rows] == ["baseline (nothing on)", "host every_d d=2", "host every_d d=8"]
