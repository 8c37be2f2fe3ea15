"""Run by test_cleanup.py, not collected on its own: a test whose process leaves an orphan behind
(as a test bed's switches are, once their Mininet shell is gone), then a test that finds this run's
process, their subreaper, with no zombie children left."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


def zombie_children() -> list[str]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, rest = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        state, ppid = rest.split()[:2]
        if state == "Z" and int(ppid) == os.getpid():
            found.append(f"{name.split('(', 1)[1]} (pid {stat.parent.name})")
    return found


def test_leaves_an_orphan_that_ends() -> None:
    # sh exits at once; its background sleep is reparented to this run's process and ends 0.2 s later.
    subprocess.run(["sh", "-c", "sleep 0.2 & exit 0"], check=True)
    time.sleep(0.6)


def test_no_zombie_children_of_this_run() -> None:
    assert zombie_children() == []
