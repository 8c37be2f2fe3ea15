"""``ackwise experiment``: the comparison. ``list`` the scenarios, ``run`` one's matrix (host vs
switch vs AP, each run in a fresh test bed, resumable), ``report`` a results directory.

The experiments and the test bed are imported when these commands run (Mininet is heavy and only
importable under the system Python)."""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ackwise.bmv2.toolchain import REPO_ROOT, warn_if_logging_build
from ackwise.cli.args import I32_MAX, int_in
from ackwise.cli.common import Registry
from ackwise.cli.output import render_table
from ackwise.errors import InputError
from ackwise.experiments.harness.deadline import (
    EXIT_STOPPED,
    DeadlineError,
    parse_start_before,
    stopped_message,
)
from ackwise.experiments.harness.store import ResultStore, StoreError, StoreMismatch  # json and fcntl only
from ackwise.processes import stop_on_signals

if TYPE_CHECKING:  # the harness loads matplotlib, scipy and the test bed: only for the types here
    from ackwise.experiments.harness.scenario import Scenario
    from ackwise.experiments.harness.schema import RunRecord


class ExperimentCliError(InputError, RuntimeError):
    """An option or directory given to ``ackwise experiment`` that cannot be used as given."""


class ExperimentFailed(RuntimeError):
    """A valid request that could not be carried out (a damaged results directory)."""


def store_errors(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A results directory made by other code is the user's to resolve (--allow-mixing, another
    --out): exit 2; one that is damaged is a failure: exit 1. Both one line."""

    @functools.wraps(fn)
    def wrapped(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except StoreMismatch as exc:
            raise ExperimentCliError(str(exc)) from exc
        except StoreError as exc:
            raise ExperimentFailed(str(exc)) from exc

    return wrapped


def _split(text: str | None) -> set[str] | None:
    return {part.strip() for part in text.split(",") if part.strip()} if text else None


def cmd_list(args: argparse.Namespace) -> int:
    # lazy: the harness loads matplotlib, scipy and the test bed; other commands must not pay for them.
    from ackwise.experiments.harness.scenario import all_scenarios

    scenarios = all_scenarios()
    if args.json:
        print(json.dumps([s.to_dict() for s in scenarios], indent=2, default=str))
        return 0
    for s in scenarios:
        points = ", ".join(p.label for p in s.points)
        places = sorted({a.where for a in s.arms})
        print(f"{s.name}: {s.title}")
        for claim in s.reproduces:
            print(f"    reproduces {claim.source}: {claim.claim}")
        print(f"    topology {s.topology}; points: {points}")
        print(f"    arms: {len(s.arms)} ({', '.join(places)}); repeats {s.repeats}; scale: {s.scale['what']}")
    return 0


def default_out(scenario: str, quick: bool, shard: tuple[int, int] | None = None) -> Path:
    suffix = ("-quick" if quick else "") + (f"-shard-{shard[0]}-of-{shard[1]}" if shard else "")
    return REPO_ROOT / "results" / f"{scenario}{suffix}"


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'K/N' -> (K, N), 1 <= K <= N."""
    if text is None:
        return None
    k, sep, n = text.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise ExperimentCliError(f"--shard {text}: give K/N with 1 <= K <= N, e.g. 2/4")
    return int(k), int(n)


