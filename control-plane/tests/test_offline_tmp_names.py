"""Offline tools keep out of /tmp/ackwise*: the integration tests' leftover check counts every new
/tmp/ackwise* entry as the test bed's (integration-tests/leftovers.py, TMP_PREFIX), so a
`make check-results` or a virtual-time model run beside them made them fail. Regression test: both
tools named their temporary directories ackwise-check- and ackwise-virtual-."""

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
OFFLINE_TOOLS = ["experiments/harness/all.py", "topologies/medium_model.py", "validation/run.py"]
TEST_BED_TMP_PREFIX = "ackwise"  # integration-tests/leftovers.py TMP_PREFIX


def temporary_name_prefixes(path: Path) -> list[str]:
    """The string prefixes given to tempfile's functions in one module."""
    prefixes = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "prefix" and isinstance(keyword.value, ast.Constant):
                    prefixes.append(str(keyword.value.value))
    return prefixes


def test_offline_tools_do_not_name_temporary_files_like_the_test_bed() -> None:
    leftovers = (REPO_ROOT / "integration-tests" / "leftovers.py").read_text()
    assert f'TMP_PREFIX = "{TEST_BED_TMP_PREFIX}"' in leftovers
    checked = 0
    for name in OFFLINE_TOOLS:
        path = REPO_ROOT / name
        if not path.exists():
            continue
        for prefix in temporary_name_prefixes(path):
            checked += 1
            assert not prefix.startswith(TEST_BED_TMP_PREFIX), f"{name}: temporary prefix {prefix!r}"
    assert checked >= 2
