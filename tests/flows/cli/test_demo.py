"""`medasr demo` as a new user runs it: twice, from a checkout, leaving nothing behind."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.flows.prefect_server import MEDASR, REPO, stripped_env


def demo(cwd: Path) -> str:
    done = subprocess.run(
        [MEDASR, "demo"],
        cwd=cwd,
        env=stripped_env() | {"COLUMNS": "200", "PREFECT_HOME": str(cwd / ".prefect")},
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.slow  # two demos, each two runs with Prefect's temporary server
def test_a_second_demo_resumes_and_nothing_is_left_in_the_checkout(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "samples", checkout / "samples")

    first = demo(checkout)
    second = demo(checkout)

    assert "first run: everything is new" in first
    assert "everything is new" not in second  # the store of the first demo is kept
    assert "requests the devserver saw: first run 0, second run 0" in second
    assert not (checkout / ".medasr").exists()  # the journal lives under .demo/
    named = [line for line in first.splitlines() if not line.startswith("store: ")]
    assert str(checkout) not in "\n".join(named)  # recordings named relative to samples/
    assert f"store: {checkout / '.demo' / 'medasr.db'}" in first.splitlines()
    assert "corrupt.mp3: failed" in first


def test_gitignore_names_what_medasr_leaves_in_a_checkout() -> None:
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert {"/.demo/", "/.medasr/", "/medasr.db*"} <= set(ignored)


def test_fresh_refuses_a_folder_the_demo_did_not_make_and_deletes_nothing(tmp_path: Path) -> None:
    workdir = tmp_path / "archive"
    (workdir / "sub").mkdir(parents=True)
    (workdir / "precious.txt").write_text("a note")
    (workdir / "sub" / "x.db").write_text("p2")
    (workdir / "medasr.db").write_text("p3")  # a real store's folder, named by mistake
    before = sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*"))

    done = subprocess.run(
        [MEDASR, "demo", "--workdir", str(workdir), "--fresh", "--samples", str(REPO / "samples")],
        cwd=tmp_path,
        env=stripped_env() | {"PREFECT_HOME": str(tmp_path / ".prefect")},
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )

    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*")) == before
    assert done.stderr.splitlines() == [
        f"medasr: configuration error: demo --fresh deletes only a folder the demo made; "
        f"{workdir} is kept (it holds precious.txt, sub, which the demo did not write): "
        "name another --workdir, or delete the folder yourself"
    ]
