"""Run by test_cleanup.py, not collected on its own (the file name does not start with test_):
tests that leave what they started behind, then one that needs a clean machine."""

from __future__ import annotations

import pytest

from ackwise.topologies.testbed import Testbed, TestbedError

PARAMS = {"n_pairs": 1, "fwd_delay_ms": 1, "rev_delay_ms": 1}


def test_fails_with_its_test_bed_running() -> None:
    Testbed.create("dumbbell", **PARAMS).start()
    raise AssertionError("failing on purpose, test bed still running")


def test_expected_exception_does_not_come() -> None:
    with pytest.raises(TestbedError):
        Testbed.create("dumbbell", **PARAMS).start()  # starts fine: DID NOT RAISE, left running


def test_next_test_finds_a_clean_machine() -> None:
    with Testbed.create("dumbbell", **PARAMS) as testbed:
        assert testbed.pingall() == 0.0
