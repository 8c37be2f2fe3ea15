"""When a long run stops starting runs (``--start-before``), so that a matrix of many hours can be
run in parts (one sitting each) from one checkout: a part stops between runs, never inside one, and
the same command run again resumes where it stopped (a resumed matrix skips the runs its directory
holds). Pure: the clock is passed in."""

from __future__ import annotations

import datetime as dt

# The exit status of a run or ``make experiments`` stopped by --start-before with runs still to do:
# not a failure (nothing failed), not done (resume it), and distinct from both for scripts.
EXIT_STOPPED = 3


class DeadlineError(ValueError):
    """A --start-before value that is not a time."""


def parse_start_before(text: str, now: dt.datetime) -> dt.datetime:
    """The instant after which no run starts. ``HH:MM`` is the next such time of day in ``now``'s
    time zone (today, or tomorrow if it has passed); otherwise an ISO 8601 date and time (without a
    zone: ``now``'s)."""
    value = text.strip()
    try:
        clock = dt.time.fromisoformat(value) if len(value) <= 8 and ":" in value else None
    except ValueError:
        clock = None
    if clock is not None:
        at = now.replace(hour=clock.hour, minute=clock.minute, second=clock.second, microsecond=0)
        return at if at > now else at + dt.timedelta(days=1)
    try:
        at = dt.datetime.fromisoformat(value)
    except ValueError:
        raise DeadlineError(
            f"--start-before {text!r}: give a time of day (HH:MM, e.g. 17:10) or an ISO 8601 date and "
            "time (e.g. 2026-11-27T17:10)"
        ) from None
    return at if at.tzinfo is not None else at.replace(tzinfo=now.tzinfo)


def stopped_message(to_do: int, total: int) -> str:
    return (
        f"stopped by --start-before with {to_do} of {total} runs still to do; "
        "run the same command again to resume"
    )
