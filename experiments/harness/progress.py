"""The progress display of ``ackwise experiment run``: runs done of total, the current run and what
it is doing, and an estimate of the time left from the runs measured so far (the scenario's hint
before the first one ends). Quiet (prints nothing) when output goes to scripts (``--json``)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"


class Progress:
    def __init__(self, total: int, already: int, hint_s: float, quiet: bool, header: str) -> None:
        self.total, self.done, self.hint_s, self.quiet = total, already, hint_s, quiet
        self.header = header
        self.durations: list[float] = []
        self.failed = 0
        self.current = ""
        self.detail = ""
        self.run_started = time.monotonic()
        self.console = Console(file=sys.stderr)
        self.live: Live | None = None

    def eta_s(self) -> float:
        per_run = sum(self.durations) / len(self.durations) if self.durations else self.hint_s
        left = self.total - self.done
        elapsed = time.monotonic() - self.run_started if self.current else 0.0
        return max(0.0, left * per_run - min(elapsed, per_run))

    def render(self) -> Text:
        text = Text()
        text.append(f"{self.header}\n", style="bold")
        text.append(f"runs {self.done}/{self.total}", style="cyan")
        if self.failed:
            text.append(f" ({self.failed} failed)", style="red")
        text.append(f", about {format_duration(self.eta_s())} left\n")
        if self.current:
            elapsed = time.monotonic() - self.run_started
            text.append(f"now: {self.current} [{format_duration(elapsed)}] {self.detail}")
        return text

    def __enter__(self) -> Progress:
        if not self.quiet:
            self.live = Live(self.render(), console=self.console, refresh_per_second=2, transient=False)
            self.live.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.current = ""
        if self.live is not None:
            self.live.update(self.render())
            self.live.__exit__(exc_type, exc, tb)
            self.live = None

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self.render())

    def start_run(self, label: str) -> None:
        self.current, self.detail, self.run_started = label, "starting the test bed", time.monotonic()
        self._refresh()

    def update_run(self, detail: str) -> None:
        self.detail = detail
        self._refresh()

    def end_run(self, record: Any) -> None:
        self.durations.append(time.monotonic() - self.run_started)
        self.done += 1
        if record.status != "ok":
            self.failed += 1
            if self.live is not None:
                self.live.console.print(f"[red]failed[/red]: {self.current}: {record.reason}")
        self.current = ""
        self._refresh()
