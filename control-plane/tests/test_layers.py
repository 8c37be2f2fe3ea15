"""The layers contract (tools/check_layers.py, run by make lint too): the tree follows it, and a
deliberately wrong import, a sibling import and an unexplained function-local import each fail it."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def layers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_layers", REPO / "tools" / "check_layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tree(tmp_path: Path, layers: ModuleType) -> Path:
    """A copy of the Python packages, to break on purpose."""
    for folder in layers.FOLDERS:
        shutil.copytree(
            REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "*.yaml")
        )
    return tmp_path


def test_the_tree_follows_the_layers(layers: ModuleType) -> None:
    assert layers.problems(REPO) == []


def test_every_package_is_in_a_layer(layers: ModuleType) -> None:
    for folder in layers.FOLDERS:
        for path in (REPO / folder).rglob("*.py"):
            module = layers.module_name(path, REPO)
            if module.startswith(("ackwise.experiments", "ackwise.topologies", "ackwise.hosts")) and (
                folder == "control-plane/ackwise"
            ):
                continue
            assert layers.layer_of(module) is not None, module


def test_a_lower_layer_importing_a_higher_one_fails(tree: Path, layers: ModuleType) -> None:
    serial = tree / "control-plane/ackwise/twins/serial.py"
    serial.write_text(serial.read_text() + "\nfrom ackwise.cli.app import main  # wrong on purpose\n")
    (problem,) = layers.problems(tree)
    assert problem.startswith("control-plane/ackwise/twins/serial.py:")
    assert "ackwise.twins.serial (layer ackwise.twins) imports ackwise.cli.app from a higher layer" in problem
    assert layers.main(["--root", str(tree)]) == 1


def test_siblings_are_independent(tree: Path, layers: ModuleType) -> None:
    bench = tree / "experiments/stress/bench.py"
    bench.write_text(bench.read_text() + "\nfrom ackwise.experiments.harness import report\n")
    (problem,) = layers.problems(tree)
    assert "siblings ackwise.experiments.stress and ackwise.experiments.harness are independent" in problem


def test_a_local_import_must_say_why(tree: Path, layers: ModuleType) -> None:
    ecn = tree / "control-plane/ackwise/features/ecn.py"
    ecn.write_text(ecn.read_text() + "\n\ndef late() -> None:\n    from ackwise.twins import serial\n")
    (problem,) = layers.problems(tree)
    assert "imported inside a function without '# lazy: why'" in problem
    ecn.write_text(
        ecn.read_text().replace("    from ackwise.twins", "    # lazy: a test\n    from ackwise.twins")
    )
    assert layers.problems(tree) == []
