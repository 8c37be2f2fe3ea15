"""How the host-side traffic tools (transfer, paced, piggyback, udp_answers; each run as
``python -m`` inside a test-bed host) end: one JSON line on stdout, the tool's result or an
``error`` naming what failed, which experiments/measure/traffic.py reads back."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any


def print_result(
    work: Callable[[], Mapping[str, Any]],
    errors: tuple[type[Exception], ...] = (OSError,),
    succeeded: Callable[[Mapping[str, Any]], bool] = lambda result: True,
) -> int:
    """Run the tool's work and print its JSON line; the exit status is 1 when one of ``errors``
    was raised (printed as ``{"error": "Type: message"}``) or ``succeeded`` says no."""
    try:
        result = work()
    except errors as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result))
    return 0 if succeeded(result) else 1
