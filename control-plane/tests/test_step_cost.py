"""step_cost's programs differ from its base program by 50 units of the kind they name: compiled
with the real p4c, each has what it says (p4c may drop unused code, fold constants or add steps,
and a unit it removed would be measured as free)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ackwise.bmv2.toolchain import P4C_BMV2, ToolchainError, find_tool
from ackwise.experiments.stress.bench import _operators_in, metadata_fields
from ackwise.experiments.stress.step_cost import _HEAD, UNITS, _variants


def _compiled(tmp_path: Path, name: str) -> dict:
    try:
        p4c = find_tool(P4C_BMV2)
    except ToolchainError as exc:
        pytest.fail(str(exc))
    variant = next(v for v in _variants() if v.name == name)
    source = tmp_path / f"{name}.p4"
    source.write_text(_HEAD % {"fields": variant.fields, "body": variant.body})
    out = tmp_path / f"{name}.json"
    subprocess.run([p4c, str(source), "-o", str(out)], check=True, capture_output=True)
    return json.loads(out.read_text())


def _scalar_fields(program: dict) -> list[list]:
    types = {t["name"]: t for t in program["header_types"]}
    scalars = next(h for h in program["headers"] if h["name"] == "scalars")
    return [f for f in types[scalars["header_type"]]["fields"] if not f[0].startswith("_padding")]


def _work_primitives(program: dict) -> list[dict]:
    action = next(a for a in program["actions"] if a["name"].endswith("work"))
    return action["primitives"]


def test_metadata_fields_are_kept_though_unused(tmp_path: Path) -> None:
    base = _compiled(tmp_path, "base")
    padded = _compiled(tmp_path, "metadata_fields")
    assert len(_scalar_fields(padded)) - len(_scalar_fields(base)) == UNITS
    assert metadata_fields(padded) - metadata_fields(base) == UNITS


def test_a_wide_expression_is_one_primitive_of_wide_operators(tmp_path: Path) -> None:
    program = _compiled(tmp_path, "expression_wide")
    (assign,) = _work_primitives(program)
    widths = {f[0]: f[1] for f in _scalar_fields(program)}
    target = assign["parameters"][0]["value"][1]
    assert widths[target] == 392
    # 50 terms (m.y ^ i) joined by +: 50 xors, 49 additions (p4c folds no term: m.y is not constant)
    assert _operators_in(assign["parameters"][1]) >= 2 * UNITS - 1


@pytest.mark.parametrize(("name", "source_bits"), [("slices_64", 64), ("slices_wide", 392)])
def test_slices_are_one_primitive_each_from_the_named_width(
    tmp_path: Path, name: str, source_bits: int
) -> None:
    program = _compiled(tmp_path, name)
    widths = {f[0]: f[1] for f in _scalar_fields(program)}
    primitives = _work_primitives(program)
    assert len(primitives) == UNITS
    sources = {widths[f] for p in primitives for f in _fields_in(p["parameters"][1])}
    assert sources == {source_bits}


def test_wide_register_reads_read_392_bit_cells(tmp_path: Path) -> None:
    program = _compiled(tmp_path, "register_reads_wide")
    reads = [p for p in _work_primitives(program) if p["op"] == "register_read"]
    assert len(reads) == UNITS
    (array,) = program["register_arrays"]
    assert array["bitwidth"] == 392


def _fields_in(node: object) -> list[str]:
    """The scalar fields an expression reads."""
    if isinstance(node, dict):
        if node.get("type") == "field" and node["value"][0] == "scalars":
            return [node["value"][1]]
        return [f for v in node.values() for f in _fields_in(v)]
    if isinstance(node, list):
        return [f for v in node for f in _fields_in(v)]
    return []
