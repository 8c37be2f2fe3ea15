"""The Python is ruff-clean (lint and format), as `make lint` checks, inside `make test` too: a
docstring line over the length limit reached main once because only `make lint` looked (017039d)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def python_sources() -> list[str]:
    """The directories the Makefile's PY_SOURCES names (one list, there)."""
    line = next(ln for ln in (REPO / "Makefile").read_text().splitlines() if ln.startswith("PY_SOURCES"))
    names = re.search(r"\$\(wildcard ([^)]*)\)", line)
    assert names is not None, f"PY_SOURCES is no longer a $(wildcard ...): {line}"
    return [n for n in names.group(1).split() if (REPO / n).exists()]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff(command: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *python_sources()],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    what = " ".join(command)
    assert proc.returncode == 0, f"ruff {what} (fix with 'make format'):\n{proc.stdout}{proc.stderr}"
