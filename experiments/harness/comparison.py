"""What the report concludes from an experiment's records, and how two result sets compare.

Pure: records in, conclusions out (no files, no clock).

- **Blocks.** A block is one point and repeat: every arm once, with the same traffic seed
  (runner.plan). Each arm's effect is its value over the baseline's in the same block
  (stats.paired_effect), so what changes from block to block (the machine's load, the traffic
  drawn) moves both sides of the comparison. A run that failed, or that another check flagged
  (``excluded_runs``), takes its block out of every comparison it is in: the baseline's, of every
  comparison at its point; an arm's, of that arm's.
- **Verdicts.** Per point and placement (host, switch, AP, combined), the arm with the best
  estimate on the main metric, with its ratio, interval and verdict (better / worse / no
  difference detected, with the smallest effect the blocks could have detected).
- **Provenance.** What a run ran with (its versions and Testbed.provenance()) must be the same
  for every run pooled: what every run shares (tools, builds, models, scenario file, scale) across
  the set, what a sender runs with within each arm (arms may set their own senders).
- **Compare.** Two result sets of one scenario: per point and arm, the second's metric over the
  first's, paired by block where both ran the same seeds, unpaired otherwise.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from ackwise.bmv2.toolchain import BuildConfig
from ackwise.experiments.harness.schema import BASELINE, METRICS, PLACES, RunRecord, canonical
from ackwise.experiments.harness.stats import (
    DEFAULT_CONFIDENCE,
    PairedEffect,
    paired_effect,
    present,
    split_groups,
)
from ackwise.experiments.harness.store import diff_paths

COMBINED = "combined"
CATEGORIES = (*PLACES, COMBINED)


def category(where: str) -> str:
    """The verdict column of an arm: its place, "combined" for several, "none" for the baseline."""
    return COMBINED if "+" in where else where


# ---- blocks and effects ----


RunKey = tuple[str, int, str]  # point label, repeat, arm label: one run of a block


def run_key(record: RunRecord) -> RunKey:
    return (str(record.point.get("label")), record.repeat, str(record.arm.get("label")))


def excluded_runs(
    records: Iterable[RunRecord], flagged: Callable[[RunRecord], str | None] | None = None
) -> dict[RunKey, str]:
    """The runs left out of every comparison they are in, with why: a failed run, or one
    ``flagged`` names a reason for (the emulator-limited check, say). A comparison of an arm with
    the baseline leaves a block out when either of its two runs is here (arm_results), so a run the
    baseline lost takes its whole block out, and one arm's fault only that arm's pair."""
    out: dict[RunKey, str] = {}
    for r in records:
        reason = (
            f"a run failed ({r.arm.get('label')})" if r.status != "ok" else (flagged(r) if flagged else None)
        )
        if reason:
            out.setdefault(run_key(r), reason)
    return out


def pair_excluded(excluded: Mapping[RunKey, str], point: str, repeat: int, *labels: str) -> bool:
    """Whether the block (point, repeat) is out of a comparison of the arms ``labels``."""
    return any((point, repeat, label) in excluded for label in labels)


@dataclass
class ArmResult:
    """One arm at one point: its runs' values of a metric, and its effect against the baseline."""

    point: str
    arm: dict[str, Any]
    values: list[float]  # every ok run, by repeat (shown as dots)
    repeats: list[int]
    effect: PairedEffect | None  # None for the baseline itself, or where it has no run
    split: tuple[list[float], list[float]] | None = None
    inert: str | None = None  # why the arm compares the baseline with itself (inert_reason)

    @property
    def label(self) -> str:
        return str(self.arm.get("label"))

    @property
    def where(self) -> str:
        return str(self.arm.get("where"))


# A switch arm whose switches thinned at most this share of the pure ACKs they saw, in its runs at
# a point, is inert there: its runs are the baseline's with a switch that looked on. Its effect is
# shown but not ranked (best_per_category), so that a place's verdict and the confirmation pass
# rest on an arm that acted: coalesce on a port that never queues (the queue in the emulated link
# behind it, docs/ack-thinning.md "Where the queue is") once won the screening of four scenarios.
INERT_THINNED_FRACTION = 0.01


