"""Ctrl-C as a terminal sends it: SIGINT to the whole process group of the command.

Each command is started in a session of its own (so the test's group is not touched);
once the moment has come (an ffmpeg child decodes, a request is in flight) the test
signals the group, as a terminal does. An interrupted decode, upload or store write is
never a verdict on a recording: the command exits 130, no row is failed, and the next
run finishes what was left.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from tests.reliability.corpus import age_files, store_done_notes
from tests.reliability.evidence import items, query
from tests.reliability.harness import Running, ffmpeg_processes

# 2 s chunks: a recording of about two minutes is ~60 requests, and ffmpeg is still
# decoding (blocked on its pipe) while the first of them are in flight.
SMALL_CHUNKS = {"MEDASR_MAX_UPLOAD_BYTES": "64000"}


def long_text(tag: str) -> str:
    """About 125 s of tone dictation, distinct per `tag`."""
    return " ".join(f"{tag} case {i} stable resting." for i in range(40))


def write_tone_caf(path: Path, text: str) -> None:
    """`text` as a tone-dictation CAF (decoded by an ffmpeg process: no libav worker takes CAF)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(path, encode_tone_dictation(text, sample_rate_hz=16_000), 16_000, format="CAF")


def wait_for(check: Callable[[], object], *, running: Running, what: str) -> None:
    """Until `check()` is true (an event in another process); fails if medasr ends first."""
    deadline = time.monotonic() + 300
    while not check():
        if running.process.poll() is not None:
            raise AssertionError(f"medasr ended before {what}:\n{running.log()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what}:\n{running.log()}")
        time.sleep(0.01)


def ctrl_c(running: Running) -> None:
    """What a terminal does on Ctrl-C: SIGINT to the foreground process group."""
    os.killpg(os.getpgid(running.process.pid), signal.SIGINT)


def recordings(root: Path) -> dict[str, str]:
    texts = {"ward a/first.caf": long_text("alpha"), "ward b/second.caf": long_text("bravo")}
    for name, text in texts.items():
        write_tone_caf(root / name, text)
    age_files(root)
    return texts


def assert_none_failed(database_url: str) -> None:
    failed = [
        (r["source_uri"], r["error_kind"]) for r in items(database_url) if r["status"] == "failed"
    ]
    assert failed == [], failed


@pytest.mark.slow  # two runs with the temporary Prefect server
def test_ctrl_c_to_the_group_during_a_run_leaves_the_recordings_pending(
    tmp_path: Path, tone_devserver, medasr_for
) -> None:
    server = tone_devserver(latency_ms=5000)  # still busy when Prefect's server is up
    source = tmp_path / "archive"
    texts = recordings(source)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database, **SMALL_CHUNKS)

    running = medasr.start("run", str(source), "-l", "en-IN")
    running.wait_for_output("Beginning flow run", timeout_s=300)  # Prefect's server is up
    wait_for(
        lambda: ffmpeg_processes(str(source)) and server.state.capacity.peak_in_flight,
        running=running,
        what="an ffmpeg child decoding while a request is in flight",
    )
    ctrl_c(running)
    finished = running.wait()

    assert finished.returncode == 130, finished.describe()
    assert_none_failed(database)
    assert "Traceback" not in finished.stderr, finished.describe()

    quick = medasr_for(tone_devserver(), database, **SMALL_CHUNKS)
    again = quick.run("run", str(source), "-l", "en-IN")
    assert again.returncode == 0, again.describe()
    done = {Path(r["source_uri"]).relative_to(source).as_posix(): r for r in items(database)}
    assert {name: row["status"] for name, row in done.items()} == dict.fromkeys(texts, "done")
    # 2 s chunks may cut before a sentence's closing pause: "resting ." joins as "resting."
    assert {name: row["text"].replace(" .", ".") for name, row in done.items()} == texts


@pytest.mark.slow
def test_ctrl_c_to_the_group_during_a_rerun_leaves_the_failures_due(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api: dict[str, str]
) -> None:
    source = tmp_path / "archive"
    texts = recordings(source)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    down = tone_devserver(rate_503=1.0)
    failing = medasr_for(
        down,
        database,
        MEDASR_MAX_ATTEMPTS="1",
        MEDASR_PIPELINE__RETRY_DELAY_S="0",
        **SMALL_CHUNKS,
        **prefect_api,
    )
    first = failing.run("run", str(source), "-l", "en-IN")
    assert first.returncode == 1, first.describe()
    assert {r["status"] for r in items(database)} == {"failed"}

    server = tone_devserver(latency_ms=300)
    medasr = medasr_for(server, database, **SMALL_CHUNKS, **prefect_api)
    running = medasr.start("rerun-failures")
    wait_for(
        lambda: ffmpeg_processes(str(source)) and server.state.capacity.peak_in_flight,
        running=running,
        what="an ffmpeg child decoding while a request is in flight",
    )
    ctrl_c(running)
    finished = running.wait()

    assert finished.returncode == 130, finished.describe()
    kinds = {r["error_kind"] for r in items(database) if r["status"] == "failed"}
    assert "decode_failed" not in kinds, finished.describe()
    failed = [r for r in items(database) if r["status"] == "failed"]
    not_due = [(r["error_kind"], r.get("error_message")) for r in failed if not r["retryable"]]
    assert not not_due, f"{not_due}\n{finished.describe()}"  # a string: shown whole

    again = medasr.run("rerun-failures")
    assert again.returncode == 0, again.describe()
    assert {r["status"] for r in items(database)} == {"done"}
    assert sorted(r["text"].replace(" .", ".") for r in items(database)) == sorted(texts.values())


