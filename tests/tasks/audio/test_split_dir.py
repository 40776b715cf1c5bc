"""`medasr split` output: private modes (folder 0700, chunks 0600), no stale chunks left."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from flows.cli.audio import split_command
from tasks.audio import split_to_dir
from tasks.errors import ChunkFolderTaken
from tests.helpers.audio import Dictation


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _cli() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("split")(split_command)
    app.command("noop")(lambda: None)  # two commands keep "split" a subcommand
    return app


@pytest.fixture
def open_umask():
    """The most permissive umask, so a missing mode argument would show as 0777/0666."""
    old = os.umask(0)
    yield
    os.umask(old)


@pytest.mark.usefixtures("open_umask")
def test_created_folders_are_0700_and_chunks_0600(dictation: Dictation, tmp_path: Path) -> None:
    out = tmp_path / "new" / "chunks"
    result = split_to_dir(dictation.mp3, out, max_bytes=2_000_000)
    assert len(result.files) >= 4
    assert _mode(out) == 0o700
    assert _mode(out.parent) == 0o700  # created by medasr too
    assert {_mode(item.path) for item in result.files} == {0o600}


@pytest.mark.usefixtures("open_umask")
def test_an_existing_folder_keeps_its_mode(dictation: Dictation, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir(mode=0o750)
    result = split_to_dir(dictation.mp3, out, max_bytes=2_000_000)
    assert _mode(out) == 0o750  # the operator's choice
    assert {_mode(item.path) for item in result.files} == {0o600}


def test_chunks_of_an_earlier_split_are_removed_and_counted(
    dictation: Dictation, tmp_path: Path
) -> None:
    out = tmp_path / "chunks"
    first = split_to_dir(dictation.mp3, out, max_bytes=1_000_000)
    assert len(first.files) >= 6
    keep = ["chunk-1.wav", "chunk-00001.wav", "chunk-0001.wav.bak", "notes.txt", "Chunk-0002.wav"]
    for name in keep:
        (out / name).write_text("not ours")
    (out / "chunk-0099.wav").mkdir()  # a folder: not a chunk file

    second = split_to_dir(dictation.mp3, out, max_bytes=5_000_000)

    assert second.stale_removed == len(first.files)
    chunks = sorted(p.name for p in out.glob("chunk-[0-9][0-9][0-9][0-9].wav") if p.is_file())
    assert chunks == [f"chunk-{i:04d}.wav" for i in range(1, len(second.files) + 1)]
    assert len(second.files) < len(first.files)
    assert all((out / name).read_text() == "not ours" for name in keep)
    assert (out / "chunk-0099.wav").is_dir()


def test_bad_input_leaves_an_earlier_split_alone(dictation: Dictation, tmp_path: Path) -> None:
    out = tmp_path / "chunks"
    first = split_to_dir(dictation.mp3, out, max_bytes=1_000_000)
    text = tmp_path / "notes.wav"
    text.write_text("not a recording")
    result = CliRunner().invoke(_cli(), ["split", str(text), "--out", str(out)])
    assert result.exit_code == 1
    assert sorted(out.iterdir()) == [item.path for item in first.files]


def test_cli_says_how_many_stale_chunks_it_removed(dictation: Dictation, tmp_path: Path) -> None:
    out = tmp_path / "chunks"
    args = ["split", str(dictation.mp3), "--out", str(out)]
    first = CliRunner().invoke(_cli(), [*args, "--max-bytes", "1000000"])
    assert first.exit_code == 0
    assert first.stderr == ""
    earlier = len(first.stdout.splitlines())

    second = CliRunner().invoke(_cli(), [*args, "--max-bytes", "5000000"])

    assert second.exit_code == 0, second.output
    assert second.stderr == (
        f"medasr: removed {earlier} chunk file(s) of an earlier split from {out}\n"
    )
    written = len(second.stdout.splitlines())
    assert sorted(p.name for p in out.iterdir()) == [
        f"chunk-{i:04d}.wav" for i in range(1, written + 1)
    ]


def test_chunk_named_files_split_did_not_write_are_kept_and_the_split_refused(
    dictation: Dictation, tmp_path: Path
) -> None:
    from tests.flows.prefect_server import MEDASR

    out = tmp_path / "recordings"
    out.mkdir()
    (out / "chunk-0007.wav").write_bytes(dictation.mp3.read_bytes())  # someone's recording
    (out / "chunk-0003.wav").write_text("precious")
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    done = subprocess.run(
        [MEDASR, "split", str(dictation.mp3), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )

    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.splitlines() == [
        f"medasr: configuration error: {out} holds chunk-0003.wav, chunk-0007.wav, which "
        "`medasr split` did not write; nothing was removed: give --out an empty folder or "
        "one an earlier split wrote"
    ]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("kept_bytes", [0, 10, 44 + 1000])
def test_a_chunk_left_half_written_by_a_killed_split_is_taken_for_one_of_its_own(
    dictation: Dictation, tmp_path: Path, kept_bytes: int
) -> None:
    """A split killed (SIGKILL, power) while it wrote a chunk leaves it cut short: the next
    split replaces it as its own, not refuses the folder. 10 bytes: not even a header, so
    nothing says it is a chunk; it is kept and the split refused."""
    out = tmp_path / "chunks"
    first = split_to_dir(dictation.mp3, out, max_bytes=1_000_000)
    whole = [f.path.read_bytes() for f in first.files]
    cut = first.files[-1].path
    cut.write_bytes(whole[-1][:kept_bytes])

    if kept_bytes == 10:
        with pytest.raises(ChunkFolderTaken):
            split_to_dir(dictation.mp3, out, max_bytes=1_000_000)
        assert cut.stat().st_size == 10
        return
    again = split_to_dir(dictation.mp3, out, max_bytes=1_000_000)
    assert again.stale_removed == len(first.files)
    assert [f.path.read_bytes() for f in again.files] == whole