def inert_reason(runs: Sequence[RunRecord]) -> str | None:
    """Why an arm's ok runs at one point compare the baseline with itself, or None: its switches
    (the runner's ``switch_policies`` series) saw no pure ACK, or thinned at most
    INERT_THINNED_FRACTION of those they saw. None too when a run did not record what its switches
    did (an arm without a switch policy, or records older than the series)."""
    reports = [r.series.get("switch_policies") for r in runs if r.status == "ok"]
    if not reports or any(not report for report in reports):
        return None
    seen = sum(int(s["acks_seen"]) for report in reports for s in report)
    thinned = sum(int(s["acks_thinned"]) for report in reports for s in report)
    runs_text = f"{len(reports)} run{'s' if len(reports) != 1 else ''}"
    if seen == 0:
        return f"its switches saw no pure ACK ({runs_text})"
    if thinned > INERT_THINNED_FRACTION * seen:
        return None
    return (
        f"its switches thinned {thinned} of the {seen} pure ACKs they saw ({100 * thinned / seen:.2g} %, "
        f"{runs_text})"
    )


def arm_results(
    records: Sequence[RunRecord],
    metric: str,
    excluded: Mapping[RunKey, str],
    confidence: float = DEFAULT_CONFIDENCE,
    baseline_label: str = "",
) -> list[ArmResult]:
    """Every (point, arm) of the records on ``metric``: values, split flag, and the paired effect
    over the blocks where both the arm and the baseline have a value and neither run is excluded.
    The baseline is the arm labelled ``baseline_label`` (a scenario's baseline_arm), else the one
    with nothing on."""
    by_cell: dict[tuple[str, str], dict[int, RunRecord]] = defaultdict(dict)
    arms: dict[str, dict[str, Any]] = {}
    points: list[str] = []
    for r in records:
        point, label = str(r.point.get("label")), str(r.arm.get("label"))
        if point not in points:
            points.append(point)
        arms.setdefault(label, r.arm)
        if r.status == "ok":
            by_cell[(point, label)][r.repeat] = r
    results = []
    base_label = baseline_label or next((lbl for lbl, a in arms.items() if a.get("where") == BASELINE), None)
    for point in points:
        baseline = by_cell.get((point, base_label), {}) if base_label is not None else {}
        for label, arm in arms.items():
            runs = by_cell.get((point, label))
            if not runs:
                continue
            ordered = sorted(runs)
            pairs = [
                (value, base)
                for rep in ordered
                if not pair_excluded(excluded, point, rep, label, str(base_label))
                and rep in baseline
                and (value := runs[rep].metrics.get(metric)) is not None
                and (base := baseline[rep].metrics.get(metric)) is not None
            ]
            values = [runs[rep].metrics.get(metric) for rep in ordered]
            kept = present(values)
            effect = None
            if label != base_label and baseline:
                effect = paired_effect([a for a, _ in pairs], [b for _, b in pairs], confidence)
            results.append(
                ArmResult(
                    point,
                    arm,
                    kept,
                    [rep for rep, v in zip(ordered, values, strict=True) if v is not None],
                    effect,
                    split_groups(kept),
                    inert_reason(list(runs.values())),
                )
            )
    return results


def strength(effect: PairedEffect, better: str) -> float:
    """How good an estimate is, larger better: log ratio (or difference) signed by direction."""
    assert effect.estimate is not None
    value = math.log(effect.estimate) if effect.scale == "ratio" and effect.estimate > 0 else effect.estimate
    return value if better == "higher" else -value


def best_per_category(results: Sequence[ArmResult], better: str) -> dict[tuple[str, str], ArmResult]:
    """(point, category) -> the arm with the best estimate there (arms with an effect that are not
    inert only)."""
    best: dict[tuple[str, str], ArmResult] = {}
    for r in results:
        if r.effect is None or r.effect.estimate is None or r.where == BASELINE or r.inert:
            continue
        key = (r.point, category(r.where))
        if key not in best or strength(r.effect, better) > strength(best[key].effect, better):  # type: ignore[arg-type]
            best[key] = r
    return best


def effect_text(effect: PairedEffect) -> str:
    """'0.83× [0.78, 0.88] (10 blocks)': the estimate over the baseline and its interval."""
    if effect.estimate is None:
        return "no block with both runs"
    blocks = f"({effect.n} block{'s' if effect.n != 1 else ''})"
    if effect.scale == "ratio":
        text = f"{effect.estimate:.3g}×"
        if effect.ci_low is not None and effect.ci_high is not None:
            text += f" [{effect.ci_low:.3g}, {effect.ci_high:.3g}]"
        return f"{text} {blocks}"
    text = f"{effect.estimate:+.3g}"
    if effect.ci_low is not None and effect.ci_high is not None:
        text += f" [{effect.ci_low:+.3g}, {effect.ci_high:+.3g}]"
    return f"{text} (difference) {blocks}"


