"""Run by test_cleanup.py through make ptf, then stopped from outside: a PTF test with its switch
running, held until the signal comes. Not part of the PTF suite (ptf-tests/)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from base_test import AckwiseTest


class HoldSwitchTest(AckwiseTest):
    def runTest(self) -> None:
        Path(os.environ["ACKWISE_SELFTEST_MARKER"]).write_text("up")
        time.sleep(300)
