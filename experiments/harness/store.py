"""An experiment's results directory: ``manifest.json`` and ``runs.jsonl``.

``manifest.json`` says what the directory holds: the scenario definition exactly as the runner was
given it, the requested matrix, the code that made the runs and the command that was typed::

    {
      "schema": 1,
      "scenario": {...},                      # the scenario definition, as given by the caller
      "matrix": {"points": ["label", ...], "arms": [Arm.to_dict()...],
                 "repeats": 3, "seed": 1, "quick": false},
      "code_version": "abc123",               # the code that created the directory
      "code_versions": ["abc123", ...],       # every code version allowed to add runs (mixing)
      "created_at": "2024-05-01T12:00:00+00:00",
      "command": "ackwise experiment run ...",  # the command that created the directory
      "commands": ["ackwise experiment run ...", ...],  # every distinct command that opened it
      "mixed": [{"opened_at": ..., "command": ..., "code_version": ..., "differences": [...]}]
    }

``mixed`` is present only once runs were added with ``allow_mixing``; each entry names what
differed from the stored manifest then. The manifest is replaced atomically (temporary file, fsync,
rename), so an interrupted write leaves the old one or the new one, never half of either.

``runs.jsonl`` holds one :class:`~ackwise.experiments.harness.schema.RunRecord` per line, appended and
fsynced one at a time. A record is validated before it is written; a file that a Ctrl-C cut in the
middle of a line is read without that line (with a warning) and repaired by the next append.

Resuming: the runner skips the run ids in :meth:`ResultStore.completed`. A failed run is a result
and is skipped too, unless ``retry_failed=True``; a run that is redone appends a new record, and
the newest record of a run id supersedes the older ones in :meth:`ResultStore.records` (the older
lines stay in the file, see :meth:`ResultStore.all_records`).
"""

from __future__ import annotations

import copy
import fcntl
import json
import math
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ackwise.experiments.harness.schema import (
    METRICS,
    PER_POINT,
    SCHEMA_VERSION,
    Arm,
    Point,
    RunRecord,
    canonical,
    is_scale_factor,
)

MANIFEST_SCHEMA = 1
MANIFEST_FILE = "manifest.json"
RUNS_FILE = "runs.jsonl"
STATUSES = ("ok", "failed")
# Keys records made before they existed lack: such a record reads as "not recorded" there.
OPTIONAL_KEYS = ("provenance", "resources")

# How many differing places of a scenario definition a mismatch message names before "and N more".
_MAX_DIFFERENCES_NAMED = 5


class StoreError(Exception):
    """A results directory that cannot be used as asked; the message says what to do."""


class StoreMismatch(StoreError):
    """The directory holds runs of a different scenario definition or code version."""


class InvalidRecord(StoreError, ValueError):
    """A run record that does not follow experiments/harness/schema.py."""


class CorruptStore(StoreError):
    """runs.jsonl or manifest.json cannot be read (other than a torn last line)."""


class TornLineWarning(UserWarning):
    """The last line of runs.jsonl was cut mid-write; it is ignored and repaired on the next append."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def matrix_dict(points: Sequence[Point], arms: Sequence[Arm], repeats: int, seed: int, quick: bool) -> dict:
    """The manifest's description of a requested matrix."""
    return {
        "points": [asdict(p) for p in points],
        "arms": [a.to_dict() for a in arms],
        "repeats": repeats,
        "seed": seed,
        "quick": quick,
    }


def new_manifest(
    scenario: dict[str, Any], matrix: dict[str, Any], code_version: str, command: str
) -> dict[str, Any]:
    """A manifest for :meth:`ResultStore.open`; ``created_at`` is now."""
    return {
        "schema": MANIFEST_SCHEMA,
        "scenario": scenario,
        "matrix": matrix,
        "code_version": code_version,
        "created_at": now_iso(),
        "command": command,
    }


