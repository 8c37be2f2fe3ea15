"""`all.py --check`: the headline table and each published report recompute from the published
records, and any edit to a number, a missing or an extra scenario is caught."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from results_fixtures import build_store

from ackwise.experiments.harness import all as all_
from ackwise.experiments.harness.report import write_report
from ackwise.experiments.harness.store import ResultStore

COMMAND = "ackwise experiment run NAME --out results/NAME"


def publish(tmp_path: Path) -> tuple[Path, Path]:
    """A docs/results.md and docs/results/ as --write-docs leaves them, for the fixtures' records."""
    results = tmp_path / "results"
    store = build_store(results / "asym-dumbbell")
    write_report(store.directory)
    published = tmp_path / "docs" / "results"
    published.parent.mkdir(parents=True)
    all_.publish([store.directory], published)
    target = published / "asym-dumbbell"
    docs = tmp_path / "docs" / "results.md"
    table = all_.headline([target], COMMAND)
    docs.write_text(f"# Results\n\nProse.\n\n{all_.START}\n{table}\n{all_.END}\n\nMore prose.\n")
    return docs, published


def test_published_records_recompute(tmp_path: Path) -> None:
    docs, published = publish(tmp_path)
    assert all_.check(docs, published) == []


def test_the_table_is_a_function_of_the_records() -> None:
    # No clock, no machine of the process: the date is the runs' and the machine the records'.
    text = all_.headline([], COMMAND)
    assert "no runs" in text and "`" + COMMAND + "`" in text


def test_an_edited_number_in_the_table_is_caught(tmp_path: Path) -> None:
    docs, published = publish(tmp_path)
    text = docs.read_text()
    table_row = next(line for line in text.splitlines() if line.startswith("| [asym-dumbbell]"))
    first_number = next(cell for cell in table_row.split("|") if any(ch.isdigit() for ch in cell))
    edited = first_number.replace("1", "7", 1) if "1" in first_number else first_number + "0"
    docs.write_text(text.replace(table_row, table_row.replace(first_number, edited, 1)))
    problems = all_.check(docs, published)
    assert problems and problems[0].startswith("the headline table in docs/results.md is not")
    assert any(line.startswith("-| [asym-dumbbell]") for line in problems)


def test_a_record_changed_after_publishing_is_caught(tmp_path: Path) -> None:
    docs, published = publish(tmp_path)
    runs = published / "asym-dumbbell" / "runs.jsonl"
    lines = runs.read_text().splitlines()
    first = json.loads(lines[0])
    first["metrics"]["completion_s"] *= 3
    first["metrics"]["goodput_mbps"] /= 3
    runs.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    problems = all_.check(docs, published)
    assert any("headline table" in p for p in problems)
    assert any(p.endswith("report.md is not what its records give:") for p in problems)


def test_scenarios_missing_or_extra_are_caught(tmp_path: Path) -> None:
    docs, published = publish(tmp_path)
    shutil.copytree(published / "asym-dumbbell", published / "stray")
    assert all_.check(docs, published) == [f"{published / 'stray'}: published but not in the table"]
    shutil.rmtree(published / "stray")
    shutil.rmtree(published / "asym-dumbbell")
    assert all_.check(docs, published) == [
        f"{published / 'asym-dumbbell'}: linked from the table but not published"
    ]


def test_no_table_is_caught(tmp_path: Path) -> None:
    docs = tmp_path / "results.md"
    docs.write_text("# Results\n")
    (problem,) = all_.check(docs, tmp_path)
    assert "no headline table" in problem


def test_every_published_record_loads() -> None:
    """The records under docs/results/ stay readable after a metric is retired from the runner
    (reverse-data's avoidable_pure_acks): --check and the report read them through the schema."""
    directories = sorted(d for d in all_.PUBLISHED.iterdir() if (d / "runs.jsonl").exists())
    assert directories, f"no published records under {all_.PUBLISHED}"
    for directory in directories:
        assert ResultStore.load(directory).all_records(), directory.name


def _rewrite_records(runs: Path, change: dict[str, object], first_only: bool = True) -> None:
    lines = runs.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        record = json.loads(line)
        if i == 0 or not first_only:
            record.update(change)
        out.append(json.dumps(record))
    runs.write_text("\n".join(out) + "\n")


def test_records_of_two_commits_are_not_one_run(tmp_path: Path) -> None:
    """Issue 41: every published record carries one code commit; a scenario re-run at another
    commit (even with its table and report rewritten to match) fails the check."""
    docs, published = publish(tmp_path)
    _rewrite_records(published / "asym-dumbbell" / "runs.jsonl", {"code_version": "def5678"})
    write_report(published / "asym-dumbbell")
    text = docs.read_text()
    block = text[text.index(all_.START) + len(all_.START) : text.index(all_.END)].strip("\n")
    docs.write_text(text.replace(block, all_.headline([published / "asym-dumbbell"], COMMAND)))
    problems = all_.check(docs, published)
    assert len(problems) == 1 and problems[0].startswith("the records name 2 code commits, not one: ")
    assert "abc1234 (" in problems[0] and "def5678 (1 runs)" in problems[0]


