"""thinning_floor.p4 is the yardstick `make bench` measures ack_switch against (issue 35: every
policy's instructions per packet at most a bound times the floor's). A yardstick that moves with
the work it measures measures nothing, so its source stays as it was at 47c7fd0, where the bounds
were set; changing it on purpose means changing this hash in the same commit, and saying why."""

from __future__ import annotations

import hashlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLOOR = REPO / "p4src" / "thinning_floor.p4"
# sha256 of `git show 47c7fd0:p4src/thinning_floor.p4`
FLOOR_SHA256_AT_47C7FD0 = "b5bff23e13be4a2c66b9435338d3966b0fbd8b3554cb87eea0b4d734ebe1d1d2"


def test_thinning_floor_is_as_at_47c7fd0() -> None:
    digest = hashlib.sha256(FLOOR.read_bytes()).hexdigest()
    assert digest == FLOOR_SHA256_AT_47C7FD0, (
        "p4src/thinning_floor.p4 changed: it is the yardstick of issue 35's bounds and stays as at 47c7fd0"
    )
