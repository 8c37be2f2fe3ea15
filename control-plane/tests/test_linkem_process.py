"""LinkemProcess cleans up what it created when linkem cannot start (a missing build, a binary
that never says "ready"): no /tmp/ackwise-linkem-* directory is left behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from ackwise.topologies.links import LINKEM_ENV, LinkemProcess, LinkEmulationError


def leftovers() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("ackwise-linkem-probe-*")}


def test_a_missing_linkem_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Regression: 21 runs started without `make build` left 42 /tmp/ackwise-linkem-air-* dirs."""
    monkeypatch.setenv(LINKEM_ENV, str(tmp_path / "no-linkem"))
    before = leftovers()
    with pytest.raises(LinkEmulationError, match="missing: run 'make build'"):
        LinkemProcess("probe", [])
    assert leftovers() == before


def test_a_linkem_that_never_starts_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "linkem"
    fake.write_text("#!/bin/sh\necho 'bad config' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(LINKEM_ENV, str(fake))
    before = leftovers()
    with pytest.raises(LinkEmulationError, match="did not start: bad config"):
        LinkemProcess("probe", ["wire x"])
    assert leftovers() == before
