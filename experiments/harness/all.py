"""``make experiments``: every scenario's default matrix (or ``--quick``: one repeat of each one's
reduced matrix), each into results/SCENARIO[-quick]/ (resumable: an interrupted run picks up where
it stopped), each reported, and with ``--write-docs`` the headline table written into
docs/results.md and each scenario's report, figures and records copied under docs/results/.

    python -m ackwise.experiments.harness.all [--quick] [--confirm] [--only asymmetric,wlan]
        [--write-docs] [--report-only] [--results DIR] [--start-before HH:MM]
    python -m ackwise.experiments.harness.all --check

A matrix of many hours runs in parts: ``--start-before`` ends a part between runs, and the same
command resumes it (from the same checkout: a results directory refuses runs of other code).
``--report-only --results DIR`` reports and publishes the results of another checkout (a clean
checkout of the commit the records claim) into this one's docs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import re
import shutil
import sys
import tempfile
from pathlib import Path

from ackwise.bmv2.toolchain import REPO_ROOT
from ackwise.experiments.harness.deadline import (
    EXIT_STOPPED,
    DeadlineError,
    parse_start_before,
    stopped_message,
)
from ackwise.experiments.harness.estimate import PAUSE_S
from ackwise.experiments.harness.report import (
    CONFIRM_DIR,
    MARKDOWN_FILE,
    ReportError,
    build_report,
    write_report,
)
from ackwise.experiments.harness.scenario import all_scenarios
from ackwise.experiments.harness.schema import RunRecord
from ackwise.experiments.harness.store import ResultStore
from ackwise.processes import EXIT_INTERRUPTED, run_to_its_end, run_until_stopped

DOCS = REPO_ROOT / "docs" / "results.md"
# What docs/results.md links to: each scenario's report.md, figures, manifest and records, copied
# from results/ (which git ignores) so that the numbers in the docs can be read and re-reported.
PUBLISHED = REPO_ROOT / "docs" / "results"
PUBLISHED_FILES = ("report.md", "manifest.json", "runs.jsonl")
# Written by hand beside a published report (a scenario's reading of its records, with its
# checks): publishing again keeps it, and says so, since it was written for the earlier records.
HAND_WRITTEN = ("analysis.md",)
START, END = "<!-- results:start -->", "<!-- results:end -->"


RESULTS = REPO_ROOT / "results"


def out_dir(name: str, quick: bool, results: Path = RESULTS) -> Path:
    return results / f"{name}{'-quick' if quick else ''}"


def directory_records(directory: Path) -> list[RunRecord]:
    """Every record of a results directory, its confirmation pass's (CONFIRM_DIR) included."""
    records = ResultStore.load(directory).all_records()
    if (directory / CONFIRM_DIR / "runs.jsonl").is_file():
        records += ResultStore.load(directory / CONFIRM_DIR).all_records()
    return records


def toolchain_build(record: RunRecord) -> str:
    """The toolchain build configuration a run names: simple_switch (version and the build's
    directory, which carries its configuration's hash), its build kind, p4c."""
    v = record.versions
    return " / ".join(v.get(tool, "not recorded") for tool in ("simple_switch", "bmv2_build", "p4c"))


def incoherent(records: list[RunRecord]) -> list[str]:
    """Why a set of records is not one coherent run (issue 41): more than one code commit, a commit
    with uncommitted changes (-dirty), or more than one toolchain build configuration."""
    problems: list[str] = []
    codes = sorted({r.code_version for r in records})
    if len(codes) > 1:
        counts = ", ".join(f"{c} ({sum(r.code_version == c for r in records)} runs)" for c in codes)
        problems.append(f"the records name {len(codes)} code commits, not one: {counts}")
    dirty = sorted(c for c in codes if c.endswith("-dirty"))
    if dirty:
        problems.append(f"records made by uncommitted code: {', '.join(dirty)}")
    builds = sorted({toolchain_build(r) for r in records})
    if len(builds) > 1:
        problems.append(f"the records name {len(builds)} toolchain builds, not one: {'; '.join(builds)}")
    return problems