def _json_roundtrip(obj: Any) -> Any:
    # What the caller gives may hold tuples or paths; compare and store what JSON will give back.
    return json.loads(json.dumps(obj, default=str))


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def validate_manifest(m: Any) -> list[str]:
    """Problems with a manifest given to :meth:`ResultStore.open` (empty when it is usable)."""
    if not isinstance(m, dict):
        return [f"the manifest must be a dict, not {type(m).__name__}"]
    problems = []
    for key, kind in (("scenario", dict), ("matrix", dict), ("code_version", str), ("command", str)):
        if key not in m:
            problems.append(f"missing {key!r}")
        elif not isinstance(m[key], kind):
            problems.append(f"{key!r} must be a {kind.__name__}, not {type(m[key]).__name__}")
    if m.get("schema", MANIFEST_SCHEMA) != MANIFEST_SCHEMA:
        problems.append(f"'schema' is {m.get('schema')!r}; this code reads manifest schema {MANIFEST_SCHEMA}")
    matrix = m.get("matrix")
    if isinstance(matrix, dict):
        for key in ("points", "arms"):
            if not isinstance(matrix.get(key), list):
                problems.append(f"'matrix.{key}' must be a list")
        if not isinstance(matrix.get("repeats"), int):
            problems.append("'matrix.repeats' must be an int")
    return problems


def validate_record(d: Any) -> list[str]:
    """Problems with one run record as a dict (``asdict(RunRecord)``); empty when it is valid."""
    if not isinstance(d, dict):
        return [f"a record must be a JSON object, not {type(d).__name__}"]
    problems: list[str] = []
    missing = [k for k in RunRecord.__dataclass_fields__ if k not in d and k not in OPTIONAL_KEYS]
    if missing:
        problems.append("missing keys: " + ", ".join(missing))
    unknown = sorted(set(d) - set(RunRecord.__dataclass_fields__))
    if unknown:
        problems.append("unknown keys: " + ", ".join(unknown))

    def check(key: str, ok: bool, wanted: str) -> None:
        if key in d and not ok:
            problems.append(f"{key!r} must be {wanted}, not {d[key]!r}"[:200])

    check("schema", d.get("schema") == SCHEMA_VERSION, f"{SCHEMA_VERSION} (the schema this code reads)")
    check("run_id", isinstance(d.get("run_id"), str) and bool(d.get("run_id")), "a non-empty string")
    for key in ("scenario", "code_version", "link_backend", "started_at"):
        check(key, isinstance(d.get(key), str), "a string")
    for key in ("repeat", "seed"):
        check(key, isinstance(d.get(key), int) and not isinstance(d.get(key), bool), "an int")
    check("repeat", not isinstance(d.get("repeat"), int) or d["repeat"] >= 0, "non-negative")
    check("duration_s", _is_number(d.get("duration_s")) and d["duration_s"] >= 0, "a number >= 0")
    if isinstance(d.get("started_at"), str):
        try:
            datetime.fromisoformat(d["started_at"])
        except ValueError:
            problems.append(f"'started_at' is not an ISO 8601 time: {d['started_at']!r}")
    check("status", d.get("status") in STATUSES, " or ".join(repr(s) for s in STATUSES))
    if d.get("status") == "failed":
        check(
            "reason",
            isinstance(d.get("reason"), str) and bool(d.get("reason")),
            "a non-empty string saying why the run failed",
        )
    else:
        check("reason", d.get("reason") is None or isinstance(d.get("reason"), str), "a string or null")

    point = d.get("point")
    check(
        "point",
        isinstance(point, dict) and isinstance(point.get("label"), str) and "x" in point,
        "a dict with 'x' and a string 'label' (asdict(Point))",
    )
    arm = d.get("arm")
    if "arm" in d:
        if (
            not isinstance(arm, dict)
            or not isinstance(arm.get("where"), str)
            or not isinstance(arm.get("label"), str)
        ):
            problems.append("'arm' must be Arm.to_dict(): a dict with 'where' and 'label'")
        else:
            try:
                where = Arm.from_dict(arm).where
            except (KeyError, TypeError, AttributeError) as e:
                problems.append(f"'arm' is not Arm.to_dict(): {e}")
            else:
                if where != arm["where"]:
                    problems.append(f"'arm.where' is {arm['where']!r} but its policies put it at {where!r}")
    scale = d.get("scale")
    check(
        "scale",
        isinstance(scale, dict)
        and is_scale_factor(scale.get("factor"))
        and isinstance(scale.get("what"), str),
        f"a dict with a 'factor' (a number or {PER_POINT!r}) and a string 'what'",
    )
    check("config", isinstance(d.get("config"), dict), "a dict")
    versions = d.get("versions")
    check(
        "versions",
        isinstance(versions, dict) and all(isinstance(v, str) for v in versions.values()),
        "a dict of tool name to version string",
    )
    metrics = d.get("metrics")
    if "metrics" in d:
        if not isinstance(metrics, dict):
            problems.append("'metrics' must be a dict")
        else:
            for name, value in metrics.items():
                if name not in METRICS:
                    problems.append(f"metric {name!r} is not in schema.METRICS (add it there first)")
                elif value is not None and not (_is_number(value) and math.isfinite(value)):
                    problems.append(f"metric {name!r} must be a finite number or null, not {value!r}")
    check(
        "flows",
        isinstance(d.get("flows"), list) and all(isinstance(f, dict) for f in d.get("flows", [])),
        "a list of dicts",
    )
    check("provenance", isinstance(d.get("provenance"), dict), "a dict (Testbed.provenance() and more)")
    check("resources", isinstance(d.get("resources"), dict), "a dict (measure/resources.py)")
    series = d.get("series")
    check(
        "series",
        isinstance(series, dict) and all(isinstance(v, list) for v in series.values()),
        "a dict of name to list of per-flow dicts",
    )
    return problems