@store_errors
def cmd_run(args: argparse.Namespace) -> int:
    # lazy: the harness loads matplotlib, scipy and the test bed; other commands must not pay for them.
    from ackwise.experiments.harness.progress import Progress
    from ackwise.experiments.harness.runner import code_version, execute, plan
    from ackwise.experiments.harness.scenario import load

    scenario = load(args.scenario)
    warn_if_logging_build()
    where = _split(args.where)
    if where is not None and not where <= {"host", "switch", "ap"}:
        raise ExperimentCliError(f"--where {args.where}: give a comma-separated subset of host, switch, ap")
    shard = parse_shard(args.shard)
    start_before = _start_before(args.start_before)
    options = {"where": where, "policies": _split(args.policies), "repeats": args.repeats, "seed": args.seed}
    whole = plan(scenario, quick=args.quick, **options)  # type: ignore[arg-type]
    out = Path(args.out) if args.out else default_out(scenario.name, args.quick, shard)
    matrix: dict[str, Any] = {
        "points": sorted({r.point.label for r in whole}),
        "arms": [a.to_dict() for a in dict.fromkeys(r.arm for r in whole)],
        "repeats": max(r.repeat for r in whole) + 1,
        "seed": args.seed,
        "quick": args.quick,
    }
    if args.confirm:
        if shard is not None:
            raise ExperimentCliError("--confirm runs on one machine: drop --shard (merge the shards first)")
        if not scenario.compares():
            # make experiments CONFIRM=1 runs every scenario's pass: this one has none, and that is
            # not a failure (its report has no verdict to rest on one).
            print(f"{scenario.name}: no confirmation pass: it compares no arm with its baseline")
            return 0
        blocks = _confirm_blocks(args, scenario)
        runs, matrix, out = _confirmation(scenario, out, blocks, args.seed)
    else:
        runs = plan(scenario, quick=args.quick, shard=shard, **options)  # type: ignore[arg-type]
        if shard is not None:
            matrix["shard"] = list(shard)
    manifest = {
        "schema": 1,
        "scenario": scenario.to_dict(),
        "matrix": matrix,
        "code_version": code_version(),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(["ackwise", *(shlex.quote(a) for a in sys.argv[1:])]),
    }
    store = ResultStore.open(out, manifest, allow_mixing=args.allow_mixing)
    captures = out / "captures" if args.keep_captures else None
    done = store.completed(retry_failed=args.retry_failed)
    todo = [r for r in runs if r.run_id not in done]
    if todo and not args.allow_mixed_provenance:
        _refuse_another_machine(store, out)
    progress = Progress(
        total=len(runs),
        already=len(runs) - len(todo),
        hint_s=scenario.duration_hint_s,
        quiet=args.json,
        header=f"{scenario.name}: {len(runs)} runs ({len(todo)} to do) into {out}; "
        f"scale: {scenario.scale['what']}",
    )
    failed = 0
    started = 0
    with stop_on_signals(), progress:
        for run in todo:
            if start_before is not None and dt.datetime.now().astimezone() >= start_before:
                break
            started += 1
            progress.start_run(run.label())
            record = execute(run, scenario, on_progress=progress.update_run, keep_captures=captures)
            store.append(record)
            failed += record.status != "ok"
            progress.end_run(record)
            if args.json:
                print(
                    json.dumps(
                        {
                            "run_id": record.run_id,
                            "status": record.status,
                            "reason": record.reason,
                            "point": run.point.label,
                            "arm": run.arm.label(),
                            "repeat": run.repeat,
                            "metrics": record.metrics,
                        }
                    ),
                    flush=True,
                )
    if started < len(todo):
        print(f"{out}: {stopped_message(len(todo) - started, len(runs))}", file=sys.stderr)
        return EXIT_STOPPED
    if not args.json:
        report_dir = out.parent if args.confirm else out
        done_text = f"{len(todo)} runs done ({failed} failed) in {out}"
        print(f"{done_text}; report: ackwise experiment report {report_dir}")
    return 0


def _refuse_another_machine(store: ResultStore, out: Path) -> None:
    """Stop before the first run if this machine's tools would record other versions than the
    directory's runs did (a resumed part on a rebuilt machine, another kernel): a report refuses
    to pool them, so every run added would be wasted until the directory is split."""
    # lazy: the harness loads numpy and scipy, and tool_versions runs the tools; only `run` needs them.
    from ackwise.experiments.harness.comparison import machine_differences
    from ackwise.experiments.measure.versions import tool_versions

    records = store.records()
    if not records:
        return  # a new directory: nothing to differ from, and no tools to run
    differences = machine_differences(records, tool_versions())
    if differences:
        raise ExperimentCliError(
            f"{out}: its runs were made with other tools than this machine has "
            f"({'; '.join(differences)}), and a report does not pool them. Resume it on a machine "
            "like theirs, start a new --out, or pass --allow-mixed-provenance to add runs anyway "
            "(its report then needs --allow-mixed-provenance too)."
        )


