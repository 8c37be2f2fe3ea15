"""How the CLI prints: a plain table for people, JSON with --json."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any


def emit(args: argparse.Namespace, data: Any, text: str | Sequence[str]) -> None:
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        print(text if isinstance(text, str) else "\n".join(text))


def render_records(columns: Sequence[str], records: Sequence[Mapping[str, Any]], empty: str) -> str:
    """A table of ``records`` by ``columns`` (their keys), or ``empty`` when there are none."""
    return render_table(columns, [[r[c] for c in columns] for r in records]) if records else empty


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)