def wall_time(records: list[RunRecord]) -> tuple[float, int]:
    """Hours from the first run's start to the last run's end, pauses longer than PAUSE_S between
    runs left out, and the number of parts those pauses cut the run into."""
    spans = sorted(
        (start, start + r.duration_s)
        for r in records
        for start in [dt.datetime.fromisoformat(r.started_at).timestamp()]
    )
    if not spans:
        return 0.0, 0
    total, parts = 0.0, 1
    part_start, part_end = spans[0]
    for start, end in spans[1:]:
        if start - part_end > PAUSE_S:
            total += part_end - part_start
            parts += 1
            part_start = start
        part_end = max(part_end, end)
    total += part_end - part_start
    return total / 3600, parts


def reported_command(directories: list[Path], quick: bool) -> str:
    """The command the headline names for records reported by ``--report-only``: what made them, as
    the harness runs it (a run's parts' --only and --start-before aside: each report's header names
    its scenario's own commands), never where they lie now, a path of the machine reporting them."""
    confirmed = any((d / CONFIRM_DIR / "runs.jsonl").is_file() for d in directories)
    return (
        "python -m ackwise.experiments.harness.all"
        + (" --quick" if quick else "")
        + (" --confirm" if confirmed else "")
    )


def headline(directories: list[Path], command: str) -> str:
    """The verdict of every scenario, one table, with where it was measured and how. A function of
    the records alone (no clock, no machine facts of the process that writes it), so that
    ``--check`` can recompute it from docs/results/."""
    records = [r for d in directories for r in directory_records(d)]
    run_hours = sum(r.duration_s for r in records) / 3600
    wall_hours, parts = wall_time(records)
    days = sorted({r.started_at[:10] for r in records})
    when = "no runs" if not days else days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"

    def of_runs(tool: str) -> str:
        """The versions the runs record (not this process's: a report may be written later)."""
        return ", ".join(sorted({r.versions.get(tool, "not recorded") for r in records})) or "no runs"

    code = ", ".join(sorted({r.code_version for r in records}))
    lines = [
        f"Measured {when} with `{command}` ({len(records)} runs, confirmation passes included: "
        f"{run_hours:.1f} h of runs, each from test bed set-up to tear-down; {wall_hours:.1f} h of wall "
        f"time in {parts} part{'s' if parts != 1 else ''}, pauses over {PAUSE_S / 60:.0f} min between "
        "runs left out); "
        f"machine: {of_runs('machine')}, kernel {of_runs('kernel')}; "
        f"simple_switch {of_runs('simple_switch')} ({of_runs('bmv2_build')}), p4c {of_runs('p4c')}; "
        "senders' congestion control "
        f"{', '.join(sorted({r.congestion_control() for r in records}))}; runs made by ackwise at {code}. "
        "Each cell: mean ± 95 % CI half-width (n); then the arm over the baseline of its own block "
        "(geometric mean of the per-block ratios, 95 % paired interval, blocks) and the verdict.",
        "",
        "| scenario | point | metric | baseline | best host | best switch | best AP | best combined "
        "| best overall |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for directory in directories:
        store = ResultStore.load(directory)
        report = build_report(store, draw_figures=False)
        # Which congestion control the senders ran, per scenario: a table may mix re-runs with
        # records from before ackwise recorded it (docs/results.md, erratum).
        ran = ", ".join(sorted({r.congestion_control() for r in store.all_records()}))
        for section in report.sections:
            v = section.verdict
            if not v.rows:  # nothing ranked (a main metric with no better direction): say why
                lines.append(
                    f"| [{section.name}](results/{directory.name}/report.md) (senders: {ran}) | "
                    f"every point | {v.metric.key} | see the report | – | – | – | – | "
                    f"no verdict: {v.note.strip()} |"
                )
            for row in v.rows:
                cells = []
                for cat in ("host", "switch", "ap", "combined"):
                    if cat not in v.categories:
                        cells.append("–")
                        continue
                    c = row.cells[v.categories.index(cat)]
                    cells.append(
                        "–"
                        if c.arm is None
                        else f"{c.arm}: {c.value} ({c.change}{', ' + c.status if c.status else ''})"
                    )
                lines.append(
                    f"| [{section.name}](results/{directory.name}/report.md) (senders: {ran}) | "
                    f"{row.point} | {v.metric.key} | {row.baseline} | {' | '.join(cells)} | {row.best} |"
                )
    return "\n".join(lines)


def publish(directories: list[Path], published: Path = PUBLISHED) -> list[Path]:
    """Copy each results directory's report, figures and records (its confirmation pass's too)
    under docs/results/, replacing what an earlier run published there (directories no longer in
    the table go), but for the files written by hand there (HAND_WRITTEN), which stay; returns
    those kept, to be read again against the new records."""
    published.mkdir(exist_ok=True)
    keep = {d.name for d in directories}
    for old in published.iterdir():
        if old.is_dir() and old.name not in keep:
            shutil.rmtree(old)
    kept: list[Path] = []
    for directory in directories:
        target = published / directory.name
        by_hand = {name: (target / name).read_bytes() for name in HAND_WRITTEN if (target / name).is_file()}
        if target.exists():
            shutil.rmtree(target)
        target.mkdir()
        for name, content in by_hand.items():
            (target / name).write_bytes(content)
            kept.append(target / name)
        for name in PUBLISHED_FILES:
            shutil.copy2(directory / name, target / name)
        shutil.copytree(directory / "figures", target / "figures")
        if (directory / CONFIRM_DIR / "runs.jsonl").is_file():  # the records the verdicts rest on
            (target / CONFIRM_DIR).mkdir()
            for name in ("manifest.json", "runs.jsonl"):
                shutil.copy2(directory / CONFIRM_DIR / name, target / CONFIRM_DIR / name)
    return kept


def write_docs(table: str) -> None:
    text = DOCS.read_text() if DOCS.exists() else "# Results\n"
    block = f"{START}\n{table}\n{END}"
    if START in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOCS.write_text(text)


def _published_block(docs: Path) -> str | None:
    text = docs.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return None
    return text[text.index(START) + len(START) : text.index(END)].strip("\n")


def check(docs: Path = DOCS, published: Path = PUBLISHED) -> list[str]:
    """What docs/results.md and docs/results/ say that their records do not: the headline table
    recomputed from the published records (in the table's order, every published scenario in it),
    and each published report.md rebuilt from its records. Empty when everything matches."""
    block = _published_block(docs)
    if block is None:
        return [f"{docs}: no headline table between {START} and {END}"]
    linked = list(dict.fromkeys(re.findall(r"\(results/([^/)]+)/report\.md\)", block)))
    on_disk = sorted(d.name for d in published.iterdir() if d.is_dir()) if published.is_dir() else []
    problems = [
        f"{published / name}: linked from the table but not published"
        for name in linked
        if name not in on_disk
    ]
    problems += [
        f"{published / name}: published but not in the table" for name in on_disk if name not in linked
    ]
    if problems:
        return problems
    problems += incoherent([r for name in linked for r in directory_records(published / name)])
    command = re.search(r"with `([^`]+)`", block)
    expected = headline([published / name for name in linked], command.group(1) if command else "")
    if expected != block:
        problems.append("the headline table in docs/results.md is not what docs/results/ gives:")
        problems += list(
            difflib.unified_diff(block.splitlines(), expected.splitlines(), "docs", "records", lineterm="")
        )
    # Not /tmp/ackwise*: the integration tests count new /tmp/ackwise* entries as the test bed's
    # leftovers, so a check run beside them failed them (and lost its copies to their clean-up).
    with tempfile.TemporaryDirectory(prefix="akw-check-results-") as tmp:
        for name in linked:
            copy = Path(tmp) / name
            shutil.copytree(published / name, copy)
            rebuilt = write_report(copy).markdown.read_text(encoding="utf-8")
            shown = (published / name / MARKDOWN_FILE).read_text(encoding="utf-8")
            if rebuilt != shown:
                problems.append(f"{published / name / MARKDOWN_FILE} is not what its records give:")
                problems += list(
                    difflib.unified_diff(
                        shown.splitlines(), rebuilt.splitlines(), "published", "records", lineterm=""
                    )
                )[:40]
    return problems


def _shown(path: Path) -> str:
    """A path as the docs name it: relative to the checkout, as results/NAME, when it is inside one."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return f"results/{path.name}" if path.parent.name == "results" else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", help="comma-separated scenario names (default: all)")
    parser.add_argument(
        "--write-docs", action="store_true", help="write the headline table into docs/results.md"
    )
    parser.add_argument(
        "--confirm",
        action="store_true",
        help="after each scenario's matrix, its confirmation pass (ackwise experiment run --confirm)",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: report the results directories as they are (e.g. made by another checkout)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="where the results directories are (default: this checkout's results/); e.g. another "
        "checkout's, with --report-only",
    )
    parser.add_argument(
        "--start-before",
        metavar="TIME",
        help="start no run at or after TIME (HH:MM or ISO 8601): one part of a long run; the same command "
        f"resumes it (exit status {EXIT_STOPPED} while runs are left)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="run nothing: recompute docs/results.md's table and docs/results/*/report.md from the "
        "published records and fail on any difference",
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for line in problems:
            print(line, file=sys.stderr)
        if not problems:
            print(
                f"{DOCS.relative_to(REPO_ROOT)}: every headline number and report recomputes "
                f"from {PUBLISHED.relative_to(REPO_ROOT)}/"
            )
        return 1 if problems else 0
    start_before: dt.datetime | None = None
    if args.start_before is not None:
        try:
            start_before = parse_start_before(args.start_before, dt.datetime.now().astimezone())
        except DeadlineError as exc:
            parser.error(str(exc))
    scenarios = all_scenarios()
    if args.only:
        wanted = set(args.only.split(","))
        scenarios = [s for s in scenarios if s.name in wanted]
    directories: list[Path] = []
    failed: list[str] = []
    for scenario in scenarios:
        directory = out_dir(scenario.name, args.quick, args.results)
        cmd = [
            sys.executable,
            "-m",
            "ackwise",
            "experiment",
            "run",
            scenario.name,
            "--out",
            str(directory),
        ]
        if args.quick:
            cmd.append("--quick")
        if start_before is not None and not args.report_only:
            cmd += ["--start-before", start_before.isoformat()]
        if args.report_only and not (directory / "runs.jsonl").exists():
            print(f"{scenario.name}: no results in {directory}", file=sys.stderr)
            failed.append(scenario.name)
            continue
        if not args.report_only:
            print(f"== {scenario.name}: {' '.join(cmd[3:])}", flush=True)
        passes = [] if args.report_only else [cmd] + ([[*cmd, "--confirm"]] if args.confirm else [])
        status = 0
        for one in passes:
            status = run_to_its_end(one)
            if status != 0:
                break
        if status == EXIT_INTERRUPTED:
            # Ctrl-C or SIGTERM: the run tore its test bed down and kept what it had done.
            print(f"{scenario.name}: stopped; run the same command again to resume", file=sys.stderr)
            return EXIT_INTERRUPTED
        if status == EXIT_STOPPED:
            # A part ends here: the next scenarios wait for the same command to resume this one.
            left = scenarios[scenarios.index(scenario) + 1 :]
            print(
                f"{scenario.name}: {stopped_message(len(left) + 1, len(scenarios))} (scenarios, this one "
                "included); reports and docs are written when every scenario is done",
                file=sys.stderr,
            )
            return EXIT_STOPPED
        if status != 0:
            what = "the confirmation pass" if len(passes) > 1 and one is passes[-1] else "the run"
            print(f"{scenario.name}: {what} failed; its directory keeps what was done", file=sys.stderr)
            failed.append(scenario.name)
            continue
        try:
            write_report(directory)
        except ReportError as exc:
            # One scenario's records that cannot be reported (runs of two machines, say) must not
            # cost the scenarios after it their runs: say why, and go on.
            print(f"{scenario.name}: no report: {exc}", file=sys.stderr)
            failed.append(scenario.name)
            continue
        directories.append(directory)
    command = "make experiments" + (" QUICK=1" if args.quick else "")
    if args.report_only:
        command = reported_command(directories, args.quick)
    elif args.only:
        # What ran: each scenario's matrix, as make experiments runs it, into results/NAME.
        quick = " --quick" if args.quick else ""
        command = (
            f"ackwise experiment run NAME{quick} --out {_shown(out_dir('NAME', args.quick, args.results))}"
        )
    table = headline(directories, command)
    print(table)
    if args.write_docs and directories:
        for path in publish(directories):
            print(f"kept {_shown(path)}: written for the records published before; read it against these")
        write_docs(table)
    if failed:
        print(f"not run to the end: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run_until_stopped("experiments", main))
