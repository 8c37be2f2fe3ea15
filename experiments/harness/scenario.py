"""Scenarios of the comparison, read from ``experiments/scenarios/NAME.yaml`` (data, not code).

A scenario names its topology and base parameters, the axis it sweeps (each point sets topology
parameters), the traffic, where ACKs are counted, the metrics it reports (main first), the
figures, the arms (where the ACK policy runs and with which parameters), what a quick run keeps,
the seed claims it reproduces, and how it was scaled to fit bmv2 on a small machine. The schema
is checked when the file is read: a wrong key or value names the file, the key and what is allowed.

A scenario may name another as its ``base``: it then has every key of the base's file that it
does not set itself (``params`` merged, its own over the base's), so that a variant of a scenario
(other points, other arms) does not copy its set-up.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from ackwise.errors import InputError
from ackwise.experiments.harness.figures import validate_figure_spec
from ackwise.experiments.harness.schema import METRICS, PER_POINT, Arm, Point, PolicySpec, is_scale_factor
from ackwise.experiments.measure.udp_answers import rule_for

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"  # experiments/scenarios: data
TRAFFIC_KINDS = ("transfers", "short-flows", "piggyback", "udp-answers")
# TACK Fig. 13's UDP (experiments/measure/udp_answers.py): its keys, and the policies a host arm
# may run there (the receiving application runs them: no agent, no TCP).
UDP_ANSWERS = "udp-answers"
UDP_ANSWERS_KEYS = ("kind", "offered_mbps", "warmup_s", "measure_s", "tack_rtt_min_s", "timeout_s", "flows")
# A point parameter that is not a topology's (the runner passes no "_" key to the topology): the
# traffic keys this point sets over the scenario's, and the keys it may set (the piggyback
# traffic's mode and bytes written back per read: Shang and Wills' N sweep, 2Con, 1Con).
POINT_TRAFFIC = "_traffic"
POINT_TRAFFIC_KEYS = ("size_bytes", "timeout_s", "mode", "write_bytes", "offered_mbps")
# The confirmation pass's blocks per point, unless a scenario sets confirm_blocks.
CONFIRM_BLOCKS = 10


class ScenarioError(InputError, ValueError):
    """A scenario file that is not valid; the message names the file and the fix."""


@dataclass(frozen=True)
class Claim:
    source: str  # "smartacking §4.2", "TACK Fig. 12"
    claim: str  # what the source reports
    check: str = ""  # how this scenario's numbers test it
    differs: str = ""  # what still differs from the source's set-up (sender, sizes, topology)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    reproduces: tuple[Claim, ...]
    topology: str
    params: dict[str, Any]
    axis: dict[str, str]  # {"name": ..., "unit": ...}
    points: tuple[Point, ...]
    traffic: dict[str, Any]
    capture: dict[str, Any]  # {"intf": NAME, "what": "..."}: where ACKs per data segment are counted
    metrics: tuple[str, ...]
    figures: tuple[dict[str, Any], ...]
    arms: tuple[Arm, ...]
    arm_params: tuple[dict[str, Any], ...]  # topology parameters an arm sets (the AP proxy: proxy=true)
    repeats: int
    quick: dict[str, Any]  # {"points": [labels], "arms": [labels], "repeats": n}
    scale: dict[str, Any]  # {"factor": float, "what": str}
    switch_ecn: tuple[dict[str, Any], ...]  # ECN thresholds set in every run: {switch, toward, k}
    duration_hint_s: float  # one run, for the progress display's first estimate
    source_path: str = ""
    source_sha256: str = ""  # of the YAML file as read: every run record names the file it ran
    # The seed's own baseline, the arm every other is compared with (its label); "" for nothing on
    # (Linux's receiver as it is). Altman and Jimenez compare with standard TCP, an ACK per
    # segment: `baseline_arm: {host: quickack}`.
    baseline_arm: str = ""
    # Blocks per point of the confirmation pass (ackwise experiment run --confirm, unless
    # --confirm-blocks says otherwise).
    confirm_blocks: int = CONFIRM_BLOCKS
    # The arms a claim needs confirmed (their labels): the confirmation pass runs them beside the
    # baseline at every point, whichever did best in the screening (Landstrom's 4W, 2W and A4L4
    # against delayed ACK). Empty: the best arm of each place on the main metric, which must then
    # have a better direction (load() refuses a scenario that gives neither).
    confirm_arms: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The definition as data (what a results directory records): no absolute paths, so the
        same scenario from another checkout is the same scenario. (The file's hash is in each run's
        provenance instead: a comment edited in the YAML is not another scenario.)"""
        d = asdict(self)
        d["source_path"] = Path(self.source_path).name
        del d["source_sha256"]
        d["arms"] = [
            a.to_dict() | {"topology_params": p} for a, p in zip(self.arms, self.arm_params, strict=True)
        ]
        del d["arm_params"]
        return d

    def baseline(self) -> Arm:
        """The arm every other is compared with (baseline_arm; nothing on by default)."""
        return next((a for a in self.arms if a.label() == self.baseline_arm), Arm())

    def compares(self) -> bool:
        """Whether any arm is compared with the baseline: a scenario of the baseline alone (a
        paper's measurement, reproduced) has no verdict, so no confirmation pass."""
        baseline = self.baseline()
        return any(a != baseline for a in self.arms)

    def confirmed_arms(self) -> tuple[Arm, ...]:
        """The arms confirm_arms names, at every point of the confirmation pass (run --confirm and
        the estimate alike); empty when the pass picks each place's best on the main metric."""
        by_label = {a.label(): a for a in self.arms}
        return tuple(by_label[label] for label in self.confirm_arms)

    def arm_topology_params(self, arm: Arm) -> dict[str, Any]:
        return dict(self.arm_params[self.arms.index(arm)])

    def point_traffic(self, point: Point) -> dict[str, Any]:
        """The traffic at ``point``: the scenario's, with what the point's ``_traffic`` sets (a
        transfer size per 802.11 standard, say: the same bytes are seconds on 802.11b and a few
        round trips on 802.11ac)."""
        return dict(self.traffic) | dict(point.params.get(POINT_TRAFFIC) or {})

    def point(self, label: str) -> Point:
        for p in self.points:
            if p.label == label:
                return p
        raise ScenarioError(
            f"{self.name}: no point {label!r}; points: {', '.join(p.label for p in self.points)}"
        )


