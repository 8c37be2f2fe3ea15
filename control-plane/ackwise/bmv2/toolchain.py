"""Where the P4 toolchain lives on this machine: p4c, simple_switch and bmv2's Python bindings.

bmv2 installs its Thrift bindings (``bm_runtime``, ``sswitch_runtime``) into a site-packages
directory under its own prefix, which the Python running ackwise usually does not search. They are
not on PyPI and the project does not vendor them, so they are found here, once, for every caller.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
BUILD_DIR = Path(os.environ.get("ACKWISE_BUILD_DIR", REPO_ROOT / "build"))

SIMPLE_SWITCH = "simple_switch"
P4C_BMV2 = "p4c-bm2-ss"
BINDINGS_ENV = "ACKWISE_BMV2_PYTHONPATH"
# Another simple_switch than the one on PATH, e.g. a bmv2 built with --disable-logging-macros
# (docs/performance.md): every switch ackwise starts is then that one.
SIMPLE_SWITCH_ENV = "ACKWISE_SIMPLE_SWITCH"


class ToolchainError(RuntimeError):
    """A toolchain piece is missing; the message says how to get it."""


def find_tool(name: str) -> str:
    if name == SIMPLE_SWITCH and os.environ.get(SIMPLE_SWITCH_ENV):
        chosen = os.environ[SIMPLE_SWITCH_ENV]
        if not os.access(chosen, os.X_OK):
            raise ToolchainError(f"{SIMPLE_SWITCH_ENV}={chosen} is not an executable: fix or unset it")
        return chosen
    path = shutil.which(name)
    if path is None:
        raise ToolchainError(f"{name} not found on PATH: install bmv2 and p4c (README, 'Prerequisites')")
    return path


def missing_tools() -> list[str]:
    return [name for name in (P4C_BMV2, SIMPLE_SWITCH) if shutil.which(name) is None]


def _candidate_binding_dirs() -> list[Path]:
    dirs: list[Path] = []
    for entry in os.environ.get(BINDINGS_ENV, "").split(os.pathsep):
        if entry:
            dirs.append(Path(entry))
    prefixes: list[Path] = []
    switch = shutil.which(SIMPLE_SWITCH)
    if switch is not None:
        prefixes.append(Path(os.path.realpath(switch)).parent.parent)
    prefixes += [Path("/usr/local"), Path("/usr")]
    for prefix in prefixes:
        for pattern in (
            "lib/python3*/site-packages",
            "lib/python3*/dist-packages",
            "lib/python3/dist-packages",
        ):
            dirs += [Path(p) for p in sorted(glob.glob(str(prefix / pattern)), reverse=True)]
    return dirs


def bindings_dir() -> Path | None:
    """The directory holding bmv2's ``bm_runtime`` package, or None."""
    for directory in _candidate_binding_dirs():
        if (directory / "bm_runtime" / "standard" / "Standard.py").is_file():
            return directory
    return None


def ensure_bmv2_bindings() -> None:
    """Make ``bm_runtime`` and ``sswitch_runtime`` importable, or say how to."""
    try:
        import bm_runtime  # noqa: F401

        return
    except ImportError:
        pass
    directory = bindings_dir()
    if directory is None:
        raise ToolchainError(
            "bmv2's Python bindings (bm_runtime) were not found: install bmv2 with Thrift "
            f"support, or set {BINDINGS_ENV} to the site-packages directory that holds them"
        )
    # Appended, not prepended: the bmv2 prefix must not shadow this environment's packages.
    sys.path.append(str(directory))


def compiled_program(name: str) -> Path:
    """A path to a compiled program JSON, or the name of a program built into build/<name>.json."""
    path = Path(name)
    if path.suffix == ".json" or path.exists():
        if not path.is_file():
            raise ToolchainError(f"{name} does not exist")
        return path.resolve()
    built = BUILD_DIR / f"{name}.json"
    if not built.is_file():
        raise ToolchainError(f"no compiled program {name!r} in {BUILD_DIR}: run 'make build'")
    return built