def verdict_text(effect: PairedEffect, better: str) -> str:
    """'better', 'worse', 'too few blocks' or 'no difference detected (could detect ±6.1 %)'."""
    verdict = effect.verdict(better)
    if verdict != "no difference detected" or effect.detectable is None:
        return verdict
    if effect.detectable == (1.0 if effect.scale == "ratio" else 0.0):
        # The blocks' differences do not vary, and the interval holds no effect: every block
        # gave the arm the baseline's value ("could detect ±0" said nothing a reader could use).
        return "no difference: equal in every block"
    if effect.scale == "ratio":
        return f"{verdict} (could detect ±{(effect.detectable - 1) * 100:.1f} %)"
    return f"{verdict} (could detect ±{effect.detectable:.3g})"


def describe_effect(effect: PairedEffect, better: str) -> str:
    """'0.83× [0.78, 0.88] (10 blocks), better'."""
    return f"{effect_text(effect)}, {verdict_text(effect, better)}"


# ---- provenance ----

# The versions that must agree across a result set (the code version has its own rule: store.py).
SHARED_VERSIONS = ("simple_switch", "bmv2_build", "p4c", "kernel", "mininet", "iperf3")
# What a host's provenance says that must agree within an arm.
_SENDER_KEYS = (
    "tcp_congestion_control",
    "tcp_ecn",
    "tcp_sack",
    "tcp_timestamps",
    "initcwnd",
    "initrwnd",
    "offloads",
)
NOT_RECORDED = "not recorded"


def shared_provenance(record: RunRecord) -> dict[str, Any]:
    """What every run of a result set must share: tools, switch builds, models, scenario, scale."""
    p = record.provenance or {}
    builds = sorted(
        {
            canonical({k: v for k, v in (b or {}).items() if k != "executable"})
            for b in (p.get("bmv2_builds") or {}).values()
        }
    )
    return {
        "versions": {k: record.versions.get(k, NOT_RECORDED) for k in SHARED_VERSIONS},
        "bmv2_builds": builds if p else NOT_RECORDED,
        "link_model": p.get("link_model", NOT_RECORDED if not p else "none"),
        "airtime_model": p.get("airtime_model", NOT_RECORDED if not p else "none"),
        "scenario_sha256": p.get("scenario_sha256", NOT_RECORDED),
        "scale": record.scale,
    }


def sender_provenance(record: RunRecord) -> dict[str, Any]:
    """What the hosts of one run ran TCP with (must agree within an arm)."""
    hosts = (record.provenance or {}).get("hosts")
    if not hosts:
        return {"hosts": NOT_RECORDED}
    return {"hosts": {name: {k: h.get(k) for k in _SENDER_KEYS} for name, h in sorted(hosts.items())}}


def provenance_differences(records: Sequence[RunRecord]) -> list[str]:
    """Why these records should not be pooled: each place where two runs' provenance differs
    (the first run of each variant against the first run overall; the hosts' TCP within each
    point and arm), empty when they agree."""
    if not records:
        return []
    out: list[str] = []
    first = records[0]
    seen: set[str] = {canonical(shared_provenance(first))}
    for r in records[1:]:
        key = canonical(shared_provenance(r))
        if key not in seen:
            seen.add(key)
            out += [
                f"run {r.run_id} vs run {first.run_id}: {d}"
                for d in diff_paths(shared_provenance(first), shared_provenance(r))
            ]
    # The hosts per point and arm: a point may set its own hosts (a WLAN's 1 or 3 stations, whose
    # sta2 and sta3 exist at one point only), an arm its own senders; the runs of one cell pool.
    by_cell: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for r in records:
        by_cell[(str(r.point.get("label")), str(r.arm.get("label")))].append(r)
    for (point, label), runs in by_cell.items():
        base = sender_provenance(runs[0])
        seen_cell = {canonical(base)}
        for r in runs[1:]:
            key = canonical(sender_provenance(r))
            if key not in seen_cell:
                seen_cell.add(key)
                out += [
                    f"point {point}, arm {label}, run {r.run_id} vs run {runs[0].run_id}: {d}"
                    for d in diff_paths(base, sender_provenance(r))
                ]
    return out