def test_ctrl_c_to_the_group_during_a_delivery_leaves_the_documents_pending(
    tmp_path: Path, tone_devserver, medasr_for
) -> None:
    server = tone_devserver(latency_ms=2000)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database)
    names = [f"/archive/note-{i}.wav" for i in range(6)]
    store_done_notes(medasr, database, {name: f"note {i} words" for i, name in enumerate(names)})

    running = medasr.start("deliver", "--allow-unlinked", MEDASR_CONCURRENCY="1")
    running.wait_for_output("delivered /archive/note-0.wav")  # the next upload is on the wire
    ctrl_c(running)
    finished = running.wait()

    assert finished.returncode == 130, finished.describe()
    assert "Traceback" not in finished.stderr, finished.describe()
    statuses = [r["status"] for r in query(database, "SELECT status FROM deliveries")]
    assert "failed" not in statuses, finished.describe()

    again = medasr.run("deliver", "--resend-in-doubt", "--allow-unlinked")
    assert again.returncode == 0, again.describe()
    statuses = [r["status"] for r in query(database, "SELECT status FROM deliveries")]
    assert statuses == ["delivered"] * len(names)


def test_ctrl_c_to_the_group_during_a_split_is_an_interruption(
    tmp_path: Path, medasr_for, tone_devserver
) -> None:
    medasr = medasr_for(tone_devserver(), f"sqlite:///{tmp_path / 'medasr.db'}")
    recording = tmp_path / "long.caf"
    write_tone_caf(recording, " ".join([long_text("split")] * 6))  # about 12 minutes
    out = tmp_path / "chunks"

    running = medasr.start("split", str(recording), "--out", str(out), "--max-bytes", "64000")
    wait_for(
        lambda: ffmpeg_processes(str(recording)) and out.is_dir() and any(out.iterdir()),
        running=running,
        what="ffmpeg decoding while chunks are written",
    )
    ctrl_c(running)
    finished = running.wait()

    assert finished.returncode == 130, finished.describe()
    assert "interrupted" in finished.stderr, finished.describe()
    assert "decode" not in finished.stderr, finished.describe()
    assert list(out.iterdir()) == []  # no chunk left half-written, none of a half split
    again = medasr.run("split", str(recording), "--out", str(out), "--max-bytes", "64000")
    assert again.returncode == 0, again.describe()


@pytest.mark.slow  # the temporary Prefect server: the run row waits for it
def test_after_ctrl_c_before_the_run_row_status_and_export_name_recordings_relative(
    tmp_path: Path, tone_devserver, medasr_for
) -> None:
    server = tone_devserver(latency_ms=5000)
    source = tmp_path / "archive"
    write_tone_caf(source / "ward b" / "long.caf", long_text("bravo"))
    (source / "ward a").mkdir(parents=True)
    (source / "ward a" / "notes.wav").write_text("a scanned letter, not a dictation\n")
    age_files(source)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database, **SMALL_CHUNKS)

    running = medasr.start("run", str(source), "-l", "en-IN")
    # The head start works while Prefect's server starts: notes.wav fails at once, long.caf
    # decodes; no run row exists yet.
    wait_for(
        lambda: (
            ffmpeg_processes(str(source)) and any(r["status"] == "failed" for r in items(database))
        ),
        running=running,
        what="a failure recorded and an ffmpeg child decoding",
    )
    assert query(database, "SELECT id FROM runs") == [], running.log()
    ctrl_c(running)
    assert running.wait().returncode == 130

    status = medasr.run("status")
    export = medasr.run("export", "--format", "jsonl", "--out", str(tmp_path / "out.jsonl"))

    assert status.returncode == export.returncode == 0, status.describe() + export.describe()
    [failed] = [line for line in status.stdout.splitlines() if "not_audio" in line]
    assert failed.startswith("ward a/notes.wav\ten-IN\tnot_audio\t"), failed
    assert str(source) not in status.output, status.describe()
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    rows = {r["source"]: r for r in map(json.loads, lines)}
    assert set(rows) == {"ward a/notes.wav", "ward b/long.caf"}
    notes = rows["ward a/notes.wav"]
    assert notes["source_uri"] == str(source / "ward a" / "notes.wav")  # a column of its own
    assert str(source) not in notes["error_message"]
    assert "ward a/notes.wav" in notes["error_message"]
