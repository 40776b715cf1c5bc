"""ffmpeg always ends: early close, a failing consumer and a timeout leave no child, no
zombie and no temp file; the CLI's output and exit codes."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from flows.cli.audio import split_command
from tasks.audio import iter_chunks, split_to_dir
from tasks.errors import DecodeFailed, NotAudio
from tests.helpers.audio import Dictation, assert_no_child_left, children_pids, process_state

ROOT = Path(__file__).resolve().parents[3]


def _ffmpeg_children(before: set[int]) -> set[int]:
    """Children started since `before` whose command line names ffmpeg."""
    found = set()
    for pid in children_pids() - before:
        try:
            if b"ffmpeg" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
        except FileNotFoundError:
            continue
    return found


def test_zombie_detection_sees_an_unreaped_child() -> None:
    """The checks below would catch a zombie, whose /proc cmdline is empty."""
    before = children_pids()
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while process_state(child.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process_state(child.pid) == "Z"
    with pytest.raises(AssertionError):
        assert_no_child_left(before)
    child.wait()
    assert_no_child_left(before)


def test_closing_the_generator_early_kills_and_reaps_ffmpeg(dictation: Dictation) -> None:
    before = children_pids()
    chunks = iter_chunks(dictation.mp3, max_bytes=500_000)
    next(chunks)
    running = _ffmpeg_children(before)
    assert len(running) == 1
    chunks.close()
    assert_no_child_left(before)
    (pid,) = running
    assert process_state(pid) is None  # reaped, not a zombie


def test_a_failure_right_after_starting_ffmpeg_leaves_no_child(
    dictation: Dictation, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_descriptors_left() -> None:
        raise OSError(24, "Too many open files")

    # Running out of file descriptors cannot be provoked on cue without starving the
    # test itself: the selector's constructor fails instead.
    monkeypatch.setattr("tasks.audio.decoder.selectors.DefaultSelector", no_descriptors_left)
    before = children_pids()

    with pytest.raises(OSError, match="Too many open files"):
        next(iter_chunks(dictation.mp3, max_bytes=500_000))

    assert_no_child_left(before)


def test_a_failing_consumer_leaves_no_ffmpeg(dictation: Dictation) -> None:
    before = children_pids()

    def consume() -> None:
        for chunk in iter_chunks(dictation.m4a, max_bytes=500_000):
            if chunk.index == 2:
                raise RuntimeError("the service went away")

    with pytest.raises(RuntimeError):
        consume()
    gc.collect()
    assert_no_child_left(before)


def test_timeout_kills_ffmpeg_and_says_so(dictation: Dictation) -> None:
    before = children_pids()
    with pytest.raises(DecodeFailed, match=r"did not finish .* within 0\.05 s") as caught:
        list(iter_chunks(dictation.mp3, max_bytes=500_000, timeout_s=0.05))
    assert caught.value.kind == "decode_failed"
    assert_no_child_left(before)


def test_time_spent_by_the_consumer_does_not_count(dictation: Dictation) -> None:
    """The budget covers waiting for ffmpeg, not the caller's own work between chunks."""
    started = time.monotonic()
    count = 0
    for _ in iter_chunks(dictation.wav, max_bytes=2_000_000, timeout_s=1.0):
        time.sleep(0.25)  # a slow upload
        count += 1
    assert count >= 6
    assert time.monotonic() - started > 1.0  # a wall-clock budget would have tripped


def test_no_temp_file_is_left(
    dictation: Dictation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A temp folder of our own: the shared /tmp changes under other processes' feet.
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # for ffmpeg
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    list(iter_chunks(dictation.m4a, max_bytes=1_000_000))
    text = tmp_path / "x.wav"
    text.write_text("not audio")
    with pytest.raises(NotAudio):
        split_to_dir(text, tmp_path / "out", max_bytes=1_000_000)
    chunks = iter_chunks(dictation.mp3, max_bytes=500_000)
    next(chunks)
    chunks.close()
    assert list(temp.iterdir()) == []
    assert not (tmp_path / "out").exists()


def _cli() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("split")(split_command)
    app.command("noop")(lambda: None)  # two commands keep "split" a subcommand
    return app


def test_split_cli_prints_one_exact_json_line_per_chunk(
    dictation: Dictation, tmp_path: Path
) -> None:
    out = tmp_path / "chunks"
    result = CliRunner().invoke(
        _cli(), ["split", str(dictation.mp3), "--out", str(out), "--max-bytes", "2000000"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) >= 4
    previous_end = 0
    for number, line in enumerate(lines, start=1):
        record = json.loads(line)
        assert list(record) == ["index", "path", "start_ms", "end_ms", "bytes"]
        path = out / f"chunk-{number:04d}.wav"
        expected = {
            "index": number,
            "path": str(path),
            "start_ms": previous_end,
            "end_ms": record["end_ms"],
            "bytes": path.stat().st_size,
        }
        assert line == json.dumps(expected)
        assert record["bytes"] <= 2_000_000
        previous_end = record["end_ms"]
    assert sorted(p.name for p in out.iterdir()) == [
        f"chunk-{i:04d}.wav" for i in range(1, 1 + len(lines))
    ]


@pytest.mark.parametrize(
    ("make", "words"),
    [
        pytest.param(lambda tmp: tmp / "missing.mp3", "audio file not found", id="missing"),
        pytest.param(
            lambda tmp: (tmp / "t.wav").write_text("hello") and tmp / "t.wav",
            "not an audio file",
            id="text",
        ),
    ],
)
def test_split_cli_bad_input_is_one_line_and_exit_1(tmp_path: Path, make, words: str) -> None:
    path = make(tmp_path)
    result = CliRunner().invoke(_cli(), ["split", str(path), "--out", str(tmp_path / "o")])
    # Issue 20: a file that is not there is a usage error (2); one that is not audio, 1.
    assert result.exit_code == (2 if "missing" in path.name else 1)
    assert result.stdout == ""
    assert result.stderr == f"medasr: {result.stderr.removeprefix('medasr: ')}"
    assert words in result.stderr
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_split_cli_refuses_a_cap_under_one_second(tmp_path: Path, dictation: Dictation) -> None:
    result = CliRunner().invoke(
        _cli(), ["split", str(dictation.mp3), "--out", str(tmp_path), "--max-bytes", "1000"]
    )
    assert result.exit_code == 2


def test_split_cli_in_a_real_process(dictation: Dictation, tmp_path: Path) -> None:
    """Exit codes and streams as a shell sees them (the command's own module, not others')."""
    script = textwrap.dedent(
        """
        import sys, typer
        from flows.cli.audio import split_command
        app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        app.command("split")(split_command)
        app.command("noop")(lambda: None)
        app(sys.argv[1:])
        """
    )
    run = [sys.executable, "-c", script, "split"]
    good = subprocess.run(
        [*run, str(dictation.wav), "--out", str(tmp_path / "a")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert good.returncode == 0
    assert good.stderr == ""
    assert json.loads(good.stdout.splitlines()[0])["start_ms"] == 0
    bad = subprocess.run(
        [*run, str(tmp_path), "--out", str(tmp_path / "b")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 1
    assert bad.stderr == f"medasr: not a file but a directory: {tmp_path}\n"
    assert bad.stdout == ""
