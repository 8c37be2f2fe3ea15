"""Which simple_switch and p4c ackwise runs (a user's own on PATH, the pinned build, or the one
ACKWISE_SIMPLE_SWITCH names), and how a simple_switch was built (its bm/config.h)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ackwise.bmv2.toolchain import (
    BMV2_FAST,
    BMV2_LOGGING,
    BUILT_MARKER,
    P4C,
    P4C_BMV2,
    SIMPLE_SWITCH,
    SIMPLE_SWITCH_ENV,
    TOOLCHAIN_ENV,
    TOOLCHAIN_SCRIPT,
    ToolchainError,
    build_config,
    find_tool,
    logging_build_warning,
    missing_tools,
    parse_config_h,
    running_build_config,
    simple_switch_of_kind,
)

# The two kinds of bm/config.h bmv2 1.15.5's configure installs (AX_PREFIX_CONFIG_H), cut to the
# lines that differ between the builds and a neighbour of each.
CONFIG_H_LOGGING = """\
/* Enable nanomsg event logger */
#ifndef BM_ELOG_ON
#define BM_ELOG_ON /**/
#endif

/* Enable compile-time macro for debug logging */
#ifndef BM_LOG_DEBUG_ON
#define BM_LOG_DEBUG_ON /**/
#endif

/* Enable compile-time macro for trace logging */
#ifndef BM_LOG_TRACE_ON
#define BM_LOG_TRACE_ON /**/
#endif

/* Enable Thrift support */
#ifndef BM_THRIFT_ON
#define BM_THRIFT_ON /**/
#endif
"""
CONFIG_H_FAST = """\
/* Enable nanomsg event logger */
/* #undef ELOG_ON */

/* Enable compile-time macro for debug logging */
/* #undef LOG_DEBUG_ON */

/* Enable compile-time macro for trace logging */
/* #undef LOG_TRACE_ON */