def diff_paths(old: Any, new: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as 'a.b: old -> new'."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old:
                out.append(f"{sub} added")
            elif key not in new:
                out.append(f"{sub} removed")
            else:
                out.extend(diff_paths(old[key], new[key], sub))
        return out
    if canonical(old) == canonical(new):
        return []

    def short(x: Any) -> str:
        text = json.dumps(x, default=str)
        return text if len(text) <= 40 else text[:37] + "..."

    return [f"{path or 'the whole definition'}: {short(old)} -> {short(new)}"]


def _union(old: list[Any], new: list[Any]) -> list[Any]:
    seen = {canonical(x) for x in old}
    out = list(old)
    for x in new:
        if canonical(x) not in seen:
            seen.add(canonical(x))
            out.append(x)
    return out


def _write_json_atomically(path: Path, obj: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file private (0600); a manifest is as readable as the runs beside it.
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=2, sort_keys=True, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # The rename itself must reach the disk, or a crash could bring back the old manifest.
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class ResultStore:
    """An experiment's results directory. Make or reopen one with :meth:`open`; read an existing one
    with :meth:`load`."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.manifest_path = self.directory / MANIFEST_FILE
        self.runs_path = self.directory / RUNS_FILE

    # -- opening ------------------------------------------------------------------------------

    @classmethod
    def load(cls, directory: Path) -> ResultStore:
        """An existing results directory, for reading (the report)."""
        store = cls(directory)
        if not store.manifest_path.is_file():
            raise StoreError(
                f"no {MANIFEST_FILE} in {store.directory}: not an ackwise results directory; "
                "give the --out directory of an 'ackwise experiment run'"
            )
        return store

    @classmethod
    def open(cls, directory: Path, manifest: dict[str, Any], *, allow_mixing: bool = False) -> ResultStore:
        """Create the directory and its manifest, or reopen it to resume or extend its matrix.

        Reopening compares the manifest schema, the scenario definition, the code version and the
        matrix's seed and quick flag with the stored manifest and raises :class:`StoreMismatch`
        naming each difference, unless ``allow_mixing``: then the runs are added and the manifest
        records the difference (``code_versions``, ``mixed``). More points, arms or repeats with
        the same scenario and code extend the run: the stored matrix becomes the union.
        """
        problems = validate_manifest(manifest)
        if problems:
            raise ValueError("manifest given to ResultStore.open is unusable: " + "; ".join(problems))
        given = _json_roundtrip({"schema": MANIFEST_SCHEMA, "created_at": now_iso(), **manifest})
        store = cls(directory)
        if store.manifest_path.exists():
            store._reopen(given, allow_mixing)
            return store
        if store.runs_path.exists():
            raise StoreError(
                f"{store.directory} has {RUNS_FILE} but no {MANIFEST_FILE}: it was not made by this code or "
                "was damaged; use a new --out directory"
            )
        store.directory.mkdir(parents=True, exist_ok=True)
        given.setdefault("code_versions", [given["code_version"]])
        given.setdefault("commands", [given["command"]])
        _write_json_atomically(store.manifest_path, given)
        return store

    def _reopen(self, given: dict[str, Any], allow_mixing: bool) -> None:
        stored = self.manifest
        differences = []
        if stored.get("schema") != given["schema"]:
            differences.append(f"manifest schema {stored.get('schema')} there, {given['schema']} here")
        if stored.get("code_version") != given["code_version"] and given["code_version"] not in stored.get(
            "code_versions", []
        ):
            differences.append(f"made by code {stored.get('code_version')}, this is {given['code_version']}")
        scenario_diffs = diff_paths(stored.get("scenario"), given["scenario"])
        if scenario_diffs:
            named = scenario_diffs[:_MAX_DIFFERENCES_NAMED]
            more = len(scenario_diffs) - len(named)
            differences.append(
                "the scenario definition differs at "
                + ", ".join(named)
                + (f" and {more} more" if more else "")
            )
        old_matrix, new_matrix = stored.get("matrix", {}), given["matrix"]
        for key, why in (("seed", "base seed"), ("quick", "quick flag")):
            if key in old_matrix and key in new_matrix and old_matrix[key] != new_matrix[key]:
                differences.append(f"the {why} was {old_matrix[key]!r}, now {new_matrix[key]!r}")

        if differences and not allow_mixing:
            raise StoreMismatch(
                f"Results in {self.directory} were made differently: "
                + "; ".join(differences)
                + ". Use a new --out directory, or --allow-mixing to add these runs to it anyway "
                "(the manifest will record the mix)."
            )

        updated = copy.deepcopy(stored)
        matrix = updated.setdefault("matrix", {})
        matrix["points"] = _union(matrix.get("points", []), new_matrix.get("points", []))
        matrix["arms"] = _union(matrix.get("arms", []), new_matrix.get("arms", []))
        matrix["repeats"] = max(int(matrix.get("repeats", 0)), int(new_matrix.get("repeats", 0)))
        code_versions = updated.setdefault("code_versions", [stored.get("code_version")])
        if given["code_version"] not in code_versions:
            code_versions.append(given["code_version"])
        commands = updated.setdefault("commands", [stored.get("command")])
        if given["command"] not in commands:
            commands.append(given["command"])
        if differences:
            updated.setdefault("mixed", []).append(
                {
                    "opened_at": given["created_at"],
                    "command": given["command"],
                    "code_version": given["code_version"],
                    "differences": differences,
                }
            )
        if updated != stored:
            _write_json_atomically(self.manifest_path, updated)

    @property
    def manifest(self) -> dict[str, Any]:
        try:
            manifest = json.loads(self.manifest_path.read_text())
        except FileNotFoundError:
            raise StoreError(
                f"no {MANIFEST_FILE} in {self.directory}: open it with ResultStore.open"
            ) from None
        except json.JSONDecodeError as e:
            raise CorruptStore(
                f"{self.manifest_path} is not valid JSON ({e}); it is only ever replaced whole, so it was "
                "edited by hand: restore it or use a new --out directory"
            ) from None
        if not isinstance(manifest, dict):
            raise CorruptStore(f"{self.manifest_path} holds a {type(manifest).__name__}, not a JSON object")
        return manifest

    # -- runs ---------------------------------------------------------------------------------

    def append(self, record: RunRecord) -> None:
        """Validate the record and append it as one line, on disk (fsync) before returning."""
        line = record.to_json()
        problems = validate_record(json.loads(line))
        if problems:
            raise InvalidRecord(f"run record {record.run_id!r} refused: " + "; ".join(problems))
        with open(self.runs_path, "ab") as f:
            # One writer at a time: a second runner on the same directory waits instead of interleaving.
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                self._repair_tail(f)
                f.write(line.encode() + b"\n")
                f.flush()
                os.fsync(f.fileno())
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def _repair_tail(self, f: Any) -> None:
        """Drop a torn last line (a write cut short) or end a complete one with its newline."""
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        start, fragment = _last_line(self.runs_path, size)
        if fragment.endswith(b"\n"):
            return
        try:
            json.loads(fragment)
        except ValueError:
            f.truncate(start)
            f.seek(start)
        else:
            f.write(b"\n")

    def _lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, record dict) of every readable line; a torn last line is skipped with a warning."""
        if not self.runs_path.exists():
            return
        lines = self.runs_path.read_bytes().split(b"\n")
        # The text after the last newline is empty for a complete file; anything else is a last
        # line that may have been cut mid-write.
        last = len(lines) - 1 if lines[-1] else len(lines) - 2
        for index, raw in enumerate(lines):
            number = index + 1
            if not raw.strip():
                continue
            try:
                d = json.loads(raw)
            except ValueError as e:
                if index == last:
                    warnings.warn(
                        f"{self.runs_path}: line {number} is incomplete (a run interrupted while writing its "
                        "record); it is ignored and will be removed by the next append",
                        TornLineWarning,
                        stacklevel=3,
                    )
                    continue
                raise CorruptStore(
                    f"{self.runs_path}: line {number} is not valid JSON ({e}); only the last line can be "
                    "cut by an interruption, so the file was edited: fix or delete that line"
                ) from None
            problems = validate_record(d)
            if problems:
                raise CorruptStore(
                    f"{self.runs_path}: line {number} is not a valid run record: " + "; ".join(problems)
                )
            yield number, d

    def all_records(self) -> list[RunRecord]:
        """Every record in file order, superseded ones included."""
        return [RunRecord.from_dict(d) for _, d in self._lines()]

    def records(self) -> list[RunRecord]:
        """One record per run id: the newest (a redone run supersedes its earlier record), in file order."""
        latest: dict[str, dict[str, Any]] = {}
        for _, d in self._lines():
            latest.pop(d["run_id"], None)  # re-inserted, so the order is that of the newest records
            latest[d["run_id"]] = d
        return [RunRecord.from_dict(d) for d in latest.values()]

    def completed(self, *, retry_failed: bool = False) -> set[str]:
        """Run ids a resumed matrix skips: those whose newest record is ok, and, unless
        ``retry_failed``, those whose newest record failed (a failure is a result)."""
        return {
            r.run_id
            for r in self.records()
            if r.status == "ok" or (r.status == "failed" and not retry_failed)
        }

    def failed(self) -> set[str]:
        """Run ids whose newest record failed."""
        return {r.run_id for r in self.records() if r.status == "failed"}


def _last_line(path: Path, size: int, chunk_bytes: int = 65536) -> tuple[int, bytes]:
    """Offset and bytes of the file's last line (after the last newline that is not its final byte)."""
    with open(path, "rb") as f:
        end = size - 1  # a final newline belongs to the last line
        pos = end
        while pos > 0:
            read_from = max(0, pos - chunk_bytes)
            f.seek(read_from)
            chunk = f.read(pos - read_from)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                start = read_from + newline + 1
                break
            pos = read_from
        else:
            start = 0
        f.seek(start)
        return start, f.read(size - start)


def merge_shards(directories: Sequence[Path], out: Path) -> ResultStore:
    """One results directory from the shards of one matrix (``ackwise experiment run --shard K/N``,
    on one machine or several): the same scenario definition, seed and quick flag, every shard of
    one N given once, no run in two shards. Their runs go into ``out`` (new, or a merge of exactly
    these shards made before, which is then rebuilt). The report then checks that their provenance
    agrees (report.check_provenance)."""
    stores = [ResultStore.load(Path(d)) for d in directories]
    manifests = [s.manifest for s in stores]
    first = manifests[0]
    problems = []
    for store, m in zip(stores[1:], manifests[1:], strict=True):
        diffs = diff_paths(first.get("scenario"), m.get("scenario"))
        if diffs:
            problems.append(f"{store.directory}: another scenario definition ({', '.join(diffs[:3])})")
        for key in ("seed", "quick"):
            if first.get("matrix", {}).get(key) != m.get("matrix", {}).get(key):
                problems.append(
                    f"{store.directory}: matrix {key} {m.get('matrix', {}).get(key)!r}, "
                    f"not {first.get('matrix', {}).get(key)!r}"
                )
    shards = [tuple(m.get("matrix", {}).get("shard") or ()) for m in manifests]
    if any(len(s) != 2 for s in shards):
        unsharded = [str(s.directory) for s, k in zip(stores, shards, strict=True) if len(k) != 2]
        problems.append(f"not a shard (no --shard K/N in its manifest): {', '.join(unsharded)}")
    elif len({n for _, n in shards}) != 1:
        problems.append(f"shards of different splits: {', '.join(f'{k}/{n}' for k, n in shards)}")
    elif len(set(shards)) != len(shards):
        problems.append("a shard is given twice: " + ", ".join(f"{k}/{n}" for k, n in shards))
    seen: dict[str, Path] = {}
    for store in stores:
        for record in store.all_records():
            other = seen.setdefault(record.run_id, store.directory)
            if other != store.directory:
                problems.append(f"run {record.run_id} is in both {other} and {store.directory}")
                break
    if problems:
        raise StoreMismatch("cannot merge these shards: " + "; ".join(problems))
    missing = sorted(set(range(1, shards[0][1] + 1)) - {k for k, _ in shards}) if shards and shards[0] else []
    merged_manifest = copy.deepcopy(first)
    matrix = merged_manifest["matrix"]
    for m in manifests[1:]:
        matrix["points"] = _union(matrix.get("points", []), m["matrix"].get("points", []))
        matrix["arms"] = _union(matrix.get("arms", []), m["matrix"].get("arms", []))
        matrix["repeats"] = max(int(matrix.get("repeats", 0)), int(m["matrix"].get("repeats", 0)))
    matrix.pop("shard", None)
    matrix["merged_shards"] = sorted(f"{k}/{n}" for k, n in shards)
    if missing:
        matrix["missing_shards"] = [f"{k}/{shards[0][1]}" for k in missing]
    merged_manifest["code_versions"] = _union([], [v for m in manifests for v in m.get("code_versions", [])])
    merged_manifest["commands"] = _union([], [c for m in manifests for c in m.get("commands", [])])
    merged_manifest["merged_from"] = [str(s.directory) for s in stores]
    target = ResultStore(out)
    if target.manifest_path.exists():
        if sorted(target.manifest.get("merged_from", [])) != sorted(merged_manifest["merged_from"]):
            raise StoreError(f"{out} exists and is not a merge of these shards: give another directory")
        target.runs_path.unlink(missing_ok=True)
    target.directory.mkdir(parents=True, exist_ok=True)
    _write_json_atomically(target.manifest_path, _json_roundtrip(merged_manifest))
    for store in stores:
        for record in store.all_records():
            target.append(record)
    return target
