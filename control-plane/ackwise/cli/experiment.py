"""``ackwise experiment``: the comparison. ``list`` the scenarios, ``run`` one's matrix (host vs
switch vs AP, each run in a fresh test bed, resumable), ``report`` a results directory.

The experiments and the test bed are imported when these commands run (Mininet is heavy and only
importable under the system Python)."""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ackwise.bmv2.toolchain import REPO_ROOT, warn_if_logging_build
from ackwise.cli.args import I32_MAX, int_in
from ackwise.errors import InputError
from ackwise.processes import stop_on_signals


class ExperimentCliError(InputError, RuntimeError):
    """An option or directory given to ``ackwise experiment`` that cannot be used as given."""


class ExperimentFailed(RuntimeError):
    """A valid request that could not be carried out (a damaged results directory)."""


def store_errors(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A results directory made by other code is the user's to resolve (--allow-mixing, another
    --out): exit 2; one that is damaged is a failure: exit 1. Both one line."""

    @functools.wraps(fn)
    def wrapped(args: argparse.Namespace) -> int:
        from ackwise.experiments.store import StoreError, StoreMismatch

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
    from ackwise.experiments.scenario import all_scenarios

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


def default_out(scenario: str, quick: bool) -> Path:
    return REPO_ROOT / "results" / f"{scenario}{'-quick' if quick else ''}"


@store_errors
def cmd_run(args: argparse.Namespace) -> int:
    from ackwise.experiments.progress import Progress
    from ackwise.experiments.runner import code_version, execute, plan
    from ackwise.experiments.scenario import load
    from ackwise.experiments.store import ResultStore

    scenario = load(args.scenario)
    warn_if_logging_build()
    where = _split(args.where)
    if where is not None and not where <= {"host", "switch", "ap"}:
        raise ExperimentCliError(f"--where {args.where}: give a comma-separated subset of host, switch, ap")
    runs = plan(
        scenario,
        where=where,
        policies=_split(args.policies),
        repeats=args.repeats,
        seed=args.seed,
        quick=args.quick,
    )
    out = Path(args.out) if args.out else default_out(scenario.name, args.quick)
    manifest = {
        "schema": 1,
        "scenario": scenario.to_dict(),
        "matrix": {
            "points": sorted({r.point.label for r in runs}),
            "arms": [a.to_dict() for a in dict.fromkeys(r.arm for r in runs)],
            "repeats": max(r.repeat for r in runs) + 1,
            "seed": args.seed,
            "quick": args.quick,
        },
        "code_version": code_version(),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(["ackwise", *(shlex.quote(a) for a in sys.argv[1:])]),
    }
    store = ResultStore.open(out, manifest, allow_mixing=args.allow_mixing)
    done = store.completed(retry_failed=args.retry_failed)
    todo = [r for r in runs if r.run_id not in done]
    progress = Progress(
        total=len(runs),
        already=len(runs) - len(todo),
        hint_s=scenario.duration_hint_s,
        quiet=args.json,
        header=f"{scenario.name}: {len(runs)} runs ({len(todo)} to do) into {out}; "
        f"scale: {scenario.scale['what']}",
    )
    failed = 0
    with stop_on_signals(), progress:
        for run in todo:
            progress.start_run(run.label())
            record = execute(run, scenario, on_progress=progress.update_run)
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
    if not args.json:
        print(f"{len(todo)} runs done ({failed} failed) in {out}; report: ackwise experiment report {out}")
    return 0


@store_errors
def cmd_report(args: argparse.Namespace) -> int:
    from ackwise.experiments.report import report_text, write_report

    directory = Path(args.dir)
    if not (directory / "runs.jsonl").exists():
        raise ExperimentCliError(
            f"{directory} holds no runs.jsonl: give the --out of 'ackwise experiment run'"
        )
    paths = write_report(directory)
    if args.json:
        print(json.dumps({k: str(v) for k, v in vars(paths).items()}))
    else:
        print(report_text(directory))
        print(f"\nwrote {paths.html} and {paths.markdown}")
    return 0


def add_commands(sub: Any, add: Any, group: Any) -> None:
    ex = group("experiment", "the comparison: scenarios run with the ACK policy at the host, switch or AP")
    add(ex, "list", cmd_list, "the scenarios and what each reproduces")
    p = add(
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
    p = add(ex, "report", cmd_report, "write report.html, report.md and figures for a results directory")
    p.add_argument("dir", help="a results directory (the --out of a run)")