/* Enable Thrift support */
#ifndef BM_THRIFT_ON
#define BM_THRIFT_ON /**/
#endif
"""


def test_config_h_of_each_build() -> None:
    assert parse_config_h(CONFIG_H_LOGGING) == (True, True)
    assert parse_config_h(CONFIG_H_FAST) == (False, False)
    # Logging macros without the event logger (--disable-elogger only).
    without_elogger = CONFIG_H_LOGGING.replace("#ifndef BM_ELOG_ON\n#define BM_ELOG_ON /**/\n#endif", "")
    assert parse_config_h(without_elogger + "/* #undef ELOG_ON */\n") == (True, False)
    # A config.h that says nothing of either option (another bmv2 version) tells nothing.
    assert parse_config_h("#define BM_THRIFT_ON /**/\n") == (None, None)


def _install(prefix: Path, config_h: str | None, tools: tuple[str, ...] = (SIMPLE_SWITCH,)) -> Path:
    """A fake install: executables in PREFIX/bin, and bm/config.h (if given) in PREFIX/include."""
    (prefix / "bin").mkdir(parents=True)
    for tool in tools:
        path = prefix / "bin" / tool
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    if config_h is not None:
        (prefix / "include" / "bm").mkdir(parents=True)
        (prefix / "include" / "bm" / "config.h").write_text(config_h)
    return prefix


def _pinned(component: str) -> Path:
    """Where tools/toolchain.sh puts COMPONENT under this test's ACKWISE_TOOLCHAIN_ROOT."""
    out = subprocess.run(
        ["bash", str(TOOLCHAIN_SCRIPT), "prefix", component], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with nothing: an empty toolchain root and a PATH with only the shell's tools."""
    monkeypatch.setenv("ACKWISE_TOOLCHAIN_ROOT", str(tmp_path / "toolchain"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv(SIMPLE_SWITCH_ENV, raising=False)
    monkeypatch.delenv(TOOLCHAIN_ENV, raising=False)
    return tmp_path


def _build_pinned(components: tuple[str, ...] = (BMV2_FAST, BMV2_LOGGING, P4C)) -> dict[str, Path]:
    prefixes = {}
    for component in components:
        prefix = _pinned(component)
        if component == P4C:
            _install(prefix, None, (P4C_BMV2,))
        else:
            config_h = CONFIG_H_FAST if component == BMV2_FAST else CONFIG_H_LOGGING
            _install(prefix, config_h, (SIMPLE_SWITCH, "simple_switch_CLI"))
        (prefix / BUILT_MARKER).write_text("bmv2\nCXXFLAGS=-g -O3\n" if component == BMV2_FAST else "x\n")
        prefixes[component] = prefix
    return prefixes


def _user_install(machine: Path, monkeypatch: pytest.MonkeyPatch, config_h: str = CONFIG_H_LOGGING) -> Path:
    prefix = _install(machine / "usr-local", config_h, (SIMPLE_SWITCH, P4C_BMV2))
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}:/usr/bin:/bin")
    return prefix


def test_nothing_anywhere_names_make_deps(machine: Path) -> None:
    with pytest.raises(ToolchainError, match="make deps"):
        find_tool(SIMPLE_SWITCH)
    assert missing_tools() == [P4C_BMV2, SIMPLE_SWITCH]


def test_without_a_toolchain_on_path_the_pinned_one(machine: Path) -> None:
    prefixes = _build_pinned()
    assert find_tool(SIMPLE_SWITCH) == str(prefixes[BMV2_FAST] / "bin" / SIMPLE_SWITCH)
    assert find_tool(P4C_BMV2) == str(prefixes[P4C] / "bin" / P4C_BMV2)
    assert missing_tools() == []


def test_a_half_built_prefix_is_not_used(machine: Path) -> None:
    prefixes = _build_pinned()
    (prefixes[BMV2_FAST] / BUILT_MARKER).unlink()
    with pytest.raises(ToolchainError, match="make deps"):
        find_tool(SIMPLE_SWITCH)


def test_a_users_own_toolchain_on_path_wins_in_auto(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _build_pinned()
    user = _user_install(machine, monkeypatch)
    assert find_tool(SIMPLE_SWITCH) == str(user / "bin" / SIMPLE_SWITCH)
    assert find_tool(P4C_BMV2) == str(user / "bin" / P4C_BMV2)


def test_pinned_mode_takes_the_pinned_build_over_path(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefixes = _build_pinned()
    _user_install(machine, monkeypatch)
    monkeypatch.setenv(TOOLCHAIN_ENV, "pinned")
    assert find_tool(SIMPLE_SWITCH) == str(prefixes[BMV2_FAST] / "bin" / SIMPLE_SWITCH)
    assert find_tool(P4C_BMV2) == str(prefixes[P4C] / "bin" / P4C_BMV2)


def test_pinned_mode_without_the_build_says_how(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_install(machine, monkeypatch)
    monkeypatch.setenv(TOOLCHAIN_ENV, "pinned")
    with pytest.raises(ToolchainError, match="ACKWISE_TOOLCHAIN=pinned"):
        find_tool(SIMPLE_SWITCH)


def test_a_wrong_mode_names_the_choices(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOOLCHAIN_ENV, "fast")
    with pytest.raises(ToolchainError, match="auto or pinned"):
        find_tool(SIMPLE_SWITCH)


def test_links_to_the_pinned_build_are_not_a_users_toolchain(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tools/toolchain.sh link puts links in /usr/local/bin; after the pins change they point at
    the old prefix, which must not win over the new one."""
    prefixes = _build_pinned()
    old = _install(machine / "toolchain" / "bmv2-0.0-fast-old", CONFIG_H_FAST, (SIMPLE_SWITCH, P4C_BMV2))
    links = machine / "links"
    links.mkdir()
    for tool in (SIMPLE_SWITCH, P4C_BMV2):
        (links / tool).symlink_to(old / "bin" / tool)
    monkeypatch.setenv("PATH", f"{links}:/usr/bin:/bin")
    assert find_tool(SIMPLE_SWITCH) == str(prefixes[BMV2_FAST] / "bin" / SIMPLE_SWITCH)


def test_logs_need_the_logging_build(machine: Path) -> None:
    prefixes = _build_pinned()
    assert find_tool(SIMPLE_SWITCH, logging=True) == str(prefixes[BMV2_LOGGING] / "bin" / SIMPLE_SWITCH)
    assert find_tool(SIMPLE_SWITCH, logging=False) == str(prefixes[BMV2_FAST] / "bin" / SIMPLE_SWITCH)


def test_logs_without_a_logging_build_say_how(machine: Path) -> None:
    _build_pinned((BMV2_FAST, P4C))
    with pytest.raises(ToolchainError, match=r"without logging macros.*make deps"):
        find_tool(SIMPLE_SWITCH, logging=True)


def test_a_user_build_with_logging_serves_logs_itself(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = _user_install(machine, monkeypatch, CONFIG_H_LOGGING)
    assert find_tool(SIMPLE_SWITCH, logging=True) == str(user / "bin" / SIMPLE_SWITCH)
    assert "ACKWISE_TOOLCHAIN=pinned" in (logging_build_warning() or "")


def test_the_fast_build_draws_no_warning(machine: Path) -> None:
    _build_pinned()
    assert logging_build_warning() is None


def test_the_environment_names_another_simple_switch(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = _install(machine / "other", CONFIG_H_FAST)
    monkeypatch.setenv(SIMPLE_SWITCH_ENV, str(other / "bin" / SIMPLE_SWITCH))
    assert find_tool(SIMPLE_SWITCH) == str(other / "bin" / SIMPLE_SWITCH)


def test_a_wrong_path_names_the_variable(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIMPLE_SWITCH_ENV, str(machine / "nothing"))
    with pytest.raises(ToolchainError, match=SIMPLE_SWITCH_ENV):
        find_tool(SIMPLE_SWITCH)


def test_build_config_of_each_kind(machine: Path) -> None:
    prefixes = _build_pinned()
    fast = build_config(str(prefixes[BMV2_FAST] / "bin" / SIMPLE_SWITCH))
    assert (fast.kind, fast.logging_macros, fast.event_logger) == ("fast", False, False)
    assert fast.describe() == "fast (-O3, no logging macros, no event logger)"
    logging = build_config(str(prefixes[BMV2_LOGGING] / "bin" / SIMPLE_SWITCH))
    assert (logging.kind, logging.logging_macros, logging.event_logger) == ("logging", True, True)
    assert logging.as_record()["config_h"] == str(prefixes[BMV2_LOGGING] / "include" / "bm" / "config.h")


def test_build_config_follows_links_to_the_prefix(machine: Path) -> None:
    prefix = _install(machine / "prefix", CONFIG_H_FAST)
    link = machine / "simple_switch"
    link.symlink_to(prefix / "bin" / SIMPLE_SWITCH)
    assert build_config(str(link)).config_h == str(prefix / "include" / "bm" / "config.h")


def test_build_config_without_config_h_is_unknown(machine: Path) -> None:
    bare = _install(machine / "bare", None)
    config = build_config(str(bare / "bin" / SIMPLE_SWITCH))
    assert (config.kind, config.logging_macros) == ("unknown", None)
    assert "no bm/config.h" in config.describe()


def test_running_build_config_reads_proc_exe() -> None:
    """This test's own process: /proc/PID/exe is the Python interpreter, which has no config.h."""
    config = running_build_config(os.getpid())
    assert config is not None
    assert config.executable == os.path.realpath(f"/proc/{os.getpid()}/exe")
    assert running_build_config(2**22 + 1) is None  # above pid_max: no such process


def test_builds_by_kind_for_the_bench(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefixes = _build_pinned()
    user = _user_install(machine, monkeypatch, CONFIG_H_LOGGING)
    # The user's own build has logging macros: the fast one is the pinned one, the logging one theirs.
    assert simple_switch_of_kind("fast") == str(prefixes[BMV2_FAST] / "bin" / SIMPLE_SWITCH)
    assert simple_switch_of_kind("logging") == str(user / "bin" / SIMPLE_SWITCH)
    with pytest.raises(ToolchainError, match="fast or logging"):
        simple_switch_of_kind("nolog")


def test_no_fast_build_says_how_to_get_one(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_install(machine, monkeypatch, CONFIG_H_LOGGING)
    with pytest.raises(ToolchainError, match="make deps ACKWISE_TOOLCHAIN=pinned"):
        simple_switch_of_kind("fast")


def test_a_program_compiled_before_its_sources_changed_is_refused(tmp_path: Path) -> None:
    """Regression: a bench run by hand after a merge measured build/ack_switch.json as compiled
    before the merge (issue 35's P4), under a record naming the merged commit."""
    from ackwise.bmv2.toolchain import newer_source

    sources = tmp_path / "p4src"
    (sources / "include").mkdir(parents=True)
    header = sources / "include" / "headers.p4"
    header.write_text("// v1\n")
    built = tmp_path / "ack_switch.json"
    built.write_text("{}")
    os.utime(header, (1000, 1000))
    os.utime(built, (2000, 2000))
    assert newer_source(built, sources) is None
    os.utime(header, (3000, 3000))
    assert newer_source(built, sources) == header
    assert newer_source(built, tmp_path / "no-sources") is None
