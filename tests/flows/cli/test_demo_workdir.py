"""`medasr demo --fresh` deletes only a folder the demo made (flows/cli/demo_workdir.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.errors import ConfigError
from flows.cli.demo_workdir import DEMO_MARK, prepare_workdir


def demo_folder_after_a_run(workdir: Path) -> Path:
    assert prepare_workdir(workdir, fresh=False) is False
    (workdir / "medasr.db").write_text("store")
    (workdir / "data" / "journal").mkdir(parents=True)
    return workdir


def test_a_folder_the_demo_makes_is_marked_and_fresh_starts_it_over(tmp_path: Path) -> None:
    workdir = demo_folder_after_a_run(tmp_path / ".demo")
    assert (workdir / DEMO_MARK).exists()
    assert prepare_workdir(workdir, fresh=False) is True  # resumed

    assert prepare_workdir(workdir, fresh=True) is False

    assert sorted(p.name for p in workdir.iterdir()) == [DEMO_MARK]


def test_an_empty_folder_is_the_demos_to_make(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert prepare_workdir(tmp_path / "empty", fresh=True) is False
    assert (tmp_path / "empty" / DEMO_MARK).exists()


@pytest.mark.parametrize(
    ("held", "why"),
    [
        (["medasr.db", "data"], "the demo did not make it"),  # a real store's folder
        ([DEMO_MARK, "medasr.db", "notes.txt"], "it holds notes.txt, which the demo did not write"),
        (["a", "b", "c", "d"], "it holds a, b, c, ..., which the demo did not write"),
    ],
)
def test_fresh_refuses_what_the_demo_did_not_make_and_keeps_it(
    tmp_path: Path, held: list[str], why: str
) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    for name in held:
        (workdir / name).write_text("kept")

    with pytest.raises(ConfigError) as refused:
        prepare_workdir(workdir, fresh=True)

    assert f"({why})" in refused.value.message
    assert sorted(p.name for p in workdir.iterdir()) == sorted(held)


def test_a_file_named_as_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        prepare_workdir(tmp_path / "f", fresh=True)
    assert (tmp_path / "f").read_text() == "x"