def _need(doc: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in doc:
        raise ScenarioError(f"{where}: missing key {key!r}")
    value = doc[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ScenarioError(f"{where}: {key!r} must be a {names}, not {type(value).__name__}")
    return value


def _policy(doc: Any, where: str) -> PolicySpec | None:
    if doc is None:
        return None
    if isinstance(doc, str):
        return PolicySpec(doc)
    if isinstance(doc, dict) and "policy" in doc:
        params = doc.get("params") or {}
        if not isinstance(params, dict):
            raise ScenarioError(f"{where}: params must be a mapping")
        return PolicySpec(str(doc["policy"]), {str(k): str(v) for k, v in params.items()})
    raise ScenarioError(f"{where}: write a policy name, or {{policy: NAME, params: {{...}}}}")


def _arm(doc: Any, where: str) -> tuple[Arm, dict[str, Any]]:
    if not isinstance(doc, dict):
        raise ScenarioError(f"{where}: an arm is a mapping with host, switch (and switches), ap")
    unknown = set(doc) - {"host", "switch", "switches", "ap", "topology_params"}
    if unknown:
        raise ScenarioError(
            f"{where}: unknown keys {', '.join(sorted(unknown))} (host, switch, switches, ap)"
        )
    switch = _policy(doc.get("switch"), f"{where}.switch")
    switches = tuple(doc.get("switches") or ())
    if switch is not None and not switches:
        raise ScenarioError(f"{where}: a switch policy needs 'switches: [NAME, ...]' (which switch runs it)")
    arm = Arm(_policy(doc.get("host"), f"{where}.host"), switch, switches, bool(doc.get("ap", False)))
    params = dict(doc.get("topology_params") or {})
    return arm, params


def _check_udp_answers(traffic: dict[str, Any], arms: Any, where: str) -> None:
    """udp-answers traffic: its keys, numbers where numbers go, and arms the receiving application
    can run (the baseline, host every_d or tack); a switch or AP arm would change nothing there."""
    unknown = set(traffic) - set(UDP_ANSWERS_KEYS)
    if unknown:
        raise ScenarioError(
            f"{where}: traffic {UDP_ANSWERS} has no {', '.join(sorted(unknown))}; "
            f"keys: {', '.join(UDP_ANSWERS_KEYS[1:])}"
        )
    for key in ("offered_mbps", "warmup_s", "measure_s"):
        if not isinstance(traffic.get(key), int | float) or traffic[key] <= 0:
            raise ScenarioError(f"{where}: traffic {UDP_ANSWERS} needs {key} > 0 (the emulated network's)")
    for i, arm in enumerate(arms or []):
        if not isinstance(arm, dict):
            continue
        if set(arm) - {"host"}:
            raise ScenarioError(
                f"{where}: arms[{i}]: with {UDP_ANSWERS} traffic an arm is the baseline or a host policy "
                "(the receiving application answers), not a switch or AP"
            )
        spec = _policy(arm.get("host"), f"{where}: arms[{i}].host")
        if spec is not None:
            try:
                rule_for(spec.name, spec.params, 1.0)
            except ValueError as exc:
                raise ScenarioError(f"{where}: arms[{i}]: {exc}") from None


def _read_yaml(path: Path, shown: str) -> tuple[Any, str]:
    """A scenario file's document and its text (hashed into every run's provenance)."""
    text = path.read_text()
    try:
        return yaml.safe_load(text), text
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{shown}: not valid YAML: {exc}") from None


def _with_base(doc: dict[str, Any], path: Path, text: str, where: str) -> tuple[dict[str, Any], str]:
    """``doc`` over the scenario it names as ``base`` (a file beside it), and the text the
    scenario's hash covers: the base's then its own (an edit to either is another scenario)."""
    base_path = path.parent / f"{doc['base']}.yaml"
    if not base_path.is_file():
        raise ScenarioError(f"{where}: base {doc['base']!r}: no {base_path.name} beside it")
    base, base_text = _read_yaml(base_path, base_path.name)
    if not isinstance(base, dict) or "base" in base:
        raise ScenarioError(f"{where}: base {doc['base']!r} must be a scenario without a base of its own")
    own = {k: v for k, v in doc.items() if k != "base"}
    merged = {k: v for k, v in base.items() if k != "name"} | own
    merged["params"] = dict(base.get("params") or {}) | dict(own.get("params") or {})
    return merged, base_text + text


def load(name_or_path: str | Path) -> Scenario:
    path = Path(name_or_path)
    if not path.suffix:
        path = SCENARIO_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml")))
        raise ScenarioError(f"no scenario {str(name_or_path)!r}; known: {known}")
    doc, text = _read_yaml(path, str(path))
    where = path.name
    if not isinstance(doc, dict):
        raise ScenarioError(f"{where}: a scenario is a mapping")
    if "base" in doc:
        doc, text = _with_base(doc, path, text, where)
    name = _need(doc, "name", str, where)
    if name != path.stem:
        raise ScenarioError(f"{where}: name {name!r} must match the file name")
    claims = tuple(
        Claim(str(c["source"]), str(c["claim"]), str(c.get("check", "")), str(c.get("differs", "")))
        for c in _need(doc, "reproduces", list, where)
    )
    axis = dict(doc.get("axis") or {"name": "", "unit": ""})
    points_doc = doc.get("points") or [{"x": "", "label": "default", "params": {}}]
    points = []
    for i, p in enumerate(points_doc):
        if not isinstance(p, dict) or "label" not in p:
            raise ScenarioError(f"{where}: points[{i}] needs a label (and x, params)")
        if set(p) - {"x", "label", "params"}:
            # a key the loader would ignore (a point's traffic goes in params._traffic)
            raise ScenarioError(
                f"{where}: points[{i}] has {', '.join(sorted(set(p) - {'x', 'label', 'params'}))}: "
                f"a point has x, label and params (its traffic settings in params.{POINT_TRAFFIC})"
            )
        points.append(Point(p.get("x", p["label"]), str(p["label"]), dict(p.get("params") or {})))
        unknown = {k for k in points[-1].params if k.startswith("_")} - {POINT_TRAFFIC}
        overrides = points[-1].params.get(POINT_TRAFFIC) or {}
        if unknown or not isinstance(overrides, dict) or set(overrides) - set(POINT_TRAFFIC_KEYS):
            raise ScenarioError(
                f"{where}: points[{i}]: a parameter starting with '_' must be {POINT_TRAFFIC}, "
                f"a mapping of {', '.join(POINT_TRAFFIC_KEYS)}"
            )
    if len({p.label for p in points}) != len(points):
        raise ScenarioError(f"{where}: point labels must be unique")
    traffic = dict(_need(doc, "traffic", dict, where))
    if traffic.get("kind") not in TRAFFIC_KINDS:
        raise ScenarioError(f"{where}: traffic.kind must be one of {', '.join(TRAFFIC_KINDS)}")
    if traffic["kind"] == UDP_ANSWERS:
        _check_udp_answers(traffic, doc.get("arms"), where)
    metrics = tuple(_need(doc, "metrics", list, where))
    for m in metrics:
        if m not in METRICS:
            raise ScenarioError(f"{where}: unknown metric {m!r}; known: {', '.join(METRICS)}")
    figures = tuple(dict(f) for f in doc.get("figures") or ())
    for f in figures:
        problems = validate_figure_spec(f)
        if problems:
            raise ScenarioError(f"{where}: figure {f.get('title', f.get('kind'))!r}: {'; '.join(problems)}")
    arms_and_params = [_arm(a, f"{where}: arms[{i}]") for i, a in enumerate(_need(doc, "arms", list, where))]
    arms = tuple(a for a, _ in arms_and_params)
    if len(set(arms)) != len(arms):
        raise ScenarioError(f"{where}: two arms are the same")
    if Arm() not in arms:
        raise ScenarioError(f"{where}: every scenario needs the baseline arm ({{}}: nothing on)")
    baseline_arm = ""
    if doc.get("baseline_arm") not in (None, {}):
        baseline, _ = _arm(doc["baseline_arm"], f"{where}: baseline_arm")
        if baseline not in arms:
            raise ScenarioError(
                f"{where}: baseline_arm {baseline.label()!r} is not one of the arms: add it to arms "
                f"(arms: {'; '.join(a.label() for a in arms)})"
            )
        baseline_arm = baseline.label()
    scale = dict(_need(doc, "scale", dict, where))
    if "factor" not in scale or "what" not in scale:
        raise ScenarioError(f"{where}: scale needs factor and what (say how the scenario was fitted to bmv2)")
    if not is_scale_factor(scale["factor"]):
        # the run records would be refused (store.py) only once the first run had been made
        raise ScenarioError(
            f"{where}: scale.factor must be a number or {PER_POINT!r}, not {scale['factor']!r}"
        )
    quick = dict(doc.get("quick") or {})
    labels = {a.label() for a in arms}
    for label in quick.get("arms", []):
        if label not in labels:
            raise ScenarioError(
                f"{where}: quick arm {label!r} is not an arm; arms: {'; '.join(sorted(labels))}"
            )
    for label in quick.get("points", []):
        if label not in {p.label for p in points}:
            raise ScenarioError(f"{where}: quick point {label!r} is not a point")
    confirm_blocks = int(doc.get("confirm_blocks", CONFIRM_BLOCKS))
    if confirm_blocks < 2:
        raise ScenarioError(
            f"{where}: confirm_blocks {confirm_blocks}: give at least 2 (a paired interval needs two blocks)"
        )
    confirm_arms = doc.get("confirm_arms") or []
    if not isinstance(confirm_arms, list) or not all(isinstance(label, str) for label in confirm_arms):
        raise ScenarioError(f"{where}: confirm_arms is a list of arm labels (as quick.arms)")
    scenario = Scenario(
        name=name,
        title=_need(doc, "title", str, where),
        reproduces=claims,
        topology=_need(doc, "topology", str, where),
        params=dict(doc.get("params") or {}),
        axis={"name": str(axis.get("name", "")), "unit": str(axis.get("unit", ""))},
        points=tuple(points),
        traffic=traffic,
        capture=dict(_need(doc, "capture", dict, where)),
        metrics=metrics,
        figures=figures,
        arms=arms,
        arm_params=tuple(p for _, p in arms_and_params),
        repeats=int(doc.get("repeats", 3)),
        quick=quick,
        scale=scale,
        switch_ecn=tuple(dict(e) for e in doc.get("switch_ecn") or ()),
        duration_hint_s=float(doc.get("duration_hint_s", 30)),
        source_path=str(path),
        source_sha256=hashlib.sha256(text.encode()).hexdigest(),
        baseline_arm=baseline_arm,
        confirm_blocks=confirm_blocks,
        confirm_arms=tuple(confirm_arms),
    )
    _check_confirmation(scenario, where)
    return scenario


def _check_confirmation(scenario: Scenario, where: str) -> None:
    """confirm_arms names arms of the scenario, none the baseline, none twice; and the confirmation
    pass can be planned: a scenario that compares arms on a main metric with no better direction
    (a count described, not judged) must name the arms its claim needs confirmed, or `make
    experiments CONFIRM=1` stops there with nothing confirmed (it did: landstrom-4w and
    reverse-data in issue 41's run)."""
    labels = [a.label() for a in scenario.arms]
    for label in scenario.confirm_arms:
        if label not in labels:
            raise ScenarioError(f"{where}: confirm_arms {label!r} is not an arm; arms: {'; '.join(labels)}")
        if label == scenario.baseline().label():
            raise ScenarioError(f"{where}: confirm_arms {label!r} is the baseline, which every block runs")
    if len(set(scenario.confirm_arms)) != len(scenario.confirm_arms):
        raise ScenarioError(f"{where}: confirm_arms names an arm twice")
    main = scenario.metrics[0]
    if scenario.compares() and not scenario.confirm_arms and METRICS[main].better not in ("lower", "higher"):
        raise ScenarioError(
            f"{where}: the main metric {main} has no better direction, so the confirmation pass "
            "cannot pick each place's best arm on it: name the arms the claim needs confirmed in "
            "confirm_arms, or put a metric with a better direction first in metrics"
        )


def all_scenarios() -> list[Scenario]:
    return [load(p) for p in sorted(SCENARIO_DIR.glob("*.yaml"))]
