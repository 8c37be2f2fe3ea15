"""make bench's operator count: the expression operators a traced packet went through."""

from __future__ import annotations

import pytest

from ackwise.experiments.bench import expression_operators


def _field(name: str) -> dict[str, object]:
    return {"type": "field", "value": ["scalars", name]}


def _op(op: str, left: object, right: object) -> dict[str, object]:
    return {"type": "expression", "value": {"op": op, "left": left, "right": right}}


# a + (b & c) assigned: 2 operators; a plain copy: none; a condition a == b: 1.
PROGRAM = {
    "actions": [
        {
            "name": "work",
            "primitives": [
                {
                    "op": "assign",
                    "parameters": [_field("x"), _op("+", _field("a"), _op("&", _field("b"), _field("c")))],
                },
                {"op": "assign", "parameters": [_field("y"), _field("a")]},
            ],
        },
        {"name": "twin", "primitives": []},
        {
            "name": "twin",
            "primitives": [{"op": "assign", "parameters": [_field("y"), _op("^", _field("a"), _field("b"))]}],
        },
    ],
    "pipelines": [{"conditionals": [{"name": "node_7", "expression": _op("==", _field("a"), _field("b"))}]}],
}
PREFIX = "[03:02:36.141] [bmv2] [T] [thread 1] [25.0] [cxt 0] "


def test_actions_run_and_conditions_tested_are_counted() -> None:
    trace = [
        PREFIX + "Applying table 'tbl_work'",
        PREFIX + "Action entry is work - ",  # the table's hit, not a run: not counted
        PREFIX + "Action work",
        PREFIX + 'p4src/x.p4(3) Condition "a == b" (node_7) is false',
        PREFIX + "Action work",
    ]
    assert expression_operators(PROGRAM, trace) == 2 + 1 + 2


def test_two_actions_of_one_name_count_as_the_larger() -> None:
    assert expression_operators(PROGRAM, [PREFIX + "Action twin"]) == 1


def test_an_unknown_step_is_an_error_not_a_zero() -> None:
    with pytest.raises(KeyError):
        expression_operators(PROGRAM, [PREFIX + "Action gone"])
