"""Every file under a source is accounted for: transcribed whatever its extension, failed
with `unsupported_format` (naming the format and what to do), or ignored as not audio by
the stated rule and counted as such. Files are made with the bundled ffmpeg's encoders,
and a DSS dictation byte by byte (tests/helpers/dss.py: ffmpeg has no DSS muxer).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tasks.audio.ffmpeg import find_ffmpeg
from tests.helpers.dss import dss_frames_for, dss_seconds, write_dss
from tests.recordings import write_tone_wav
from tests.reliability.corpus import age_files
from tests.reliability.evidence import items

AMR = ["-ar", "8000", "-ac", "1", "-c:a", "libopencore_amrnb", "-b:a", "12.2k"]
ENCODINGS = {
    "aiff": ["-c:a", "pcm_s16be"],
    "wma": ["-c:a", "wmav2"],
    "amr": AMR,
    "3gp": AMR,
    "caf": ["-c:a", "pcm_s16le"],
    "opus": ["-c:a", "libopus"],
    "webm": ["-c:a", "libopus"],
    "flac": [],
}
NOT_AUDIO = ("notes.txt", "scan.jpg", "export.json")


def encode(source: Path, target: Path, args: list[str]) -> None:
    command = [find_ffmpeg(), "-v", "error", "-i", str(source), *args, str(target)]
    subprocess.run(command, check=True, capture_output=True)


@pytest.fixture
def archive(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """One tone dictation per format (distinct texts), a DS2 stand-in and non-audio files."""
    root = tmp_path / "archive"
    texts = {}
    for index, (extension, args) in enumerate(ENCODINGS.items()):
        wav = tmp_path / "wav" / f"{extension}.wav"
        texts[f"ward/{extension} dictation.{extension}"] = f"case {index}. stable {extension}."
        write_tone_wav(wav, texts[f"ward/{extension} dictation.{extension}"])
        (root / "ward").mkdir(parents=True, exist_ok=True)
        encode(wav, root / "ward" / f"{extension} dictation.{extension}", args)
    # DS2 (DSS Pro) starts with these bytes; the bundled ffmpeg has no DS2 demuxer.
    (root / "ward" / "olympus.ds2").write_bytes(b"\x03ds2" + bytes(range(256)) * 8)
    for name in NOT_AUDIO:
        (root / name).write_bytes(b"{}\n" if name.endswith(".json") else b"\xff\xd8\xff...")
    age_files(root)
    return root, texts


@pytest.mark.slow
def test_every_file_is_transcribed_failed_with_a_reason_or_ignored_as_not_audio(
    archive: tuple[Path, dict[str, str]], tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    root, texts = archive
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(tone_devserver(), database, **prefect_api)

    finished = medasr.run("run", str(root), "-l", "en-IN")

    assert finished.returncode == 1, finished.describe()  # the DS2 file failed
    rows = {Path(r["source_uri"]).relative_to(root).as_posix(): r for r in items(database)}
    transcribed = {name: r["text"] for name, r in rows.items() if r["status"] == "done"}
    assert transcribed == texts, finished.describe()
    ds2 = rows["ward/olympus.ds2"]
    assert (ds2["status"], ds2["error_kind"]) == ("failed", "unsupported_format")
    assert "DS2" in ds2["error_message"]
    assert "vendor's software" in ds2["error_message"]
    assert set(rows) == {*texts, "ward/olympus.ds2"}  # nothing else registered
    assert "│ not audio ignored" in finished.stdout, finished.describe()
    summary = finished.summary()
    assert summary["not_audio_ignored"] == str(len(NOT_AUDIO)), finished.describe()
    assert "notes.txt" in finished.output  # the log names what it ignored


def test_a_file_of_an_unlisted_extension_named_directly_is_transcribed(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    wav = tmp_path / "in.wav"
    write_tone_wav(wav, "case one. aiff named directly.")
    recording = tmp_path / "src" / "dictation.aiff"
    recording.parent.mkdir()
    encode(wav, recording, ENCODINGS["aiff"])
    age_files(recording.parent)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(tone_devserver(), database, **prefect_api)

    finished = medasr.run("run", str(recording), "-l", "en-IN")

    assert finished.returncode == 0, finished.describe()
    assert [r["text"] for r in items(database)] == ["case one. aiff named directly."]


def test_a_dss_dictation_is_decoded_and_transcribed(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    # Olympus/Philips DSS (SP mode), the hospital recorders' format, built byte by byte
    # (the bundled ffmpeg decodes it but cannot write it): 5 s of noise-like audio.
    root = tmp_path / "archive"
    recording = write_dss(root / "ward" / "dr smith 0412.dss", seconds=5.0, seed=4)
    age_files(root)
    server = tone_devserver(engine="default")  # not a tone text: invented words come back
    database = f"sqlite:///{tmp_path / 'medasr.db'}"

    finished = medasr_for(server, database, **prefect_api).run("run", str(root), "-l", "en-IN")

    assert finished.returncode in (0, 1), finished.describe()  # 1: held for review
    [row] = items(database)
    assert row["source_uri"] == str(recording)
    assert row["status"] in ("done", "needs_review"), finished.describe()
    assert row["error_kind"] is None, finished.describe()
    assert row["text"], finished.describe()
    written_ms = dss_seconds(frames=dss_frames_for(seconds=5.0)) * 1000
    assert abs(row["duration_ms"] - written_ms) < 50, (row["duration_ms"], written_ms)
    sent = server.ledger.entries()
    assert [entry.status for entry in sent] == [200], finished.describe()
    assert abs(sent[0].bytes - (44 + written_ms * 32)) < 32 * 50  # 16 kHz mono s16 WAV
    assert finished.summary().get("not_audio_ignored", "0") == "0", finished.describe()