def machine_differences(records: Sequence[RunRecord], versions: Mapping[str, str]) -> list[str]:
    """Where the tools of this machine (``tool_versions()``) differ from a directory's runs, among
    the versions a report will not pool (SHARED_VERSIONS), against its first run as
    provenance_differences compares. Checked before a run adds to the directory, so that a resume
    on another machine stops before its first run, not at the report after the last."""
    if not records:
        return []
    first = records[0]
    theirs = shared_provenance(first)["versions"]
    return [
        f"versions.{key}: {theirs[key]!r} in its runs (run {first.run_id}), {ours!r} here"
        for key in SHARED_VERSIONS
        for ours in [versions.get(key, NOT_RECORDED)]
        if theirs[key] != ours
    ]


def provenance_rows(records: Sequence[RunRecord]) -> list[tuple[str, str]]:
    """The report's provenance block: (what, value with how many runs had it)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def add(name: str, value: Any) -> None:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        counts[name][text] += 1

    for r in records:
        shared = shared_provenance(r)
        for tool, version in shared["versions"].items():
            add(tool, version)
        builds = shared["bmv2_builds"]
        add(
            "bmv2 build of the switches",
            builds
            if isinstance(builds, str)
            else "; ".join(_build_text(json.loads(b)) for b in builds) or "no switch",
        )
        for key in ("link_model", "airtime_model", "scenario_sha256"):
            add(key.replace("_", " "), shared[key])
        add("scale factor", str(r.scale.get("factor")))
        hosts = sender_provenance(r)["hosts"]
        if isinstance(hosts, str):
            add("senders' TCP", hosts)
            continue
        for name, settings in hosts.items():
            offloads = settings.get("offloads") or {}
            on = sorted({f for intf in offloads.values() for f, state in intf.items() if state == "on"})
            add(
                f"{name}: TCP",
                f"{settings.get('tcp_congestion_control')}, ECN {settings.get('tcp_ecn')}, "
                f"SACK {settings.get('tcp_sack')}, timestamps {settings.get('tcp_timestamps')}, "
                f"initcwnd {settings.get('initcwnd')}, offloads on: {', '.join(on) or 'none'}",
            )
    rows = []
    for name, values in counts.items():
        if len(values) == 1:
            rows.append((name, next(iter(values))))
        else:
            rows.append(
                (name, "; ".join(f"{v} ({n} runs)" for v, n in sorted(values.items(), key=lambda x: -x[1])))
            )
    return rows


def _build_text(build: dict[str, Any]) -> str:
    """A recorded build configuration as BuildConfig.describe() says it."""
    fields = ("config_h", "logging_macros", "event_logger", "optimisation")
    return BuildConfig("", *(build.get(k) for k in fields)).describe()


# ---- two result sets ----


@dataclass
class Comparison:
    """The second result set's metric over the first's at one point and arm."""

    point: str
    arm: str
    paired: bool  # by block (same seeds), or unpaired (Welch on logs)
    n_first: int
    n_second: int
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str = ""
    notes: list[str] = field(default_factory=list)


def compare_sets(
    first: Sequence[RunRecord],
    second: Sequence[RunRecord],
    metric: str,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[Comparison]:
    """Per (point, arm) both sets have ok runs of: second ÷ first on ``metric``."""
    better = METRICS[metric].better

    def cells(records: Sequence[RunRecord]) -> dict[tuple[str, str], dict[tuple[int, int], float]]:
        out: dict[tuple[str, str], dict[tuple[int, int], float]] = defaultdict(dict)
        for r in records:
            value = r.metrics.get(metric)
            if r.status == "ok" and value is not None:
                out[(str(r.point.get("label")), str(r.arm.get("label")))][(r.repeat, r.seed)] = float(value)
        return out

    a, b = cells(first), cells(second)
    result = []
    for key in [k for k in a if k in b]:
        runs_a, runs_b = a[key], b[key]
        common = sorted(set(runs_a) & set(runs_b))
        if len(common) >= 2 and len(common) == len(runs_a) == len(runs_b):
            effect = paired_effect([runs_b[k] for k in common], [runs_a[k] for k in common], confidence)
            comp = Comparison(
                key[0], key[1], True, len(runs_a), len(runs_b), effect.estimate, effect.ci_low, effect.ci_high
            )
            comp.verdict = effect.verdict(better) if better else ""
        else:
            comp = _welch_log_ratio(key, list(runs_a.values()), list(runs_b.values()), confidence, better)
        result.append(comp)
    return result


def _welch_log_ratio(
    key: tuple[str, str], first: list[float], second: list[float], confidence: float, better: str
) -> Comparison:
    comp = Comparison(key[0], key[1], False, len(first), len(second), None, None, None)
    if min(first + second) <= 0:
        comp.notes.append("a value is 0 or negative: no ratio")
        return comp
    la, lb = np.log(first), np.log(second)
    comp.ratio = float(math.exp(lb.mean() - la.mean()))
    if len(first) < 2 or len(second) < 2:
        comp.verdict = "too few runs"
        return comp
    va, vb = la.var(ddof=1) / len(la), lb.var(ddof=1) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0:
        comp.ci_low = comp.ci_high = comp.ratio
    else:
        df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
        t = float(scipy_stats.t.ppf((1 + confidence) / 2, df))
        diff = lb.mean() - la.mean()
        comp.ci_low, comp.ci_high = math.exp(diff - t * se), math.exp(diff + t * se)
    if comp.ci_low > 1 or comp.ci_high < 1:  # type: ignore[operator]
        higher = comp.ci_low > 1  # type: ignore[operator]
        comp.verdict = ("better" if higher == (better == "higher") else "worse") if better else "different"
    else:
        comp.verdict = "no difference detected"
    return comp


# ---- runs where the emulator, not the policy, set the pace ----

# A run is "emulator-limited" when the machine that emulates the network could not keep up: some
# task waited for a CPU during more than CPU_PRESSURE_MAX of the traffic's time (Linux's pressure
# stall information, "some"), a switch's or linkem's busiest thread was as busy as one core
# allows, or linkem sent frames late by more than the timing it emulates. Calibrated on this
# machine (docs/testbed.md, "Emulator-limited runs"): parking-lot at 40 Mbit/s, where the switch
# arms finish 30-40 % behind the baseline on either build, is flagged (pressure 0.79-0.92) and its
# baseline is not (0.69-0.77); at the scenario's 10 Mbit/s, where no arm is slowed, nothing is
# (0.36-0.69).
CPU_PRESSURE_MAX = 0.78
THREAD_CORES_MAX = 0.9  # a pipeline thread near one full core is the bottleneck
LATE_SHARE_MAX = 0.01  # share of a linkem's frames sent more than 10 ms after they were due
# A host agent (hosts/agent.py) stands in for an ACK policy a receiver's kernel would run: every
# segment of its flows passes through its NFQUEUE queues. A packet the kernel dropped there because
# the agent had not read the queue in time (the queue full, or the agent's socket) is a data segment
# lost at the receiver, or an ACK never sent, that the policy never decided on: the test bed's loss,
# not the policy's. Any such drop flags the run (2026-11-29: the 802.11n and ac host arms of wlan-comparison
# and wlan-ack-frequency lost up to 5680 segments a run this way; no other run of the coherent run
# at bfaedbc lost one).
AGENT_QUEUE_DROPS_MAX = 0


def agent_queue_drops(record: RunRecord) -> dict[str, int]:
    """Packets each host agent's NFQUEUE queues dropped before the agent saw them, by receiver
    and queue (only those with drops): records without host agents, or from before the agents
    reported their queues, have none."""
    drops: dict[str, int] = {}
    for host in (record.series or {}).get("host_agents") or []:
        queues = ((host.get("agent") or {}).get("nfqueue")) or {}
        for queue, counters in sorted(queues.items()):
            dropped = int(counters.get("queue_dropped", 0)) + int(counters.get("user_dropped", 0))
            if dropped:
                drops[f"{host.get('receiver', '?')} {queue}"] = dropped
    return drops


def emulator_limited(record: RunRecord) -> str | None:
    """Why this run's emulator (the machine, a switch, a linkem or a host agent) was the
    bottleneck, or None (also for records without resources)."""
    drops = agent_queue_drops(record)
    if sum(drops.values()) > AGENT_QUEUE_DROPS_MAX:
        where = ", ".join(f"{n} from {q}" for q, n in drops.items())
        return f"the host agent's NFQUEUE dropped packets it never saw ({where})"
    used = record.resources or {}
    pressure = used.get("cpu_pressure")
    if pressure is not None and pressure > CPU_PRESSURE_MAX:
        return f"tasks waited for a CPU {pressure:.0%} of the time (limit {CPU_PRESSURE_MAX:.0%})"
    for name, cores in sorted((used.get("emulator_busiest_thread") or {}).items()):
        if cores >= THREAD_CORES_MAX:
            return f"a thread of {name} used {cores:.2f} cores (limit {THREAD_CORES_MAX})"
    for name, late in sorted((used.get("linkem_lateness") or {}).items()):
        frames = late.get("frames") or 0
        if frames and late.get("over_10ms", 0) / frames > LATE_SHARE_MAX:
            return f"{name} sent {late['over_10ms']} of {frames} frames over 10 ms late"
    return None
