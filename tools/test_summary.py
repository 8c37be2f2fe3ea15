#!/usr/bin/env python3
"""Combine the JUnit XML results of make test's suites into one line: N passed, N failed[, N skipped].

    test_summary.py SUITE=PATH [SUITE=PATH ...]

PATH is an XML file or a directory of them. A suite that left no results (it crashed, or was never
run) counts as one failure and is named, so a broken suite can never look like a clean run.
Exits 1 if anything failed.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def count(path: Path) -> tuple[int, int, int] | None:
    files = sorted(path.glob("*.xml")) if path.is_dir() else [path] if path.is_file() else []
    if not files:
        return None
    passed = failed = skipped = 0
    for f in files:
        for case in ET.parse(f).getroot().iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    return passed, failed, skipped


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    passed = failed = skipped = 0
    for item in argv:
        suite, _, path = item.partition("=")
        result = count(Path(path))
        if result is None:
            print(f"{suite}: no results in {path} (the suite did not run to the end)")
            failed += 1
            continue
        p, f, s = result
        print(f"{suite}: {p} passed, {f} failed" + (f", {s} skipped" if s else ""))
        passed, failed, skipped = passed + p, failed + f, skipped + s
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
