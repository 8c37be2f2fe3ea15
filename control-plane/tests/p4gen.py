"""tools/gen_p4names.py (``make constants``), imported for the tests: tools/ is not a package, and
the ackwise package must not import from it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TOOL = Path(__file__).resolve().parents[2] / "tools" / "gen_p4names.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_p4names", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


gen_p4names = _load()
