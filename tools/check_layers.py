#!/usr/bin/env python3
"""The layers of ackwise, enforced: a module may import from its own layer's package and from the
layers below it, never from a layer above, nor from a sibling package of its own layer (siblings
are independent). A function-local import of an ackwise module must say why it is local
(``# lazy: ...`` on it or the line above): only to keep a heavy optional dependency (Mininet,
matplotlib) off a light path.

    tools/check_layers.py [--root DIR]      (make lint; control-plane/tests/test_layers.py)

An AST check, not import-linter's: ackwise is one distribution whose subpackages live in several
top-level folders (package-dir in pyproject.toml), which import-linter's graph builder does not
follow. docs/architecture.md draws the same table.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

# Top to bottom. Packages on one line are siblings: independent of each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("ackwise.__main__",),
    ("ackwise.cli",),
    ("ackwise.experiments.harness", "ackwise.experiments.stress"),
    ("ackwise.experiments.measure",),
    ("ackwise.topologies", "ackwise.hosts"),
    ("ackwise.controller", "ackwise.daemons"),
    ("ackwise.features",),
    ("ackwise.bmv2",),
    ("ackwise.twins",),
    ("ackwise.netdev", "ackwise.processes", "ackwise.errors", "ackwise"),
)
# Where the packages live (pyproject.toml's package-dir).
FOLDERS = {
    "control-plane/ackwise": "ackwise",
    "experiments": "ackwise.experiments",
    "topologies": "ackwise.topologies",
    "hosts": "ackwise.hosts",
}
LAZY_MARK = "lazy:"


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the ackwise module (or name in it) imported
    path: Path
    line: int
    local: bool  # inside a function
    reason: bool  # a "# lazy: ..." comment says why it is local


def layer_of(module: str) -> tuple[int, str] | None:
    """(layer index, the layer package the module is in), the most specific package first."""
    best: tuple[int, str] | None = None
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if module == package or module.startswith(package + "."):
                if best is None or len(package) > len(best[1]):
                    best = (index, package)
    return best


def module_name(path: Path, root: Path) -> str | None:
    rel = path.relative_to(root).as_posix()
    for folder, package in sorted(FOLDERS.items(), key=lambda kv: -len(kv[0])):
        if rel.startswith(folder + "/"):
            parts = rel[len(folder) + 1 :].removesuffix(".py").split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join([package, *parts])
    return None


def _explained(lines: list[str], body: list[ast.stmt]) -> set[int]:
    """Lines of the function-local imports that a ``# lazy: ...`` comment explains: the comment sits
    in or right above a run of consecutive import statements."""
    explained: set[int] = set()
    run: list[ast.stmt] = []
    for stmt in [*body, None]:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            run.append(stmt)
            continue
        if run:
            first, last = run[0].lineno, run[-1].end_lineno or run[-1].lineno
            above = first - 1
            while above > 0 and lines[above - 1].strip().startswith("#"):
                above -= 1
            if any(LAZY_MARK in line for line in lines[above:last]):
                explained.update(range(first, last + 1))
            run = []
    return explained


def imports_of(path: Path, module: str) -> list[Import]:
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    local: set[int] = set()
    explained: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            local.update(n.lineno for n in ast.walk(fn) if isinstance(n, ast.Import | ast.ImportFrom))
            for node in ast.walk(fn):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(node, field, None)
                    if isinstance(block, list):
                        explained |= _explained(lines, block)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [node.module] if node.module != "ackwise" else [f"ackwise.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            if target == "ackwise" or target.startswith("ackwise."):
                is_local = node.lineno in local
                found.append(Import(module, target, path, node.lineno, is_local, node.lineno in explained))
    return found


def problems(root: Path) -> list[str]:
    out = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            module = module_name(path, root)
            if module is None or module.startswith("ackwise.experiments.scenarios"):
                continue
            if module.startswith(("ackwise.experiments", "ackwise.topologies", "ackwise.hosts")) and (
                folder == "control-plane/ackwise"
            ):
                continue
            mine = layer_of(module)
            for imp in imports_of(path, module):
                where = f"{path.relative_to(root)}:{imp.line}"
                if imp.local and not imp.reason:
                    out.append(
                        f"{where}: {imp.target} is imported inside a function without '# {LAZY_MARK} why' "
                        "(only to keep a heavy dependency off a light path)"
                    )
                theirs = layer_of(imp.target)
                if mine is None or theirs is None:
                    out.append(f"{where}: {module} or {imp.target} is in no layer of tools/check_layers.py")
                    continue
                if theirs[0] < mine[0]:
                    out.append(
                        f"{where}: {module} (layer {mine[1]}) imports {imp.target} from a higher layer"
                    )
                elif theirs[0] == mine[0] and theirs[1] != mine[1] and theirs[1] != "ackwise":
                    siblings = f"siblings {mine[1]} and {theirs[1]} are independent"
                    out.append(f"{where}: {module} imports {imp.target}: {siblings}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    found = problems(args.root)
    for line in found:
        print(line)
    print(f"layers: {len(found)} problem(s)" if found else "layers: every import follows them")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
