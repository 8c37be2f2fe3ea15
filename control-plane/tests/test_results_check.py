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
    published.mkdir(parents=True)
    target = published / "asym-dumbbell"
    target.mkdir()
    for name in all_.PUBLISHED_FILES:
        shutil.copy2(store.directory / name, target / name)
    shutil.copytree(store.directory / "figures", target / "figures")
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