def test_dirty_code_and_two_toolchain_builds_are_named() -> None:
    from results_fixtures import ARMS, POINTS, make_record

    clean = make_record(POINTS[0], ARMS[0], 0)
    dirty = make_record(POINTS[0], ARMS[0], 1, code_version="abc1234-dirty")
    assert all_.incoherent([clean]) == []
    problems = all_.incoherent([clean, dirty])
    assert problems[0].startswith("the records name 2 code commits")
    assert problems[1] == "records made by uncommitted code: abc1234-dirty"
    other_build = make_record(POINTS[0], ARMS[0], 2)
    other_build.versions["bmv2_build"] = "debug (logging macros)"
    (problem,) = all_.incoherent([clean, other_build])
    assert problem.startswith("the records name 2 toolchain builds, not one: ")
    assert "debug (logging macros)" in problem


def test_wall_time_leaves_pauses_between_parts_out() -> None:
    from dataclasses import replace

    from results_fixtures import ARMS, POINTS, make_record

    base = make_record(POINTS[0], ARMS[0], 0)  # 12.5 s from 12:00:00
    runs = [
        replace(base, started_at="2024-05-01T12:00:00+00:00", duration_s=600.0),
        replace(base, started_at="2024-05-01T12:10:30+00:00", duration_s=1170.0),  # ends 12:30
        # three hours later: a second part of the same run, one hour long
        replace(base, started_at="2024-05-01T15:30:00+00:00", duration_s=3600.0),
    ]
    hours, parts = all_.wall_time(runs)
    assert parts == 2
    assert abs(hours - 1.5) < 1e-9  # 30 min + 60 min, the 3-hour pause left out
    assert all_.wall_time([]) == (0.0, 0)


def test_a_confirmation_pass_is_published_and_checked(tmp_path: Path) -> None:
    """The verdicts rest on the confirmation pass (report.CONFIRM_DIR): publish copies its
    records, and the check rebuilds the report from them (a confirmation record edited after
    publishing is caught)."""
    results = tmp_path / "results"
    store = build_store(results / "asym-dumbbell")
    build_store(store.directory / "confirm")
    write_report(store.directory)
    published = tmp_path / "docs" / "results"
    published.parent.mkdir(parents=True)
    all_.publish([store.directory], published)
    assert (published / "asym-dumbbell" / "confirm" / "runs.jsonl").is_file()
    docs = tmp_path / "docs" / "results.md"
    table = all_.headline([published / "asym-dumbbell"], COMMAND)
    assert "(48 runs, confirmation passes included" in table  # 24 screening + 24 confirmation
    docs.write_text(f"{all_.START}\n{table}\n{all_.END}\n")
    assert all_.check(docs, published) == []
    _rewrite_records(
        published / "asym-dumbbell" / "confirm" / "runs.jsonl", {"code_version": "def5678"}, first_only=False
    )
    problems = all_.check(docs, published)
    assert any(p.startswith("the records name 2 code commits") for p in problems)


def test_reported_records_name_the_harness_not_the_directory_they_lie_in(tmp_path: Path) -> None:
    """Regression: --report-only --results DIR named `--out DIR/NAME` in docs/results.md, a path of
    the machine that wrote the docs, not the command that made the records."""
    directory = tmp_path / "elsewhere" / "asym-dumbbell"
    build_store(directory)
    assert all_.reported_command([directory], quick=False) == "python -m ackwise.experiments.harness.all"
    (directory / "confirm").mkdir()
    (directory / "confirm" / "runs.jsonl").write_text("")
    command = all_.reported_command([directory], quick=False)
    assert command == "python -m ackwise.experiments.harness.all --confirm" and str(tmp_path) not in command


def test_a_scenario_whose_main_metric_ranks_nothing_has_a_row_saying_so(tmp_path: Path) -> None:
    """Regression: a scenario whose main metric has no better direction (landstrom-4w's ACKs per
    window) had no row in the headline table, so --check found it "published but not in the
    table"."""
    store = build_store(tmp_path / "results" / "asym-dumbbell")
    manifest = json.loads((store.directory / "manifest.json").read_text())
    scenario = manifest["scenario"]
    scenario["metrics"] = ["acks_per_window", *scenario["metrics"]]
    (store.directory / "manifest.json").write_text(json.dumps(manifest))
    table = all_.headline([store.directory], COMMAND)
    (row,) = [line for line in table.splitlines() if line.startswith("| [")]
    assert "(results/asym-dumbbell/report.md)" in row and "| acks_per_window |" in row
    assert row.endswith(
        "no verdict: acks_per_window has no better direction in schema.METRICS, so no arm is ranked on it. |"
    )


def test_docs_results_recompute_from_their_records() -> None:
    """The published docs/results.md and docs/results/ themselves: `make check-results`, in `make
    test` (issue 41: every number of the published run recomputes from its records)."""
    assert all_.check() == []


def test_publishing_again_keeps_what_was_written_by_hand(tmp_path: Path) -> None:
    """Regression: publish replaced each scenario's directory, so docs/results/*/analysis.md, the
    scenario's reading of its records, went with every --write-docs."""
    docs, published = publish(tmp_path)
    analysis = published / "asym-dumbbell" / "analysis.md"
    analysis.write_text("# Reading\n\nWhat the records say.\n")
    kept = all_.publish([tmp_path / "results" / "asym-dumbbell"], published)
    assert kept == [analysis]
    assert analysis.read_text() == "# Reading\n\nWhat the records say.\n"
    assert all_.check(docs, published) == []  # the records and report were replaced as before
    assert all_.publish([tmp_path / "results" / "asym-dumbbell"], tmp_path / "elsewhere") == []
