"""The summary line make test ends with must count every suite, including one that crashed."""

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "test_summary.py"

XML = """<testsuite><testcase name="a"/><testcase name="b"><failure/></testcase>
<testcase name="c"><skipped/></testcase><testcase name="d"><error/></testcase></testsuite>"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True)


def test_counts_cases_and_fails_on_failures(tmp_path: Path) -> None:
    (tmp_path / "r.xml").write_text(XML)
    result = run(f"unit={tmp_path / 'r.xml'}")
    assert result.stdout.splitlines()[-1] == "1 passed, 2 failed, 1 skipped"
    assert result.returncode == 1


def test_missing_suite_counts_as_failure(tmp_path: Path) -> None:
    (tmp_path / "ok.xml").write_text('<testsuite><testcase name="a"/></testsuite>')
    result = run(f"unit={tmp_path / 'ok.xml'}", f"ptf={tmp_path / 'absent'}")
    assert "ptf: no results" in result.stdout
    assert result.stdout.splitlines()[-1] == "1 passed, 1 failed"
    assert result.returncode == 1
