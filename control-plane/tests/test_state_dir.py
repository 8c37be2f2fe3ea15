"""The CLI's state directory goes when the last switch or topology that used it has gone."""

from pathlib import Path

import pytest

from ackwise.bmv2 import launcher


def test_an_emptied_state_directory_is_removed_and_one_in_use_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv(launcher.STATE_DIR_ENV, str(state))
    state.mkdir()
    other = state / "switch-9091.json"  # another switch still running
    other.write_text("{}")
    launcher.release_state_dir()
    assert other.exists()
    other.unlink()
    launcher.release_state_dir()
    assert not state.exists()
    launcher.release_state_dir()  # nothing there: nothing to do, no error


def test_a_file_opens_in_a_state_directory_removed_in_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv(launcher.STATE_DIR_ENV, str(state))
    with launcher._open_in_state_dir(str(state / "switch-9090.out")) as out:
        out.write(b"x")
    assert (state / "switch-9090.out").read_bytes() == b"x"
