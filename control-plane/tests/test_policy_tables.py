"""Policy rules and defaults on a program that thins no ACKs (ap_proxy): refused with the error
naming the missing table, as before the IPv6 tables (issue 40's merge had made them a silent no-op;
make test's test_cli_bad_names found `policy set default tack` on the AP exiting 0)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ackwise.bmv2.program import Program, UnknownName
from ackwise.features.apply import ConfigError, plan_config
from ackwise.features.thinning import set_default_policy, set_policy
from ackwise.twins.policies import PolicyMatch, PolicyParams


@dataclass
class NoThinningClient:
    """A switch whose program has neither policy table; any write to a table is a test failure."""

    program: Program = field(default_factory=Program)

    def table_add(self, *args: object) -> int:
        raise AssertionError(f"table_add{args}")

    def table_set_default(self, *args: object) -> None:
        raise AssertionError(f"table_set_default{args}")


def test_a_default_policy_on_a_program_without_policy_tables_names_the_table() -> None:
    with pytest.raises(UnknownName, match=r"no table 'ack_thinning\.policy' in the loaded program"):
        set_default_policy(NoThinningClient(), PolicyParams.parse("tack", []))  # type: ignore[arg-type]


def test_a_rule_without_addresses_on_such_a_program_names_the_table() -> None:
    with pytest.raises(UnknownName, match=r"no table 'ack_thinning\.policy' in the loaded program"):
        set_policy(NoThinningClient(), PolicyMatch(), PolicyParams.parse("every_d", ["d=2"]))  # type: ignore[arg-type]


def test_an_apply_file_s_default_policy_on_such_a_program_names_the_table(tmp_path: Path) -> None:
    doc = {"policies": [{"match": "default", "policy": "tack"}]}
    with pytest.raises(ConfigError, match=r"no table 'ack_thinning\.policy' in the loaded program"):
        plan_config(NoThinningClient(), doc, tmp_path)  # type: ignore[arg-type]