def _start_before(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        return parse_start_before(text, dt.datetime.now().astimezone())
    except DeadlineError as exc:
        raise ExperimentCliError(str(exc)) from exc


def _confirmation(
    scenario: Any, screening: Path, blocks: int, seed: int
) -> tuple[list[Any], dict[str, Any], Path]:
    """The confirmation pass of a screened matrix: at every point, the baseline and the arms the
    scenario's confirm_arms names, else the best arm of each place on the screening runs' main
    metric, ``blocks`` fresh blocks each, into
    SCREENING/confirm (report.CONFIRM_DIR), whose runs the report's verdict then rests on."""
    # lazy: the harness loads matplotlib, scipy and the test bed; other commands must not pay for them.
    from ackwise.experiments.harness.comparison import (
        arm_results,
        best_per_category,
        emulator_limited,
        excluded_runs,
    )
    from ackwise.experiments.harness.report import CONFIRM_DIR
    from ackwise.experiments.harness.runner import plan_confirmation
    from ackwise.experiments.harness.schema import METRICS, Arm

    if not (screening / "runs.jsonl").exists():
        raise ExperimentCliError(
            f"--confirm: {screening} holds no screening runs: run the matrix first (same --out), "
            "then --confirm"
        )
    records = [r for r in ResultStore.load(screening).records() if r.scenario == scenario.name]
    named = scenario.confirmed_arms()
    chosen: dict[str, list[Arm]] = {}
    if named:
        # The arms the claim needs confirmed, at every point screened, whichever did best there.
        screened = {r.point["label"] for r in records}
        chosen = {p.label: list(named) for p in scenario.points if p.label in screened}
        chosen_on = "confirm_arms"
    else:
        chosen_on = scenario.metrics[0]  # load() saw to it that it has a better direction
        effects = arm_results(
            records,
            chosen_on,
            excluded_runs(records, emulator_limited),
            baseline_label=scenario.baseline_arm,
        )
        for (point, _place), result in best_per_category(effects, METRICS[chosen_on].better).items():
            chosen.setdefault(point, []).append(Arm.from_dict(result.arm))
    if not chosen:
        raise ExperimentCliError(f"--confirm: no arm in {screening} has an effect on {chosen_on} to confirm")
    first_repeat = max(r.repeat for r in records) + 1
    runs = plan_confirmation(scenario, chosen, blocks=blocks, first_repeat=first_repeat, seed=seed)
    matrix = {
        "points": sorted(chosen),
        "arms": [a.to_dict() for a in dict.fromkeys(r.arm for r in runs)],
        "repeats": first_repeat + blocks,
        "seed": seed,
        "quick": False,
        "stage": "confirm",
        "chosen": {point: [a.label() for a in arms] for point, arms in sorted(chosen.items())},
        "chosen_on": chosen_on,
    }
    return runs, matrix, screening / CONFIRM_DIR


EARLIER_YAML = " of an earlier version of its YAML"


def _confirm_blocks(args: argparse.Namespace, scenario: Scenario) -> int:
    """The confirmation pass's blocks per point: --confirm-blocks, else the scenario's."""
    return int(args.confirm_blocks or scenario.confirm_blocks)


def _add_confirm_blocks(p: argparse.ArgumentParser) -> None:
    """run and estimate take the same --confirm-blocks: the confirmation pass's length."""
    p.add_argument(
        "--confirm-blocks",
        type=int_in(2, 90),
        default=None,
        help="blocks per point of the confirmation pass (default: the scenario's confirm_blocks)",
    )


def _results_dirs() -> list[Path]:
    """Every results directory in the checkout: results/*, docs/* (a published or acceptance run,
    e.g. docs/chain-window) and docs/results/*; a confirmation pass is read with its directory."""
    roots = [REPO_ROOT / "results", REPO_ROOT / "docs", REPO_ROOT / "docs" / "results"]
    return sorted(d for root in roots if root.is_dir() for d in root.iterdir() if (d / "runs.jsonl").exists())


def _timing_records(scenario: Scenario, dirs: Sequence[Path]) -> tuple[Path | None, list[RunRecord], bool]:
    """The directory to time a scenario from, its records of the scenario, and whether they ran
    its current YAML. Any directory may hold it (results/NAME, a --out of one's own, docs/NAME-accept):
    the one with most runs of the current YAML wins, else the one with most runs of an earlier one."""
    # lazy: the report module loads matplotlib and Jinja2; other commands must not pay for them.
    from ackwise.experiments.harness.report import CONFIRM_DIR

    best: tuple[int, int, Path, list[RunRecord]] | None = None
    for d in dirs:
        records = [r for r in ResultStore.load(d).records() if r.scenario == scenario.name]
        if (d / CONFIRM_DIR / "runs.jsonl").exists():
            records += [r for r in ResultStore.load(d / CONFIRM_DIR).records() if r.scenario == scenario.name]
        if not records:
            continue
        current = [r for r in records if r.provenance.get("scenario_sha256") == scenario.source_sha256]
        key = (1, len(current)) if current else (0, len(records))
        if best is None or key > best[:2]:
            best = (*key, d, current or records)
    if best is None:
        return None, [], False
    return best[2], best[3], bool(best[0])


def cmd_estimate(args: argparse.Namespace) -> int:
    # lazy: the harness loads matplotlib, scipy and the test bed; other commands must not pay for them.
    from ackwise.experiments.harness import estimate
    from ackwise.experiments.harness.runner import plan
    from ackwise.experiments.harness.scenario import all_scenarios, load

    scenarios = [load(name) for name in args.scenarios] if args.scenarios else all_scenarios()
    if args.timings and len(scenarios) != 1:
        raise ExperimentCliError("--timings DIR: give one scenario (DIR holds that scenario's runs)")
    rows: list[list[str]] = []
    doc: list[dict[str, Any]] = []
    total = {"screening": 0.0, "confirmation": 0.0}
    declared_only: list[str] = []
    other_version: list[str] = []
    dirs = _results_dirs()
    for scenario in scenarios:
        if args.timings and not (Path(args.timings) / "runs.jsonl").exists():
            raise ExperimentCliError(f"--timings {args.timings}: no runs.jsonl there")
        source, records, current = _timing_records(scenario, [Path(args.timings)] if args.timings else dirs)
        try:
            if source is None:
                # Never run here: plan with the length the scenario declares, flagged as such.
                t = estimate.declared(scenario.duration_hint_s, f"{scenario.name}.yaml")
                declared_only.append(scenario.name)
            else:
                if not current:
                    # Runs of an earlier version of the YAML: its points or lengths may have changed since.
                    other_version.append(scenario.name)
                t = estimate.timings(records, str(source))
        except estimate.EstimateError as exc:
            raise ExperimentCliError(str(exc)) from exc
        planned = plan(scenario, repeats=args.repeats, quick=args.quick)
        screen = estimate.screening(planned, t)
        blocks = _confirm_blocks(args, scenario)
        confirm = (
            estimate.confirmation(planned, t, blocks, scenario.baseline(), scenario.confirmed_arms())
            if scenario.compares()
            else estimate.PassEstimate(0, 0.0, {})
        )
        total["screening"] += screen.seconds
        total["confirmation"] += confirm.seconds
        levels = ", ".join(f"{n} by {level}" for level, n in sorted(screen.matched.items()))
        rows.append(
            [
                scenario.name,
                f"{screen.runs} ({screen.seconds / screen.runs:.0f} s each)",
                f"{screen.seconds / 3600:.2f}",
                f"{confirm.runs} ({blocks} blocks)" if confirm.runs else "0 (no arm to compare)",
                f"{confirm.seconds / 3600:.2f}",
                (
                    f"{t.runs} runs{EARLIER_YAML if scenario.name in other_version else ''} "
                    f"in {_relative(source)}; {t.between_s:.1f} s between runs; {levels}"
                    if source is not None
                    else f"no runs yet: duration_hint_s {scenario.duration_hint_s:g} s declared in its YAML"
                ),
            ]
        )
        doc.append(
            {
                "scenario": scenario.name,
                "screening_runs": screen.runs,
                "screening_s": round(screen.seconds),
                "confirmation_runs": confirm.runs,
                "confirmation_blocks": blocks if confirm.runs else 0,
                "confirmation_s": round(confirm.seconds),
                "timings_from": str(source) if source is not None else estimate.DECLARED,
                "timed_runs": t.runs,
                "timed_from_earlier_yaml": scenario.name in other_version,
                "between_runs_s": round(t.between_s, 1),
                "matched": screen.matched,
            }
        )
    if args.json:
        print(
            json.dumps(
                {
                    "scenarios": doc,
                    "total_s": {k: round(v) for k, v in total.items()},
                    "declared_only": declared_only,
                    "timed_from_earlier_yaml": other_version,
                },
                indent=2,
            )
        )
        return 0
    print(
        render_table(
            [
                "scenario",
                "screening runs",
                "h",
                "confirmation runs",
                "h",
                "timed from",
            ],
            rows,
        )
    )
    hours = {k: v / 3600 for k, v in total.items()}
    print(
        f"total: screening {hours['screening']:.1f} h + confirmation {hours['confirmation']:.1f} h "
        f"= {sum(hours.values()):.1f} h of machine time, one run at a time. Per run: the median duration "
        "(test bed set-up to tear-down) of earlier runs of that point and arm (else arm, place, scenario) "
        "plus the median gap between runs; confirmation counts each place at its slowest arm (an upper "
        "bound)."
    )
    if other_version:
        print(
            "timed from runs of an earlier version of their YAML (points, arms or lengths may have changed "
            f"since; run each with --quick to time it as it is): {', '.join(other_version)}"
        )
    if declared_only:
        print(
            "not yet run here, timed from the duration_hint_s their YAML declares (a guess, not a "
            f"measurement; run each with --quick to time it): {', '.join(declared_only)}"
        )
    return 0


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


@store_errors
def cmd_report(args: argparse.Namespace) -> int:
    # lazy: the harness loads matplotlib, scipy and the test bed; other commands must not pay for them.
    from ackwise.experiments.harness.report import ReportError, report_text, write_report
    from ackwise.experiments.harness.store import merge_shards

    directories = [Path(d) for d in args.dirs]
    for directory in directories:
        if not (directory / "runs.jsonl").exists():
            raise ExperimentCliError(
                f"{directory} holds no runs.jsonl: give the --out of 'ackwise experiment run'"
            )
    if len(directories) > 1:
        out = (
            Path(args.merged_out)
            if args.merged_out
            else directories[0].parent / (directories[0].name.split("-shard-")[0] + "-merged")
        )
        directory = merge_shards(directories, out).directory
        print(f"merged {len(directories)} shards into {directory}", file=sys.stderr)
    else:
        directory = directories[0]
    mixed = args.allow_mixed_provenance
    try:
        paths = write_report(directory, allow_mixed_provenance=mixed)
        text = report_text(directory, allow_mixed_provenance=mixed)
    except ReportError as exc:
        raise ExperimentCliError(str(exc)) from exc
    if args.json:
        print(json.dumps({k: str(v) for k, v in vars(paths).items()}))
    else:
        print(text)
        print(f"\nwrote {paths.html} and {paths.markdown}, tables as CSV in {directory / 'tables'}")
    return 0


@store_errors
def cmd_compare(args: argparse.Namespace) -> int:
    """Two result sets of one scenario: per point and arm, the second's metric over the first's."""
    import csv

    # lazy: the harness loads matplotlib, scipy and the test bed; other commands must not pay for them.
    from ackwise.experiments.harness.comparison import compare_sets
    from ackwise.experiments.harness.schema import METRICS

    first, second = ResultStore.load(Path(args.first)), ResultStore.load(Path(args.second))
    names = [str((s.manifest.get("scenario") or {}).get("name")) for s in (first, second)]
    if names[0] != names[1]:
        raise ExperimentCliError(f"compare: {args.first} is scenario {names[0]}, {args.second} is {names[1]}")
    metric = args.metric or next(iter((first.manifest.get("scenario") or {}).get("metrics") or []), None)
    if metric not in METRICS:
        raise ExperimentCliError(f"--metric {metric}: give one of {', '.join(METRICS)}")
    rows = compare_sets(first.records(), second.records(), metric)
    if not rows:
        raise ExperimentCliError(f"compare: no point and arm has ok runs of {metric} in both sets")
    header = ["point", "arm", "runs A", "runs B", "B ÷ A", "95 % interval", "pairing", "verdict"]
    table = [
        [
            c.point,
            c.arm,
            str(c.n_first),
            str(c.n_second),
            "-" if c.ratio is None else f"{c.ratio:.3g}",
            "-" if c.ci_low is None else f"[{c.ci_low:.3g}, {c.ci_high:.3g}]",
            "by block" if c.paired else "unpaired (Welch, logs)",
            "; ".join([c.verdict, *c.notes]).strip("; "),
        ]
        for c in rows
    ]
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(
                ["point", "arm", "runs_a", "runs_b", "ratio", "ci_low", "ci_high", "paired", "verdict"]
            )
            writer.writerows(
                [c.point, c.arm, c.n_first, c.n_second, c.ratio, c.ci_low, c.ci_high, c.paired, c.verdict]
                for c in rows
            )
    if args.json:
        print(json.dumps([vars(c) for c in rows], default=str))
        return 0
    print(f"{names[0]}: {metric} ({METRICS[metric].label}), B = {args.second} over A = {args.first}")

    print(render_table(header, table))
    return 0


def add_commands(registry: Registry) -> None:
    # Nothing here talks to a switch over Thrift (the test beds start their own).
    command = functools.partial(registry.command, switch=False)
    ex = registry.group(
        "experiment",
        "the comparison: scenarios run with the ACK policy at the host, switch or AP",
        switch=False,
    )
    command(ex, "list", cmd_list, "the scenarios and what each reproduces")
    p = command(
        ex, "run", cmd_run, "run a scenario's matrix (point x arm x repeat), each run in a fresh test bed"
    )
    p.add_argument("scenario", help="a scenario name (ackwise experiment list) or a YAML file")
    p.add_argument("--where", help="only arms at these places: host,switch,ap (the baseline always runs)")
    p.add_argument("--policies", help="only arms using these policies, e.g. every_d,coalesce,tack")
    p.add_argument(
        "--repeats", type=int_in(1, 1000), help="repeats per point and arm (default: the scenario's)"
    )
    p.add_argument(
        "--seed", type=int_in(0, I32_MAX), default=1, help="traffic seeds and the run order derive from it"
    )
    p.add_argument("--quick", action="store_true", help="one repeat of the scenario's reduced matrix")
    p.add_argument("--out", help="results directory (default results/SCENARIO[-quick])")
    p.add_argument("--allow-mixing", action="store_true", help="add to a directory made by other code")
    p.add_argument("--retry-failed", action="store_true", help="run again the runs recorded as failed")
    p.add_argument(
        "--allow-mixed-provenance",
        action="store_true",
        help="add runs to a directory whose runs name other tool versions (kernel, bmv2, p4c, ...) than here",
    )
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="only the Kth of N disjoint parts of the matrix (whole blocks; merge them with report DIR...)",
    )
    p.add_argument(
        "--confirm",
        action="store_true",
        help="the confirmation pass: the baseline and the best arm of each place per point, on fresh blocks, "
        "into OUT/confirm (the report's verdict then rests on it)",
    )
    _add_confirm_blocks(p)
    p.add_argument("--keep-captures", action="store_true", help="keep each run's pcaps in OUT/captures/")
    p.add_argument(
        "--start-before",
        metavar="TIME",
        help="start no run at or after TIME (HH:MM or ISO 8601): a part of a long matrix; the same command "
        f"resumes it (exit status {EXIT_STOPPED} while runs are left)",
    )
    p = command(
        ex,
        "estimate",
        cmd_estimate,
        "how long each scenario's screening and confirmation passes take here, from earlier runs' records",
    )
    p.add_argument("scenarios", nargs="*", metavar="scenario", help="scenario names (default: all)")
    p.add_argument(
        "--timings",
        help="the results directory to time from (default: results/NAME, "
        "results/NAME-quick, docs/results/NAME, the first that exists)",
    )
    p.add_argument(
        "--repeats", type=int_in(1, 1000), help="repeats per point and arm (default: the scenario's)"
    )
    p.add_argument("--quick", action="store_true", help="the reduced matrix")
    _add_confirm_blocks(p)
    p = command(
        ex,
        "report",
        cmd_report,
        "write report.html, report.md, figures and CSV tables for a results directory (or merged shards)",
    )
    p.add_argument("dirs", nargs="+", metavar="dir", help="a results directory, or every shard of one matrix")
    p.add_argument("--merged-out", help="with several shards: where the merged directory goes")
    p.add_argument(
        "--allow-mixed-provenance",
        action="store_true",
        help="pool runs whose provenance differs (the report then lists what differs)",
    )
    p = command(ex, "compare", cmd_compare, "compare two result sets of one scenario: per arm, B over A")
    p.add_argument("first", help="results directory A")
    p.add_argument("second", help="results directory B")
    p.add_argument("--metric", help="the metric to compare (default: the scenario's main metric)")
    p.add_argument("--csv", help="also write the comparison as CSV to this file")
