"""Where the P4 toolchain lives on this machine: p4c, simple_switch and bmv2's Python bindings, and
how the simple_switch in use was built.

Which toolchain: a bmv2/p4c already on PATH (Ubuntu packages, a user's own build), or the pinned
one that ``make deps`` builds from source (tools/toolchain.sh: versions and flags in
tools/toolchain.env, installed into versioned prefixes outside the checkout). ``ACKWISE_TOOLCHAIN``
chooses: ``auto`` (default) takes PATH's when it has both tools, the pinned one otherwise;
``pinned`` takes the pinned one always. The pinned toolchain has two bmv2 builds: a fast one
(bmv2's docs/performance.md configuration: -O3, no logging macros, no event logger), which
experiments and benchmarks run, and a logging one, for what reads bmv2's log (``ackwise switch
start --log``, the bench's step table, PTF's log directory).

bmv2 installs its Thrift bindings (``bm_runtime``, ``sswitch_runtime``) into a site-packages
directory under its own prefix, which the Python running ackwise usually does not search. They are
not on PyPI and the project does not vendor them, so they are found here, once, for every caller.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
BUILD_DIR = Path(os.environ.get("ACKWISE_BUILD_DIR", REPO_ROOT / "build"))
TOOLCHAIN_SCRIPT = REPO_ROOT / "tools" / "toolchain.sh"

SIMPLE_SWITCH = "simple_switch"
P4C_BMV2 = "p4c-bm2-ss"
BINDINGS_ENV = "ACKWISE_BMV2_PYTHONPATH"
# auto | pinned (module docstring; README "The P4 toolchain").
TOOLCHAIN_ENV = "ACKWISE_TOOLCHAIN"
# One simple_switch executable for every switch ackwise starts, whatever the rules above say.
SIMPLE_SWITCH_ENV = "ACKWISE_SIMPLE_SWITCH"
# The pinned toolchain's components (tools/toolchain.sh).
BMV2_FAST = "bmv2-fast"
BMV2_LOGGING = "bmv2-logging"
P4C = "p4c"
# A prefix tools/toolchain.sh finished installing holds this file (a half-built one does not exist).
BUILT_MARKER = ".ackwise-toolchain"


class ToolchainError(RuntimeError):
    """A toolchain piece is missing; the message says how to get it."""


def toolchain_mode() -> str:
    mode = os.environ.get(TOOLCHAIN_ENV, "auto") or "auto"
    if mode not in ("auto", "pinned"):
        raise ToolchainError(f"{TOOLCHAIN_ENV}={mode}: give auto or pinned")
    return mode


@cache
def _pinned_prefix_path(component: str, root: str | None) -> Path | None:
    del root  # part of the cache key only: the script reads it from the environment
    if not TOOLCHAIN_SCRIPT.is_file():  # an installed ackwise without its checkout
        return None
    out = subprocess.run(
        ["bash", str(TOOLCHAIN_SCRIPT), "prefix", component], capture_output=True, text=True, check=False
    )
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def pinned_prefix(component: str) -> Path | None:
    """Where tools/toolchain.sh installed COMPONENT, if it is built."""
    prefix = _pinned_prefix_path(component, os.environ.get("ACKWISE_TOOLCHAIN_ROOT"))
    return prefix if prefix is not None and (prefix / BUILT_MARKER).is_file() else None


def _pinned_tool(name: str, component: str) -> str | None:
    prefix = pinned_prefix(component)
    tool = prefix / "bin" / name if prefix else None
    return str(tool) if tool is not None and os.access(tool, os.X_OK) else None


def _component_of(name: str) -> str:
    return P4C if name == P4C_BMV2 else BMV2_FAST


def _user_tool(name: str) -> str | None:
    """NAME on PATH when it is the user's own install: not a link into the pinned toolchain's root
    (tools/toolchain.sh link makes those, and they may point at an older pinned build)."""
    path = shutil.which(name)
    if path is None:
        return None
    root = _pinned_prefix_path(BMV2_FAST, os.environ.get("ACKWISE_TOOLCHAIN_ROOT"))
    if root is not None and Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root.parent)):
        return None
    return path


def _path_has_toolchain() -> bool:
    return _user_tool(SIMPLE_SWITCH) is not None and _user_tool(P4C_BMV2) is not None


def find_tool(name: str, logging: bool = False) -> str:
    """The executable of a toolchain tool, by the rules in this module's docstring.

    ``logging`` (simple_switch only): a build whose log has what bmv2's trace says, for the callers
    that read it; the pinned logging build where the chosen simple_switch has no logging macros.
    """
    if name == SIMPLE_SWITCH and os.environ.get(SIMPLE_SWITCH_ENV):
        chosen = os.environ[SIMPLE_SWITCH_ENV]
        if not os.access(chosen, os.X_OK):
            raise ToolchainError(f"{SIMPLE_SWITCH_ENV}={chosen} is not an executable: fix or unset it")
    else:
        chosen = _find_default(name)
    if name != SIMPLE_SWITCH or not logging or build_config(chosen).logging_macros is not False:
        return chosen
    logging_build = _pinned_tool(SIMPLE_SWITCH, BMV2_LOGGING)
    if logging_build is None:
        raise ToolchainError(
            f"{chosen} was built without logging macros, so its log would be empty, and the pinned "
            f"logging build is not installed: run 'make deps' (it builds both bmv2 builds)"
        )
    return logging_build


def _find_default(name: str) -> str:
    mode = toolchain_mode()
    if mode == "auto" and _path_has_toolchain():
        path = _user_tool(name)
        if path is not None:
            return path
    pinned = _pinned_tool(name, _component_of(name))
    if pinned is not None:
        return pinned
    if mode == "pinned":
        raise ToolchainError(
            f"{name}: the pinned toolchain is not built: run 'make deps ACKWISE_TOOLCHAIN=pinned'"
        )
    path = shutil.which(name)
    if path is None:
        raise ToolchainError(
            f"{name} not found on PATH and the pinned toolchain is not built: run 'make deps' "
            "(README, 'The P4 toolchain')"
        )
    return path


FAST, LOGGING = "fast", "logging"  # BuildConfig.kind of the two builds


def simple_switch_of_kind(kind: str) -> str:
    """The simple_switch of a build kind: FAST (no logging macros; the pinned fast build where the
    one in use has them) or LOGGING (find_tool(..., logging=True))."""
    if kind == LOGGING:
        return find_tool(SIMPLE_SWITCH, logging=True)
    if kind != FAST:
        raise ToolchainError(f"build {kind!r}: give {FAST} or {LOGGING}")
    chosen = find_tool(SIMPLE_SWITCH)
    if build_config(chosen).logging_macros is False:
        return chosen
    pinned = _pinned_tool(SIMPLE_SWITCH, BMV2_FAST)
    if pinned is None:
        raise ToolchainError(
            f"{chosen} has logging macros compiled in (or no bm/config.h to tell) and the pinned fast "
            f"build is not installed: run 'make deps {TOOLCHAIN_ENV}=pinned'"
        )
    return pinned


def missing_tools() -> list[str]:
    missing = []
    for name in (P4C_BMV2, SIMPLE_SWITCH):
        try:
            find_tool(name)
        except ToolchainError:
            missing.append(name)
    return missing


def tool_bin_dirs() -> list[str]:
    """The bin directories of the tools find_tool picks, to put first on a child's PATH (so that a
    script calling ``simple_switch`` or ``p4c-bm2-ss`` by name gets the same ones)."""
    dirs: list[str] = []
    for name in (P4C_BMV2, SIMPLE_SWITCH):
        try:
            directory = str(Path(find_tool(name)).parent)
        except ToolchainError:
            continue
        if directory not in dirs:
            dirs.append(directory)
    return dirs


# ---- how a simple_switch was built ----


@dataclass(frozen=True)
class BuildConfig:
    """How a simple_switch was built, from the ``bm/config.h`` installed with it (bmv2's configure
    writes every option there, prefixed BM_). None: not known (no config.h beside it)."""

    executable: str
    config_h: str | None
    logging_macros: bool | None
    event_logger: bool | None
    optimisation: str | None = None  # -O flag of the pinned builds (tools/toolchain.env), when known

    @property
    def kind(self) -> str:
        if self.logging_macros is None:
            return "unknown"
        return LOGGING if self.logging_macros else FAST

    def describe(self) -> str:
        if self.logging_macros is None:
            return f"unknown build (no bm/config.h beside {self.executable})"
        parts = [
            "logging macros on" if self.logging_macros else "no logging macros",
            "event logger on" if self.event_logger else "no event logger",
        ]
        if self.optimisation:
            parts.insert(0, self.optimisation)
        return f"{self.kind} ({', '.join(parts)})"

    def as_record(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "executable": self.executable,
            "config_h": self.config_h,
            "logging_macros": self.logging_macros,
            "event_logger": self.event_logger,
            "optimisation": self.optimisation,
        }


def parse_config_h(text: str) -> tuple[bool | None, bool | None]:
    """(logging macros, event logger) from bmv2's installed bm/config.h. An option that is on is
    defined with the BM_ prefix (``#define BM_LOG_DEBUG_ON /**/``); one that is off stays as
    configure left it, unprefixed (``/* #undef LOG_DEBUG_ON */``). None: the file says neither."""

    def option(name: str) -> bool | None:
        if re.search(rf"^\s*#\s*define\s+BM_{name}\b", text, re.MULTILINE):
            return True
        if re.search(rf"#\s*undef\s+(?:BM_)?{name}\b", text):
            return False
        return None

    debug, trace = option("LOG_DEBUG_ON"), option("LOG_TRACE_ON")
    logging_macros = True if (debug or trace) else (False if (debug, trace) == (False, False) else None)
    return logging_macros, option("ELOG_ON")


def _optimisation(prefix: Path) -> str | None:
    """The -O level a pinned build was configured with (its marker file lists the flags)."""
    marker = prefix / BUILT_MARKER
    if not marker.is_file():
        return None
    found = re.search(r"CXXFLAGS=[^\n]*?(-O\w+)", marker.read_text(errors="replace"))
    return found.group(1) if found else None


@cache
def build_config(executable: str) -> BuildConfig:
    """The build configuration of the simple_switch at ``executable`` (its prefix's bm/config.h)."""
    real = Path(os.path.realpath(executable))
    prefix = real.parent.parent
    config_h = prefix / "include" / "bm" / "config.h"
    if not config_h.is_file():
        return BuildConfig(str(real), None, None, None)
    logging_macros, event_logger = parse_config_h(config_h.read_text(errors="replace"))
    return BuildConfig(str(real), str(config_h), logging_macros, event_logger, _optimisation(prefix))


def running_build_config(pid: int) -> BuildConfig | None:
    """The build configuration of the running process ``pid`` (from /proc/PID/exe), or None if it
    is gone or not readable."""
    try:
        executable = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    return build_config(executable.removesuffix(" (deleted)"))


# ---- Python bindings ----


def _candidate_binding_dirs() -> list[Path]:
    dirs: list[Path] = []
    for entry in os.environ.get(BINDINGS_ENV, "").split(os.pathsep):
        if entry:
            dirs.append(Path(entry))
    prefixes: list[Path] = []
    try:
        prefixes.append(Path(os.path.realpath(find_tool(SIMPLE_SWITCH))).parent.parent)
    except ToolchainError:
        pass
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
            "bmv2's Python bindings (bm_runtime) were not found: run 'make deps', or set "
            f"{BINDINGS_ENV} to the site-packages directory of your bmv2 that holds them"
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
    newer = newer_source(built, REPO_ROOT / "p4src")
    if newer is not None:
        raise ToolchainError(f"{built} is older than {newer}: run 'make build'")
    return built


def newer_source(built: Path, sources: Path) -> Path | None:
    """A P4 source under ``sources`` changed after ``built`` was compiled, or None. A benchmark or
    an experiment run by hand after a merge otherwise measures the program as it was before it
    (make's targets rebuild; `python -m` does not), under a record that names the new commit."""
    if not sources.is_dir():
        return None  # an installed package without the sources: nothing to compare with
    built_at = built.stat().st_mtime
    for source in sorted(sources.rglob("*.p4")):
        if source.stat().st_mtime > built_at:
            return source
    return None


def logging_build_warning() -> str | None:
    """A warning when the simple_switch in use has bmv2's logging macros compiled in (slow)."""
    try:
        switch = find_tool(SIMPLE_SWITCH)
    except ToolchainError:
        return None
    if build_config(switch).logging_macros is not True:
        return None
    return (
        f"warning: {switch} has bmv2's logging macros compiled in: every packet builds log lines it "
        "does not write (about 45 % of a policy's instructions, docs/performance.md), so switch arms "
        f"run slower than they need to. {TOOLCHAIN_ENV}=pinned make deps builds and uses the fast "
        "pinned build."
    )


_warned = False


def warn_if_logging_build() -> None:
    """Print logging_build_warning() once per process (make bench, ackwise experiment run)."""
    global _warned
    warning = None if _warned else logging_build_warning()
    if warning:
        print(warning, file=sys.stderr, flush=True)
        _warned = True


def main(argv: list[str] | None = None) -> int:
    """``python -m ackwise.bmv2.toolchain [--deps]``: the tools ackwise uses and how its switch
    was built; with --deps (make deps' last lines), exit 1 when a piece is missing."""
    argv = sys.argv[1:] if argv is None else argv
    prefix = "deps: " if "--deps" in argv else ""
    missing = False
    for name in (P4C_BMV2, SIMPLE_SWITCH):
        try:
            path = find_tool(name)
        except ToolchainError as exc:
            print(f"{prefix}{name}: MISSING ({exc})")
            missing = True
            continue
        detail = f", {build_config(path).describe()}" if name == SIMPLE_SWITCH else ""
        print(f"{prefix}{name}: {path}{detail}")
    try:
        logging_switch = find_tool(SIMPLE_SWITCH, logging=True)
        described = build_config(logging_switch).describe()
        print(f"{prefix}{SIMPLE_SWITCH} for logs: {logging_switch}, {described}")
    except ToolchainError as exc:
        print(f"{prefix}{SIMPLE_SWITCH} for logs: none ({exc})")
    directory = bindings_dir()
    print(f"{prefix}bmv2 Python bindings: {directory or 'MISSING'}")
    missing = missing or directory is None
    warning = logging_build_warning()
    if warning:
        print(f"{prefix}{warning}")
    print(f"{prefix}toolchain: {TOOLCHAIN_ENV}={toolchain_mode()} (README, 'The P4 toolchain')")
    return 1 if missing and prefix else 0


if __name__ == "__main__":
    sys.exit(main())
